#!/usr/bin/env python3
"""Single-stream decode and 512-token prefill throughput of tessera and of
llama.cpp (through llama-cpp-python) on the same GGUF files, same thread
count, measured in the same run, repeats interleaved in rotating order,
medians reported.
Needs llama-cpp-python in the running Python (see
scripts/gen_tokenizer_goldens.py for the set-up). --compare BINARY adds
another tessera build (an earlier commit, say) measured the same way.

  python tests/bench/bench_vs_llamacpp.py [--threads 2] [--decode 64] [--repeats 3] [--compare OLD_BINARY]
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import time

import llama_cpp

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = {"SmolLM2-135M Q4_1": "SmolLM2-135M-Instruct.Q4_1.gguf", "Gemma-3-270M Q4_K_M": "gemma-3-270m-q4_k_m.gguf",
          "Qwen2.5-Coder-0.5B Q4_K_M": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"}
TEXT = (ROOT / "tests" / "data" / "perplexity" / "gpl-3.0.txt").read_text()


def llama_cpp_numbers(path, threads, n_prefill, n_decode):
    llm = llama_cpp.Llama(str(path), n_ctx=n_prefill + n_decode + 8, n_batch=n_prefill, n_ubatch=n_prefill,
                          n_threads=threads, n_threads_batch=threads, verbose=False)
    prompt = llm.tokenize(TEXT.encode())[:n_prefill]
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(prompt)
    prefill = n_prefill / (time.perf_counter() - t0)
    llm.reset()
    llm.eval(prompt[:8])
    tok = prompt[8]
    t0 = time.perf_counter()
    for _ in range(n_decode):
        llm.eval([tok])
    decode = n_decode / (time.perf_counter() - t0)
    return prefill, decode


def tessera_numbers(binary, path, threads, n_prefill, n_decode):
    llm = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    prompt = llm.detokenize(llm.tokenize(TEXT.encode(), add_bos=False)[:n_prefill - 1]).decode(errors="ignore")
    out = subprocess.run([binary, "generate", "-m", path, "-p", prompt, "-n", "1", "--temperature", "0", "-t",
                          str(threads), "--batch", str(n_prefill)], capture_output=True, check=True)
    prefill_match = re.search(rb"prompt: \d+ tokens in [0-9.]+ s \(([0-9.]+) tok/s\)", out.stderr)
    gen = subprocess.run([binary, "generate", "-m", path, "-p", "Once upon a time", "-n", str(n_decode + 1), "--temperature",
                          "0", "--ignore-eos", "-t", str(threads)], capture_output=True, check=True)
    decode_match = re.search(rb"generated: \d+ tokens in [0-9.]+ s \(([0-9.]+) tok/s\)", gen.stderr)
    return float(prefill_match.group(1)), float(decode_match.group(1))


def median(values):
    return statistics.median(values)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prefill", type=int, default=512)
    ap.add_argument("--decode", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--binary", default=str(ROOT / "build" / "tessera"))
    ap.add_argument("--compare", help="another tessera binary measured alongside")
    ap.add_argument("--model-dir", default=os.environ.get("TESSERA_MODEL_DIR", str(pathlib.Path.home() / ".cache/tessera/models")))
    args = ap.parse_args()
    binaries = {"tessera": args.binary}
    if args.compare:
        binaries["compared"] = args.compare
    rows = []
    for name, file in MODELS.items():
        path = str(pathlib.Path(args.model_dir) / file)
        runs = {label: [] for label in [*binaries, "llama.cpp"]}
        for repeat in range(args.repeats):
            # The order rotates each repeat, so no build always runs first.
            order = [*binaries, "llama.cpp"]
            order = order[repeat % len(order):] + order[:repeat % len(order)]
            for label in order:
                if label == "llama.cpp":
                    runs[label].append(llama_cpp_numbers(path, args.threads, args.prefill, args.decode))
                else:
                    runs[label].append(tessera_numbers(binaries[label], path, args.threads, args.prefill, args.decode))
        for label in binaries:
            rows.append({"model": name, "binary": label,
                         "prefill": median([r[0] for r in runs[label]]), "decode": median([r[1] for r in runs[label]]),
                         "llama_cpp_prefill": median([r[0] for r in runs["llama.cpp"]]),
                         "llama_cpp_decode": median([r[1] for r in runs["llama.cpp"]]), "runs": runs[label],
                         "llama_cpp_runs": runs["llama.cpp"]})
    print(f"threads={args.threads}, prefill {args.prefill} tokens, decode {args.decode} tokens, median of {args.repeats} "
          f"interleaved runs; llama-cpp-python {llama_cpp.__version__}; binaries {binaries}")
    print("| model | binary | prefill tok/s (tessera / llama.cpp / ratio) | decode tok/s (tessera / llama.cpp / ratio) |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['binary']} | {r['prefill']:.1f} / {r['llama_cpp_prefill']:.1f} / "
              f"{r['prefill'] / r['llama_cpp_prefill']:.2f} | {r['decode']:.1f} / "
              f"{r['llama_cpp_decode']:.1f} / {r['decode'] / r['llama_cpp_decode']:.2f} |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
