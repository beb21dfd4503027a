#!/usr/bin/env python3
"""Writes a Hugging Face bf16 directory (config.json, model.safetensors,
tokenizer files) from a Qwen2 or Llama GGUF file, for start-time benchmarks
that need a bf16 checkpoint where none can be downloaded. Weights are the
GGUF's, dequantized by gguf-py and rounded to bf16 (round to nearest even);
the tokenizer files come from a running `tessera serve` of the same GGUF
(/tokenizer.json and /tokenizer_info). Qwen2's converter stores Q and K
unpermuted; Llama's permutes them, which is undone here.

  .venv/bin/python scripts/gguf_to_bf16_dir.py MODEL.gguf OUT_DIR --tessera build/tessera
"""
import argparse
import json
import pathlib
import re
import struct
import subprocess
import tempfile
import time
import urllib.request

import gguf
import numpy as np

NAMES = [  # GGUF name pattern -> Hugging Face name
    (r"token_embd\.weight", "model.embed_tokens.weight"),
    (r"output_norm\.weight", "model.norm.weight"),
    (r"output\.weight", "lm_head.weight"),
    (r"blk\.(\d+)\.attn_norm\.weight", "model.layers.{}.input_layernorm.weight"),
    (r"blk\.(\d+)\.ffn_norm\.weight", "model.layers.{}.post_attention_layernorm.weight"),
    (r"blk\.(\d+)\.attn_q\.(weight|bias)", "model.layers.{}.self_attn.q_proj.{}"),
    (r"blk\.(\d+)\.attn_k\.(weight|bias)", "model.layers.{}.self_attn.k_proj.{}"),
    (r"blk\.(\d+)\.attn_v\.(weight|bias)", "model.layers.{}.self_attn.v_proj.{}"),
    (r"blk\.(\d+)\.attn_output\.weight", "model.layers.{}.self_attn.o_proj.weight"),
    (r"blk\.(\d+)\.ffn_gate\.weight", "model.layers.{}.mlp.gate_proj.weight"),
    (r"blk\.(\d+)\.ffn_up\.weight", "model.layers.{}.mlp.up_proj.weight"),
    (r"blk\.(\d+)\.ffn_down\.weight", "model.layers.{}.mlp.down_proj.weight"),
]


def hf_name(name):
    for pattern, out in NAMES:
        m = re.fullmatch(pattern, name)
        if m:
            return out.format(*m.groups())
    raise SystemExit(f"no Hugging Face name for tensor {name}")


def unpermute(w, heads):
    """llama.cpp's converter interleaves Llama's Q/K rotary halves; undone."""
    return w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def bf16_bytes(values):
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16).tobytes()


def write_safetensors(path, tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, values in tensors:
        data = bf16_bytes(values)
        header[name] = {"dtype": "BF16", "shape": list(values.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for b in blobs:
            f.write(b)


def field(reader, key):
    return reader.fields[key].contents() if key in reader.fields else None


def tokenizer_files(tessera, model, out):
    with tempfile.TemporaryDirectory() as work:
        cfg = pathlib.Path(work) / "c.yaml"
        cfg.write_text(f"models:\n  - name: m\n    path: {model}\n    kv_cache: {{budget_mb: 16}}\n")
        proc = subprocess.Popen([tessera, "serve", "--config", str(cfg), "--port", "18421", "--grpc-port", "18422"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(600):
                try:
                    with urllib.request.urlopen("http://127.0.0.1:18421/health", timeout=1) as r:
                        if r.status == 200:
                            break
                except OSError:
                    time.sleep(0.1)
            for path, name in [("/tokenizer.json?model=m", "tokenizer.json"), ("/tokenizer_info?model=m", "tokenizer_config.json")]:
                with urllib.request.urlopen("http://127.0.0.1:18421" + path, timeout=60) as r:
                    (out / name).write_bytes(r.read())
        finally:
            proc.terminate()
            proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("gguf")
    ap.add_argument("out")
    ap.add_argument("--tessera", default="build/tessera")
    args = ap.parse_args()
    reader = gguf.GGUFReader(args.gguf)
    arch = field(reader, "general.architecture")
    if arch not in ("qwen2", "llama"):
        raise SystemExit(f"architecture {arch}: only qwen2 and llama are written")
    heads, kv_heads = field(reader, f"{arch}.attention.head_count"), field(reader, f"{arch}.attention.head_count_kv")
    tensors = []
    for t in reader.tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type).reshape([int(d) for d in reversed(t.shape.tolist())])
        name = hf_name(t.name)
        if arch == "llama" and name.endswith(("q_proj.weight", "k_proj.weight")):
            values = unpermute(values, heads if "q_proj" in name else kv_heads)
        tensors.append((name, values.astype(np.float32)))
    names = {n for n, _ in tensors}
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_safetensors(out / "model.safetensors", tensors)
    vocab = dict(tensors)["model.embed_tokens.weight"].shape[0]
    config = {
        "architectures": ["Qwen2ForCausalLM" if arch == "qwen2" else "LlamaForCausalLM"], "model_type": arch,
        "hidden_size": field(reader, f"{arch}.embedding_length"), "intermediate_size": field(reader, f"{arch}.feed_forward_length"),
        "num_hidden_layers": field(reader, f"{arch}.block_count"), "num_attention_heads": heads, "num_key_value_heads": kv_heads,
        "rms_norm_eps": field(reader, f"{arch}.attention.layer_norm_rms_epsilon"),
        "rope_theta": field(reader, f"{arch}.rope.freq_base") or 10000.0,
        "max_position_embeddings": field(reader, f"{arch}.context_length"), "vocab_size": vocab,
        "tie_word_embeddings": "lm_head.weight" not in names, "hidden_act": "silu", "torch_dtype": "bfloat16",
        "bos_token_id": field(reader, "tokenizer.ggml.bos_token_id"), "eos_token_id": field(reader, "tokenizer.ggml.eos_token_id"),
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))
    tokenizer_files(args.tessera, args.gguf, out)
    print(f"wrote {out}: {len(tensors)} tensors")


if __name__ == "__main__":
    main()
