#!/usr/bin/env python3
"""Context-parallel prefill against one rank, in the same run: `tessera
serve` with --ranks context-parallel ranks of one thread each, and with one
rank of one thread, timing the prefill of one long prompt.

Each request is a --prompt-tokens prompt (token ids, its first token varied
per request so no cached prefix is reused) with max_tokens 1, so its time
is the prefill's plus one sampled token. The two servers run alternately,
--runs times each; medians are reported with the ratio one rank / CP (the
speed-up). Both servers take the prompt in steps of --chunk tokens.

A short request to each server first pages the weights in.

Usage:
  python load_tests/context_parallel.py --model ~/.cache/tessera/models/SmolLM2-135M-Instruct.Q4_1.gguf
"""
import argparse
import json
import pathlib
import statistics
import tempfile
import time
import urllib.request

from serve_process import start_serve

ROOT = pathlib.Path(__file__).resolve().parents[1]
TEXT = ("The lighthouse keeper climbed the spiral stairs each evening, counting the steps, checking the lamp, "
        "and writing the weather into a book that nobody else would ever read. ")


def start(binary, model, ranks, chunk, log_dir):
    parallel = f"parallel: {{context: {ranks}}}" if ranks > 1 else ""
    return start_serve(binary, f"""
server: {{host: 127.0.0.1}}
{parallel}
models:
  - name: m
    path: "{model}"
    threads: 1
    kv_cache: {{budget_mb: 1024}}
    scheduler: {{max_sequences: 4, max_batch_tokens: {chunk}, prefill_chunk: {chunk}}}
""", log_dir, f"cp{ranks}")


def post(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=1200) as r:
        return json.loads(r.read())


def prompt_ids(base, n_tokens):
    ids = post(base, "/tokenize", {"model": "m", "prompt": TEXT * (n_tokens // 20 + 1)})["tokens"]
    if len(ids) < n_tokens:
        raise RuntimeError(f"the text gives {len(ids)} tokens, fewer than {n_tokens}")
    return ids[:n_tokens]


def prefill_seconds(base, ids, variant):
    # A different first token each time: no prefix of an earlier request matches.
    prompt = [ids[variant % len(ids)]] + ids[1:]
    started = time.perf_counter()
    body = post(base, "/v1/completions", {"model": "m", "prompt": prompt, "max_tokens": 1, "temperature": 0})
    elapsed = time.perf_counter() - started
    return elapsed, body["choices"][0]["text"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--binary", default=str(ROOT / "build" / "tessera"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=4096)
    ap.add_argument("--chunk", type=int, default=2048)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    log_dir = tempfile.mkdtemp(prefix="tessera-cp-")
    servers = {
        "one rank": start(args.binary, args.model, 1, args.chunk, log_dir),
        f"CP={args.ranks}": start(args.binary, args.model, args.ranks, args.chunk, log_dir),
    }
    times = {name: [] for name in servers}
    texts = {name: [] for name in servers}
    try:
        ids = prompt_ids(next(iter(servers.values()))[1], args.prompt_tokens)
        for _, base in servers.values():  # warm-up: the weights paged in
            prefill_seconds(base, ids[:64], 0)
        for run in range(args.runs):
            for name, (_, base) in servers.items():
                seconds, text = prefill_seconds(base, ids, run + 1)
                times[name].append(seconds)
                texts[name].append(text)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(60)
    print(f"model {pathlib.Path(args.model).name}, prompt of {args.prompt_tokens} tokens in steps of {args.chunk}, "
          f"{args.runs} runs, one thread a rank (logs in {log_dir})")
    for name, values in times.items():
        print(f"  {name:>9}: {statistics.median(values):7.2f} s, {args.prompt_tokens / statistics.median(values):7.1f} tok/s "
              "(runs: " + ", ".join(f"{v:.2f}" for v in values) + ")")
    one, cp = (statistics.median(v) for v in times.values())
    same = len({tuple(t) for t in texts.values()}) == 1
    print(f"  speed-up one rank / CP: {one / cp:.2f}; same first tokens: {same}")


if __name__ == "__main__":
    main()
