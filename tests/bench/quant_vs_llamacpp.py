#!/usr/bin/env python3
"""The quantized schemes against llama.cpp on the same bf16 weights: tessera's
A16W8 and DA8W8 against llama.cpp's Q8_0, A16W4 (g128) against its Q4_0,
prefill (512 tokens) and decode (128 tokens) with the same thread count,
repeats interleaved, medians reported with ratios and each decode's fraction
of the memory roofline (read bandwidth measured in the same run over the
weight bytes one token reads).

Inputs come from scripts/make_hf_models.py --llama-cpp (the bf16 directories,
or with --peers-only llama.cpp's BF16 GGUFs, and llama.cpp's Q8_0/Q4_0 of
them); the tessera checkpoints are written here by `tessera quantize` when
missing.

  python tests/bench/quant_vs_llamacpp.py --llama-bench /path/to/llama-bench [--threads 2] [--repeats 3]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess

from safetensors import safe_open

from cpu_vs_llamacpp import add_common_arguments, decode_bytes_per_token, llama_bench, prompt_of, read_bandwidth, tessera

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ("smollm2-135m", "qwen2.5-coder-0.5b")
PAIRS = (("a16w8", "q8_0"), ("da8w8", "q8_0"), ("a16w4", "q4_0"))


def source(hf_root, model):
    """The bf16 weights both sides quantize: the Hugging Face directory, or
    where it was not made (it needs torch), llama.cpp's BF16 GGUF of the same
    weights, which tessera reads as well."""
    directory = hf_root / f"{model}-bf16"
    return directory if (directory / "model.safetensors").exists() else hf_root / f"{model}-bf16.gguf"


def checkpoint(binary, hf_root, model, scheme):
    out = hf_root / f"{model}-{scheme}"
    if not (out / "model.safetensors").exists():
        subprocess.run([binary, "quantize", "-m", source(hf_root, model), "--scheme", scheme, "-o", out], check=True,
                       capture_output=True)
    return out


def tessera_bytes_per_token(directory):
    """Bytes one decode step reads: every matrix but the embedding table (the
    quantized checkpoints carry their own output head)."""
    total = 0
    with safe_open(directory / "model.safetensors", framework="numpy") as f:
        for name in f.keys():
            t = f.get_slice(name)
            shape = t.get_shape()
            if len(shape) == 2 and "embed_tokens" not in name:
                total += int(shape[0]) * int(shape[1]) * {"I8": 1, "U8": 1, "F32": 4, "BF16": 2, "F16": 2}[t.get_dtype()]
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(ap)
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--schemes", nargs="*", default=[s for s, _ in PAIRS])
    ap.add_argument("--model-dir", default=os.environ.get("TESSERA_MODEL_DIR", str(pathlib.Path.home() / ".cache/tessera/models")))
    args = ap.parse_args()
    hf_root = pathlib.Path(args.model_dir) / "hf"
    cases = []
    for model in args.models:
        for scheme, peer in [p for p in PAIRS if p[0] in args.schemes]:
            cases.append((model, scheme, peer, checkpoint(args.binary, hf_root, model, scheme),
                          hf_root / f"{model}-{peer}.gguf"))
    prompts = {model: prompt_of(args.binary, str(source(hf_root, model)), args.prefill)
               for model in args.models}
    runs = {(m, s): {"tp": [], "td": [], "lp": [], "ld": []} for m, s, *_ in cases}
    bandwidth = []
    for repeat in range(args.repeats):
        bandwidth.append(read_bandwidth(args.kernel_bench))
        for i, (model, scheme, peer, ours, theirs) in enumerate(cases):
            order = ["tessera", "llama.cpp"] if (repeat + i) % 2 == 0 else ["llama.cpp", "tessera"]
            for who in order:
                r = runs[(model, scheme)]
                if who == "tessera":
                    p, d = tessera(args.binary, str(ours), prompts[model], args.threads, args.decode)
                    r["tp"].append(p)
                    r["td"].append(d)
                else:
                    p, d = llama_bench(args.llama_bench, str(theirs), args.threads, args.prefill, args.decode)
                    r["lp"].append(p)
                    r["ld"].append(d)
    bw = statistics.median(bandwidth)
    print(f"read bandwidth ({args.threads} threads): {bw / 1e9:.1f} GB/s (median of {len(bandwidth)}: "
          f"{', '.join(f'{b / 1e9:.1f}' for b in bandwidth)})")
    print(f"| model | tessera / llama.cpp | prefill {args.prefill} tok/s | decode tok/s | decode roofline fraction |")
    print("|---|---|---|---|---|")
    for model, scheme, peer, ours, theirs in cases:
        r = {k: statistics.median(v) for k, v in runs[(model, scheme)].items()}
        ours_roof = bw / tessera_bytes_per_token(ours)
        theirs_roof = bw / decode_bytes_per_token(str(theirs))
        print(f"| {model} | {scheme} / {peer} | {r['tp']:.0f} / {r['lp']:.0f} ({r['tp'] / r['lp']:.2f}x) | "
              f"{r['td']:.1f} / {r['ld']:.1f} ({r['td'] / r['ld']:.2f}x) | "
              f"{100 * r['td'] / ours_roof:.0f}% / {100 * r['ld'] / theirs_roof:.0f}% |")
    print("raw:", json.dumps({f"{m}/{s}": v for (m, s), v in runs.items()}))


if __name__ == "__main__":
    main()
