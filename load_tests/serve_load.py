#!/usr/bin/env python3
"""Serving throughput and latency: the same OpenAI-API workload against
`tessera serve` and llama.cpp's server on the same GGUF file and thread
count, in the same run. The peer is llama.cpp's own `llama-server` with
eight parallel slots (--llama-server PATH), or else llama-cpp-python's
`llama_cpp.server`, which runs one request at a time (its default of cutting
a running request off when another arrives is turned off).

With --busy-neighbour every workload runs twice, the second time beside a
process that keeps one core busy, and the share of the quiet throughput
each server keeps is reported.

C concurrent clients share R streaming completions of exactly --max-tokens
tokens each (end-of-sequence is banned through logit_bias on both servers,
and every stream is checked to carry that many tokens) over varied prompts,
greedy. Reported per server and concurrency: wall time, generated tokens per
second over the run, time to first token (mean, p95) and end-to-end latency
(mean); then tessera's ratios.

Usage:
  python load_tests/serve_load.py --model ~/.cache/tessera/models/SmolLM2-135M-Instruct.Q4_1.gguf \\
      --llama-server /path/to/llama-server [--concurrency 1 4 8] [--busy-neighbour]
"""
import argparse
import concurrent.futures
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

import openai

ROOT = pathlib.Path(__file__).resolve().parents[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url, proc, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            # /health answers 200 only once the model is loaded, on both servers.
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server did not become ready")


def start_tessera(args, port):
    argv = [str(args.tessera_bin), "serve", "--model", str(args.model), "--served-model-name", "m", "--host", "127.0.0.1",
            "--port", str(port), "--grpc-port", "0", "--threads", str(args.threads)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def start_llama_cpp(args, port):
    argv = [args.peer_python, "-m", "llama_cpp.server", "--model", str(args.model), "--model_alias", "m", "--host",
            "127.0.0.1", "--port", str(port), "--n_threads", str(args.threads), "--n_threads_batch", str(args.threads),
            "--n_ctx", "4096", "--interrupt_requests", "False"]  # by default a new request cuts the running one off
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def start_llama_server(args, port):
    argv = [args.llama_server, "-m", str(args.model), "-a", "m", "--host", "127.0.0.1", "--port", str(port), "-t",
            str(args.threads), "-tb", str(args.threads), "-np", "8", "-c", "16384"]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def busy_neighbour():
    """A process that keeps one core busy until terminated."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def eos_id(args):
    from gguf import GGUFReader
    field = GGUFReader(str(args.model)).fields["tokenizer.ggml.eos_token_id"]
    return int(field.parts[field.data[0]][0])


def one_request(client, prompt, args, banned):
    t0 = time.perf_counter()
    first = None
    pieces = 0
    stream = client.completions.create(model="m", prompt=prompt, max_tokens=args.max_tokens, temperature=0, stream=True,
                                       logit_bias={str(banned): -100})
    for chunk in stream:
        if chunk.choices and chunk.choices[0].text:
            pieces += 1
            if first is None:
                first = time.perf_counter() - t0
    if pieces != args.max_tokens:
        raise RuntimeError(f"a request streamed {pieces} tokens instead of {args.max_tokens}")
    return first or 0.0, time.perf_counter() - t0


def run_workload(url, args, concurrency, banned):
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=600)
    prompts = [f"Request {i}: write about topic number {i} in detail," + " please" * (i % 5) for i in range(args.requests)]
    one_request(client, "warm up", args, banned)
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(lambda p: one_request(client, p, args, banned), prompts))
    wall = time.perf_counter() - t0
    ttft = sorted(r[0] for r in results)
    return {
        "wall_s": wall,
        "tok_per_s": args.requests * args.max_tokens / wall,
        "ttft_mean_s": statistics.mean(ttft),
        "ttft_p95_s": ttft[min(len(ttft) - 1, int(0.95 * len(ttft)))],
        "e2e_mean_s": statistics.mean(r[1] for r in results),
    }


def measure(start, args, banned):
    port = free_port()
    proc = start(args, port)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc)
        results = {c: run_workload(url, args, c, banned) for c in args.concurrency}
        if args.busy_neighbour:
            neighbour = busy_neighbour()
            try:
                for c in args.concurrency:
                    results[f"{c} busy"] = run_workload(url, args, c, banned)
            finally:
                neighbour.terminate()
                neighbour.wait(10)
        return results
    finally:
        proc.terminate()
        proc.wait(60)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=pathlib.Path, required=True)
    p.add_argument("--tessera-bin", type=pathlib.Path, default=ROOT / "build" / "tessera")
    p.add_argument("--peer-python", default=os.environ.get("LLAMA_CPP_PYTHON", sys.executable))
    p.add_argument("--llama-server", help="llama.cpp's llama-server binary (the peer, with 8 slots)")
    p.add_argument("--busy-neighbour", action="store_true", help="repeat each workload beside a busy process")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--requests", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    args = p.parse_args()
    banned = eos_id(args)
    peer = start_llama_server if args.llama_server else start_llama_cpp
    servers = {"tessera": measure(start_tessera, args, banned), "llama.cpp": measure(peer, args, banned)}
    print(f"{args.model.name}: {args.requests} requests x {args.max_tokens} tokens, {args.threads} threads")
    print(f"{'server':<10} {'conc':>7} {'wall s':>8} {'tok/s':>8} {'TTFT mean':>10} {'TTFT p95':>9} {'e2e mean':>9}")
    for name, by_c in servers.items():
        for c, r in by_c.items():
            print(f"{name:<10} {c:>7} {r['wall_s']:>8.2f} {r['tok_per_s']:>8.1f} {r['ttft_mean_s']:>10.3f} "
                  f"{r['ttft_p95_s']:>9.3f} {r['e2e_mean_s']:>9.2f}")
    for c in args.concurrency:
        t, l = servers["tessera"][c], servers["llama.cpp"][c]
        print(f"concurrency {c}: tessera/llama.cpp throughput {t['tok_per_s'] / l['tok_per_s']:.2f}x, "
              f"TTFT {t['ttft_mean_s'] / l['ttft_mean_s']:.2f}x")
        if args.busy_neighbour:
            kept = {name: by_c[f"{c} busy"]["tok_per_s"] / by_c[c]["tok_per_s"] for name, by_c in servers.items()}
            print(f"concurrency {c} beside a busy process: tessera keeps {100 * kept['tessera']:.0f}% of its quiet "
                  f"throughput, llama.cpp {100 * kept['llama.cpp']:.0f}%")


if __name__ == "__main__":
    main()
