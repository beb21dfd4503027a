#!/usr/bin/env python3
"""Makes Hugging Face test models from the real GGUF models: for each one a
bf16 directory (config.json, tokenizer files, model.safetensors) written by
transformers' own GGUF loader (weights dequantized by gguf-py, Llama's
Q/K rows un-permuted, the tokenizer rebuilt), and optionally the llama.cpp
peers of the same bf16 weights: the GGUF requantized to BF16 by
llama-quantize, and that quantized by it to Q8_0 and Q4_0.

Needs torch, transformers and gguf (not in the test venv):
  /tmp/hfvenv/bin/python scripts/make_hf_models.py [--llama-cpp DIR]

Writes under $TESSERA_MODEL_DIR/hf (default ~/.cache/tessera/models/hf):
  <name>-bf16/             the Hugging Face directory
  <name>-bf16.gguf         with --llama-cpp: llama.cpp's bf16 of the same weights
  <name>-q8_0.gguf, <name>-q4_0.gguf
  versions.json            the library versions that made them
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
from importlib import metadata

MODELS = {
    "smollm2-135m": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "qwen2.5-coder-0.5b": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
}


def model_dir():
    return pathlib.Path(os.environ.get("TESSERA_MODEL_DIR", pathlib.Path.home() / ".cache" / "tessera" / "models"))


def make_hf(gguf_path, out):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, torch_dtype=torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    # The GGUF vocabularies here are byte-level BPE, complete in
    # tokenizer.json; the SentencePiece file the Llama tokenizer class also
    # writes is not a model and would mislead llama.cpp's converter.
    spm = out / "tokenizer.model"
    if spm.exists() and json.loads((out / "tokenizer.json").read_text())["model"]["type"] == "BPE":
        spm.unlink()


def make_llama_cpp_peers(gguf_path, base, llama_cpp):
    """llama.cpp's own route to the same bf16 weights: requantize the GGUF to
    BF16 (dequantized values rounded to bf16, as transformers' cast does; the
    vocabulary metadata untouched), then Q8_0 and Q4_0 from that."""
    quantize = pathlib.Path(llama_cpp) / "build" / "bin" / "llama-quantize"
    bf16 = base.with_name(base.name + "-bf16.gguf")
    subprocess.run([str(quantize), "--allow-requantize", str(gguf_path), str(bf16), "BF16"], check=True)
    for scheme in ("q8_0", "q4_0"):
        out = base.with_name(f"{base.name}-{scheme}.gguf")
        subprocess.run([str(quantize), str(bf16), str(out), scheme.upper()], check=True)


def installed_version(package):
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-cpp", help="llama.cpp source tree with build/bin/llama-quantize")
    parser.add_argument("--only", choices=sorted(MODELS), help="one model")
    parser.add_argument("--peers-only", action="store_true",
                        help="only llama.cpp's BF16/Q8_0/Q4_0 GGUFs (no torch needed; tessera reads the BF16 GGUF)")
    args = parser.parse_args()
    if args.peers_only and not args.llama_cpp:
        parser.error("--peers-only needs --llama-cpp")
    out_root = model_dir() / "hf"
    out_root.mkdir(parents=True, exist_ok=True)
    for name, gguf_name in MODELS.items():
        if args.only and name != args.only:
            continue
        hf_dir = out_root / f"{name}-bf16"
        if not args.peers_only and not (hf_dir / "model.safetensors").exists():
            make_hf(model_dir() / gguf_name, hf_dir)
        if args.llama_cpp:
            make_llama_cpp_peers(model_dir() / gguf_name, out_root / name, args.llama_cpp)
    versions = {p: installed_version(p) for p in ("torch", "transformers", "gguf", "safetensors")}
    if args.llama_cpp:
        versions["llama.cpp"] = pathlib.Path(args.llama_cpp).resolve().as_posix()
    (out_root / "versions.json").write_text(json.dumps(versions, indent=2) + "\n")
    print(json.dumps(versions))


if __name__ == "__main__":
    main()
