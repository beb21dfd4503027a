#!/usr/bin/env python3
"""Perplexity of the quantized schemes (and of the int8 KV cache) against the
bf16 model they came from, and of llama.cpp's Q8_0/Q4_0 against its own bf16 of the same weights
(llama-perplexity), on tests/data/perplexity (ctx 512). Each side is compared
with its own bf16 run, so the two tokenizers' small differences cancel.

Inputs: scripts/make_hf_models.py --llama-cpp. AWQ calibrates on
tests/data/calibration/apache-2.0.txt.

With --from-gguf the sources are the fetched GGUF files instead, quantized
straight from the file (its blocks dequantized first) and compared with the
GGUF itself; llama.cpp's peers are then its requantization of the same file
(llama-quantize --allow-requantize, given by --llama-quantize).

  python tests/bench/quant_accuracy.py [--llama-perplexity PATH] [--models smollm2-135m ...]
  python tests/bench/quant_accuracy.py --from-gguf [--llama-perplexity PATH --llama-quantize PATH]

With --llama-bf16 (no torch needed) both sides start from one file: llama.cpp's
BF16 requantization of the fetched GGUF. Tessera quantizes that file; llama.cpp
quantizes it to Q8_0/Q4_0; the peers are measured by llama-perplexity and by
tessera's own perplexity (same tokenizer and evaluator as tessera's rows).

  python tests/bench/quant_accuracy.py --llama-bf16 --llama-perplexity PATH --llama-quantize PATH
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEXT = ROOT / "tests" / "data" / "perplexity" / "gpl-3.0.txt"
CALIB = ROOT / "tests" / "data" / "calibration" / "apache-2.0.txt"
MODELS = ("smollm2-135m", "qwen2.5-coder-0.5b")
SCHEMES = (("a16w8", "q8_0"), ("da8w8", "q8_0"), ("a16w4", "q4_0"))
GGUF_FILES = {"smollm2-135m": "SmolLM2-135M-Instruct.Q4_1.gguf", "qwen2.5-coder-0.5b": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"}
PPL = re.compile(rb"Final estimate: PPL = ([0-9.]+)")


def tessera_ppl(binary, model, threads, *extra):
    out = subprocess.run([binary, "perplexity", "-m", model, "-f", TEXT, "-c", "512", "-t", str(threads), *extra],
                         capture_output=True, check=True)
    return float(PPL.search(out.stdout + out.stderr).group(1))


def llama_ppl(tool, model, threads):
    out = subprocess.run([tool, "-m", model, "-f", TEXT, "-c", "512", "-t", str(threads)], capture_output=True, check=True)
    return float(PPL.search(out.stdout + out.stderr).group(1))


def llama_bf16_source(args, model, work):
    """llama.cpp's BF16 requantization of the fetched GGUF: the one source both sides quantize."""
    bf16 = work / f"{model}-bf16.gguf"
    if not bf16.exists():
        subprocess.run([args.llama_quantize, "--allow-requantize", pathlib.Path(args.model_dir) / GGUF_FILES[model], bf16,
                        "BF16", str(args.threads)], capture_output=True, check=True)
    return bf16


