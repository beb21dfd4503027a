#!/usr/bin/env python3
"""Tensor-parallel decode against one rank, in the same run: `tessera serve`
with the model split over two worker ranks of --threads-per-rank threads
each, and with one rank of (ranks × threads) threads, on the same cores.

One streaming completion of --max-tokens tokens at a time (end-of-sequence
ignored, greedy); decode speed is the tokens after the first over the time
from the first to the last, so the prompt's prefill is left out. The two
servers run alternately, --runs times each; medians are reported with the
ratio TP / one rank. The layout (exact or all_reduce) is a flag.

Usage:
  python load_tests/tensor_parallel.py --model ~/.cache/tessera/models/SmolLM2-135M-Instruct.Q4_1.gguf
"""
import argparse
import pathlib
import statistics
import tempfile
import time

from serve_process import start_serve, streamed_completion

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROMPT = "Write a long story about a lighthouse keeper who finds a map in a bottle."


def start(binary, model, ranks, threads, layout, log_dir):
    return start_serve(binary, f"""
server: {{host: 127.0.0.1}}
parallel: {{tensor: {ranks}, layout: {layout}}}
models:
  - {{name: m, path: "{model}", threads: {threads}, scheduler: {{max_sequences: 4}}}}
""", log_dir, f"tp{ranks}")


def decode_speed(base, max_tokens):
    body = {"model": "m", "prompt": PROMPT, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
            "stream": True}
    stamps, text = [], []
    for event in streamed_completion(base, body):
        if event.get("choices") and event["choices"][0].get("text"):
            stamps.append(time.perf_counter())
            text.append(event["choices"][0]["text"])
    if len(stamps) < 2:
        raise RuntimeError("too few tokens streamed")
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]), "".join(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--binary", default=str(ROOT / "build" / "tessera"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--threads-per-rank", type=int, default=1)
    ap.add_argument("--layout", choices=["exact", "all_reduce"], default="exact")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    log_dir = tempfile.mkdtemp(prefix="tessera-tp-")
    servers = {
        "one rank": start(args.binary, args.model, 1, args.ranks * args.threads_per_rank, args.layout, log_dir),
        f"TP={args.ranks}": start(args.binary, args.model, args.ranks, args.threads_per_rank, args.layout, log_dir),
    }
    speeds = {name: [] for name in servers}
    texts = {}
    try:
        for name, (_, base) in servers.items():
            decode_speed(base, 8)  # warm-up
        for _ in range(args.runs):
            for name, (_, base) in servers.items():
                speed, text = decode_speed(base, args.max_tokens)
                speeds[name].append(speed)
                texts[name] = text
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(60)
    print(f"model {pathlib.Path(args.model).name}, layout {args.layout}, {args.max_tokens} tokens, "
          f"{args.runs} runs (logs in {log_dir})")
    for name, values in speeds.items():
        print(f"  {name:>9}: decode {statistics.median(values):7.1f} tok/s (runs: "
              + ", ".join(f"{v:.1f}" for v in values) + ")")
    one, tp = (statistics.median(v) for v in speeds.values())
    print(f"  TP / one rank: {tp / one:.2f}; same text: {len(set(texts.values())) == 1}")


if __name__ == "__main__":
    main()
