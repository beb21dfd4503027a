#!/usr/bin/env python3
"""Prefill (512 tokens) and decode (128 tokens) throughput of tessera and of
llama.cpp's llama-bench on the three real models, with the same thread
count, in one run: repeats interleaved, medians reported, with the ratios
and each decode's fraction of the memory roofline (the read bandwidth of
this machine, measured in the same run by tessera_kernel_bench, over the
weight bytes one token reads).

  python tests/bench/cpu_vs_llamacpp.py --llama-bench /path/to/llama-bench [--threads 2] [--repeats 3]
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys


ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import make_random_gguf as gguf_header  # noqa: E402
MODELS = {"SmolLM2-135M Q4_1": "SmolLM2-135M-Instruct.Q4_1.gguf", "Gemma-3-270M Q4_K_M": "gemma-3-270m-q4_k_m.gguf",
          "Qwen2.5-Coder-0.5B Q4_K_M": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"}
TEXT = (ROOT / "tests" / "data" / "perplexity" / "gpl-3.0.txt").read_text()


def decode_bytes_per_token(path):
    """Weight bytes one decode step reads: every tensor but the embedding
    table, which is read whole only when it is also the output matrix, and
    of a mixture-of-experts layer's stacked experts the share one token uses.
    Read with scripts/make_random_gguf.py's header reader, which knows every
    block type these files hold (MXFP4 included)."""
    entries, tensors = gguf_header.read_header(path)

    def value(key):
        if key not in entries:
            return None
        c = gguf_header.Cursor(entries[key])
        c.string()
        kind = c.u32()
        return c.string().decode() if kind == 8 else c.u32() if kind == 4 else None

    arch = value("general.architecture")
    used_share = (value(f"{arch}.expert_used_count") or 1) / (value(f"{arch}.expert_count") or 1)
    names = {name for name, _, _ in tensors}
    total = 0
    for name, dims, kind in tensors:
        if name == "token_embd.weight" and "output.weight" in names:
            continue
        if len(dims) >= 2:
            total += gguf_header.tensor_bytes(dims, kind) * (used_share if "_exps." in name else 1)
    return int(total)


def prompt_of(binary, path, n_tokens):
    """The longest word prefix of the text that tokenizes (with BOS) to at most n_tokens."""
    words = TEXT.split()

    def count(k):
        out = subprocess.run([binary, "tokenize", "-m", path, "--add-special", "-t", " ".join(words[:k])],
                             capture_output=True, check=True, text=True)
        return len(json.loads(out.stdout))

    lo, hi = 1, len(words)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(mid) <= n_tokens:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


def llama_bench(tool, path, threads, n_prefill, n_decode):
    out = subprocess.run([tool, "-m", path, "-t", str(threads), "-p", str(n_prefill), "-n", str(n_decode), "-r", "1",
                          "-o", "json"], capture_output=True, check=True, text=True)
    runs = json.loads(out.stdout)
    prefill = next(r["avg_ts"] for r in runs if r["n_prompt"] > 0)
    decode = next(r["avg_ts"] for r in runs if r["n_gen"] > 0)
    return prefill, decode


def tessera(binary, path, prompt, threads, n_decode):
    pre = subprocess.run([binary, "generate", "-m", path, "-p", prompt, "-n", "1", "--temperature", "0", "-t", str(threads),
                          "--batch", "512", "--warmup"], capture_output=True, check=True)
    prefill = float(re.search(rb"prompt: \d+ tokens in [0-9.]+ s \(([0-9.]+) tok/s\)", pre.stderr).group(1))
    gen = subprocess.run([binary, "generate", "-m", path, "-p", "Once upon a time", "-n", str(n_decode + 1), "--temperature",
                          "0", "--ignore-eos", "--warmup", "-t", str(threads)], capture_output=True, check=True)
    decode = float(re.search(rb"generated: \d+ tokens in [0-9.]+ s \(([0-9.]+) tok/s\)", gen.stderr).group(1))
    return prefill, decode


def read_bandwidth(kernel_bench):
    out = subprocess.run([kernel_bench, "--benchmark_filter=ReadBandwidth", "--benchmark_format=json"], capture_output=True,
                         check=True, text=True)
    return json.loads(out.stdout)["benchmarks"][0]["bytes_per_second"]


def add_common_arguments(ap):
    """The tools, thread count, token counts and repeats both llama.cpp comparisons take."""
    ap.add_argument("--llama-bench", default=os.environ.get("LLAMA_BENCH", "llama-bench"))
    ap.add_argument("--binary", default=str(ROOT / "build" / "tessera"))
    ap.add_argument("--kernel-bench", default=str(ROOT / "build" / "tests" / "tessera_kernel_bench"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prefill", type=int, default=512)
    ap.add_argument("--decode", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(ap)
    ap.add_argument("--model-dir", default=os.environ.get("TESSERA_MODEL_DIR", str(pathlib.Path.home() / ".cache/tessera/models")))
    ap.add_argument("--model", action="append", metavar="NAME=GGUF",
                    help="a GGUF both sides read, instead of the three real models (repeatable): e.g. the BF16 GGUF "
                         "of scripts/make_hf_models.py --peers-only")
    args = ap.parse_args()
    if args.model:
        paths = dict(m.split("=", 1) for m in args.model)
    else:
        paths = {name: str(pathlib.Path(args.model_dir) / file) for name, file in MODELS.items()}
    prompts = {name: prompt_of(args.binary, path, args.prefill) for name, path in paths.items()}
    runs = {name: {"tp": [], "td": [], "lp": [], "ld": []} for name in paths}
    bandwidth = []
    for repeat in range(args.repeats):
        bandwidth.append(read_bandwidth(args.kernel_bench))
        for i, (name, path) in enumerate(paths.items()):
            # Alternate which runs first, so neither always meets a warmer machine.
            order = ["tessera", "llama.cpp"] if (repeat + i) % 2 == 0 else ["llama.cpp", "tessera"]
            for who in order:
                if who == "tessera":
                    p, d = tessera(args.binary, path, prompts[name], args.threads, args.decode)
                    runs[name]["tp"].append(p)
                    runs[name]["td"].append(d)
                else:
                    p, d = llama_bench(args.llama_bench, path, args.threads, args.prefill, args.decode)
                    runs[name]["lp"].append(p)
                    runs[name]["ld"].append(d)
    print("raw:", json.dumps(runs), flush=True)
    bw = statistics.median(bandwidth)
    print(f"read bandwidth ({args.threads} threads): {bw / 1e9:.1f} GB/s (median of {len(bandwidth)}: "
          f"{', '.join(f'{b / 1e9:.1f}' for b in bandwidth)})")
    print(f"| model | prefill {args.prefill} tok/s tessera / llama.cpp | decode tok/s tessera / llama.cpp | "
          "decode roofline tok/s | roofline fraction tessera / llama.cpp |")
    print("|---|---|---|---|---|")
    for name, path in paths.items():
        r = {k: statistics.median(v) for k, v in runs[name].items()}
        roof = bw / decode_bytes_per_token(path)
        print(f"| {name} | {r['tp']:.0f} / {r['lp']:.0f} ({r['tp'] / r['lp']:.2f}x) | {r['td']:.1f} / {r['ld']:.1f} "
              f"({r['td'] / r['ld']:.2f}x) | {roof:.0f} | {100 * r['td'] / roof:.0f}% / {100 * r['ld'] / roof:.0f}% |")


if __name__ == "__main__":
    main()
