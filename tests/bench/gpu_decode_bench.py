"""Batch-1 decode on a GPU: tokens a second (median of several runs) and the
weight bandwidth they imply against the device's peak.

    python3 tests/bench/gpu_decode_bench.py --tessera build/tessera --device cuda:0 \\
        --peak-gbs 3350 MODEL.gguf [MODEL.gguf ...]

Weights read per token come from `tessera generate --profile` (the sum over
the linear layers of the bytes each multiplies); tok/s from runs without
the profile, whose per-step synchronisation would slow them.

With --llama-bench PATH, llama.cpp's llama-bench (a CUDA build) decodes the
same number of tokens on the same model and GPU in the same run (-p 0,
every layer on the GPU, --runs repetitions, its mean tok/s), and the ratio
is reported.
"""
import argparse
import json
import re
import statistics
import subprocess


def generate(args, model, profile):
    cmd = [args.tessera, "generate", "-m", model, "-p", args.prompt, "-n", str(args.tokens), "--temperature", "0",
           "--ignore-eos", "--device", args.device] + (["--profile"] if profile else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return out.stdout + out.stderr


def weights_per_token_mb(text):
    decode = text[text.index("decode profile"):]
    return float(re.search(r"weights read: ([0-9.]+) MB a pass", decode).group(1))


def llama_bench_tok_s(args, model):
    cmd = [args.llama_bench, "-m", model, "-p", "0", "-n", str(args.tokens), "-ngl", "99", "-r", str(args.runs), "-o", "json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    return json.loads(out.stdout)[0]["avg_ts"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+")
    p.add_argument("--tessera", default="build/tessera")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--prompt", default="Write a story about a dragon")
    p.add_argument("--peak-gbs", type=float, default=3350.0, help="the device's memory bandwidth (H100 SXM: 3350)")
    p.add_argument("--llama-bench", help="llama.cpp's llama-bench (CUDA build), the peer on the same GPU")
    args = p.parse_args()
    for model in args.models:
        mb = weights_per_token_mb(generate(args, model, True))
        rates = []
        for _ in range(args.runs):
            text = generate(args, model, False)
            rates.append(float(re.search(r"generated: \d+ tokens in [0-9.]+ s \(([0-9.]+) tok/s\)", text).group(1)))
        tps = statistics.median(rates)
        gbs = mb * tps / 1000.0
        record = {"model": model.split("/")[-1], "device": args.device, "decode_tok_s": tps, "runs": rates,
                  "weights_mb_per_token": mb, "weight_gb_s": round(gbs, 1), "fraction_of_peak": round(gbs / args.peak_gbs, 3)}
        if args.llama_bench:
            peer = llama_bench_tok_s(args, model)
            record.update({"llama_cpp_tok_s": round(peer, 1), "ratio_to_llama_cpp": round(tps / peer, 3)})
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
