#!/usr/bin/env python3
"""Grammar compilation must not stall the model's other clients: four
clients send the worst grammars in a loop (a 389 KB GBNF of 16,000
alternatives, an anyOf of 3,000 objects, a chain of 32,000 nullable rules,
each as a structured-output request), while one client times plain 8-token
completions. Reported: the plain completion's p50 and p99 latency alone
and under that load, their ratio (the target is p99 within 2x), and what
the hostile requests were answered (400 over budget, 429 busy, 200).

Usage:
  python load_tests/grammar_stall.py --model ~/.cache/tessera/models/SmolLM2-135M-Instruct.Q4_1.gguf
"""
import argparse
import json
import multiprocessing
import os
import pathlib
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from serve_process import start_serve  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def b36(n):
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, d = divmod(n, 36)
        out = digits[d] + out
        if n == 0:
            return out


def worst_grammars():
    """The three shapes that stalled the engine, each within the 512 KiB
    grammar limit: 16,000 alternatives (389 KB of GBNF), an anyOf of 3,000
    objects, and a chain of 32,000 nullable rules."""
    gbnf = "root ::= " + " | ".join(f'"w{i:05d}" [a-z] [0-9]' for i in range(16000)) + "\n"
    any_of = {"anyOf": [{"type": "object", "properties": {f"key{i}": {"type": "integer"}}, "required": [f"key{i}"]}
                        for i in range(3000)]}
    chain = "root::=q0\"x\"\n" + "".join(f'q{b36(i)}::=q{b36(i + 1)}|""\n' for i in range(31999)) + f'q{b36(31999)}::=""\n'
    return [{"guided_grammar": gbnf}, {"guided_json": any_of}, {"guided_grammar": chain}]


def post(base, body, timeout=120):
    """`body`: a dict, or bytes already encoded (the hostile loops encode
    theirs once, so the load generator spends its CPU on sending)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(base + "/v1/completions", data=data,
                                 headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code


def plain_latencies(base, count):
    out = []
    for i in range(count):
        t0 = time.perf_counter()
        status = post(base, {"model": "m", "prompt": f"Plain request {i}: the sky is", "max_tokens": 8,
                             "ignore_eos": True, "temperature": 0})
        assert status == 200, status
        out.append(time.perf_counter() - t0)
    return out


def hostile_loop(base, grammar, stop, answers):
    """One hostile client, in a process of its own at the lowest priority:
    on this one machine it stands for clients elsewhere, so the CPU the
    generator itself burns (encoding and sending half-megabyte bodies in
    Python) is not counted against the server."""
    os.nice(19)
    body = json.dumps({"model": "m", "prompt": "x", "max_tokens": 4, **grammar}).encode()
    while not stop.is_set():
        status = post(base, body)
        with answers.get_lock():
            answers[{200: 0, 400: 1, 429: 2}.get(status, 3)] += 1


def p99(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=str(ROOT / "build" / "tessera"))
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--requests", type=int, default=40, help="plain completions timed in each phase")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start_serve(args.binary, f"""
server: {{host: 127.0.0.1}}
models:
  - name: m
    path: "{args.model}"
    threads: {args.threads}
    kv_cache: {{budget_mb: 64}}
""", tmp, "grammar-stall")
        try:
            plain_latencies(base, 3)  # warm up
            alone = plain_latencies(base, args.requests)
            stop = multiprocessing.Event()
            answers = multiprocessing.Array("l", 4)
            clients = [multiprocessing.Process(target=hostile_loop, args=(base, g, stop, answers))
                       for g in worst_grammars() + worst_grammars()[:1]]
            for c in clients:
                c.start()
            time.sleep(1.0)
            loaded = plain_latencies(base, args.requests)
            stop.set()
            for c in clients:
                c.join()
        finally:
            proc.terminate()
            proc.wait()
    print(f"plain 8-token completion, {args.requests} requests per phase, {args.threads} threads")
    print(f"  alone:      p50 {statistics.median(alone) * 1000:.1f} ms, p99 {p99(alone) * 1000:.1f} ms")
    print(f"  under load: p50 {statistics.median(loaded) * 1000:.1f} ms, p99 {p99(loaded) * 1000:.1f} ms")
    print(f"  p99 ratio: {p99(loaded) / p99(alone):.2f}x (target <= 2x)")
    print(f"  hostile requests answered: 200: {answers[0]}, 400: {answers[1]}, 429: {answers[2]}, other: {answers[3]}")


if __name__ == "__main__":
    main()
