"""End-to-end serving throughput on one device: `tessera serve` with the
model on --device, then --requests completions of exactly --max-tokens
tokens (ignore_eos, greedy, varied prompts) at each concurrency, one
process, standard library only.

    python3 tests/bench/gpu_serve_bench.py --tessera build/tessera --device cuda:0 \\
        --concurrency 1 8 32 MODEL.gguf

Prints a JSON line per concurrency: wall time, generated tokens a second
over the run, time to first token (mean, p95; streamed requests) and
end-to-end latency, and the device memory /metrics reports afterwards.
Every answer must be a 200 carrying --max-tokens tokens, or the run fails.
"""
import argparse
import concurrent.futures
import json
import pathlib
import re
import statistics
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "load_tests"))
from serve_process import start_serve, streamed_completion  # noqa: E402


def one_request(url, prompt, max_tokens):
    body = {"model": "m", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
            "stream": True, "stream_options": {"include_usage": True}}
    t0 = time.perf_counter()
    first, generated = None, None
    for chunk in streamed_completion(url, body):
        if chunk.get("choices") and chunk["choices"][0].get("text") and first is None:
            first = time.perf_counter() - t0
        if chunk.get("usage"):
            generated = chunk["usage"]["completion_tokens"]
    if generated != max_tokens:
        raise RuntimeError(f"a request generated {generated} tokens instead of {max_tokens}")
    return first or 0.0, time.perf_counter() - t0


def workload(url, args, concurrency):
    prompts = [f"Request {i}: write about topic number {i} in detail," + " please" * (i % 5)
               for i in range(args.requests)]
    one_request(url, "warm up", args.max_tokens)
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(lambda p: one_request(url, p, args.max_tokens), prompts))
    wall = time.perf_counter() - t0
    ttft = sorted(r[0] for r in results)
    return {"concurrency": concurrency, "requests": args.requests, "max_tokens": args.max_tokens,
            "wall_s": round(wall, 3), "tok_per_s": round(args.requests * args.max_tokens / wall, 1),
            "ttft_mean_s": round(statistics.mean(ttft), 4),
            "ttft_p95_s": round(ttft[min(len(ttft) - 1, int(0.95 * len(ttft)))], 4),
            "e2e_mean_s": round(statistics.mean(r[1] for r in results), 3)}


def device_memory(url):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return {m.group(1): float(m.group(2)) for m in
            re.finditer(r"^(tessera:device_memory_\w+_bytes)\{[^}]*\} ([0-9.e+]+)$", text, re.M)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--tessera", default="build/tessera")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--threads", type=int, default=4, help="CPU threads of the model (host-side work)")
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    args = p.parse_args()
    config = (f"models:\n  - name: m\n    path: {pathlib.Path(args.model).resolve()}\n    device: {args.device}\n"
              f"    threads: {args.threads}\n")
    with tempfile.TemporaryDirectory() as logs:
        proc, url = start_serve(args.tessera, config, logs, "serve")
        try:
            for c in args.concurrency:
                record = {"model": pathlib.Path(args.model).name, "device": args.device, **workload(url, args, c)}
                print(json.dumps(record), flush=True)
            print(json.dumps({"device_memory": device_memory(url)}), flush=True)
        finally:
            proc.terminate()
            proc.wait(60)


if __name__ == "__main__":
    main()