def llama_peers(args, model, work):
    """llama.cpp's perplexity of the source ("bf16") and of its Q8_0/Q4_0 (with
    --llama-bf16 also tessera's perplexity of those files, under "<peer>@tessera")."""
    if not args.llama_perplexity:
        return {}
    if args.llama_bf16:
        source = llama_bf16_source(args, model, work)
        theirs = {"bf16": llama_ppl(args.llama_perplexity, source, args.threads)}
        for peer in ("q8_0", "q4_0"):
            quantized = work / f"{model}-{peer}.gguf"
            subprocess.run([args.llama_quantize, source, quantized, peer.upper(), str(args.threads)], capture_output=True, check=True)
            theirs[peer] = llama_ppl(args.llama_perplexity, quantized, args.threads)
            theirs[f"{peer}@tessera"] = tessera_ppl(args.binary, quantized, args.threads)
            quantized.unlink()
        return theirs
    hf = pathlib.Path(args.model_dir) / "hf"
    if not args.from_gguf:
        return {peer: llama_ppl(args.llama_perplexity, hf / f"{model}-{peer}.gguf", args.threads) for peer in ("bf16", "q8_0", "q4_0")}
    source = pathlib.Path(args.model_dir) / GGUF_FILES[model]
    theirs = {"bf16": llama_ppl(args.llama_perplexity, source, args.threads)}
    for peer in ("q8_0", "q4_0"):
        requantized = work / f"{model}-{peer}.gguf"
        subprocess.run([args.llama_quantize, "--allow-requantize", source, requantized, peer.upper(), str(args.threads)],
                       capture_output=True, check=True)
        theirs[peer] = llama_ppl(args.llama_perplexity, requantized, args.threads)
        requantized.unlink()
    return theirs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=str(ROOT / "build" / "tessera"))
    ap.add_argument("--llama-perplexity", default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--methods", nargs="*", default=["rtn", "awq"])
    ap.add_argument("--schemes", nargs="*", default=[s for s, _ in SCHEMES])
    ap.add_argument("--kv-only", action="store_true", help="only the int8 KV cache against the f16 one")
    ap.add_argument("--from-gguf", action="store_true", help="quantize the fetched GGUF files, compared with themselves")
    ap.add_argument("--llama-quantize", default=None, help="with --from-gguf or --llama-bf16: llama-quantize")
    ap.add_argument("--llama-bf16", action="store_true",
                    help="quantize llama.cpp's BF16 of the fetched GGUF on both sides (needs --llama-quantize and --llama-perplexity)")
    ap.add_argument("--model-dir", default=os.environ.get("TESSERA_MODEL_DIR", str(pathlib.Path.home() / ".cache/tessera/models")))
    args = ap.parse_args()
    if args.from_gguf and args.llama_perplexity and not args.llama_quantize:
        ap.error("--from-gguf with --llama-perplexity needs --llama-quantize")
    if args.llama_bf16 and (args.from_gguf or not args.llama_quantize or not args.llama_perplexity):
        ap.error("--llama-bf16 needs --llama-quantize and --llama-perplexity, and not --from-gguf")
    hf = pathlib.Path(args.model_dir) / "hf"
    work = pathlib.Path(tempfile.mkdtemp(prefix="tessera-quant-"))
    rows = []
    try:
        for model in args.models:
            if args.llama_bf16:
                source = llama_bf16_source(args, model, work)
            else:
                source = pathlib.Path(args.model_dir) / GGUF_FILES[model] if args.from_gguf else hf / f"{model}-bf16"
            base = tessera_ppl(args.binary, source, args.threads)
            theirs = llama_peers(args, model, work)
            kv8 = tessera_ppl(args.binary, source, args.threads, "--kv-dtype", "int8")
            rows.append(f"| {model} | kv_cache int8 | {base:.4f} | {kv8:.4f} ({100 * (kv8 / base - 1):+.2f}%) | | |")
            print(rows[-1], flush=True)
            if args.kv_only:
                continue
            for scheme, peer in [s for s in SCHEMES if s[0] in args.schemes]:
                for method in args.methods:
                    out = work / f"{model}-{scheme}-{method}"
                    cmd = [args.binary, "quantize", "-m", source, "--scheme", scheme, "--method", method, "-o", out,
                           "-t", str(args.threads)]
                    if method == "awq":
                        cmd += ["--calib", CALIB]
                    subprocess.run(cmd, capture_output=True, check=True)
                    ppl = tessera_ppl(args.binary, out, args.threads)
                    shutil.rmtree(out)
                    peer_text = ""
                    if theirs:
                        peer_text = f"{peer} {theirs[peer]:.4f} ({100 * (theirs[peer] / theirs['bf16'] - 1):+.2f}%)"
                        if f"{peer}@tessera" in theirs:
                            at = theirs[f"{peer}@tessera"]
                            peer_text += f"; by tessera {at:.4f} ({100 * (at / base - 1):+.2f}%)"
                    rows.append(f"| {model} | {scheme} {method} | {base:.4f} | {ppl:.4f} ({100 * (ppl / base - 1):+.2f}%) | "
                                f"{theirs.get('bf16', float('nan')):.4f} | {peer_text} |")
                    print(rows[-1], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    source_name = "GGUF" if args.from_gguf else "llama.cpp BF16 GGUF" if args.llama_bf16 else "bf16"
    print(f"| model | scheme | tessera {source_name} | tessera quantized | llama.cpp {source_name} | llama.cpp peer |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
