#!/usr/bin/env python3
"""Writes tests/data/hf/: small Hugging Face model directories made with the
reference libraries themselves.

- tiny-sharded/: config.json, generation_config.json, tokenizer_config.json,
  a byte-level BPE tokenizer.json trained by `tokenizers`, and weights in two
  safetensors shards written by `safetensors` with their index.
- spm-bpe/tokenizer.json: a SentencePiece-style BPE (Metaspace, byte fallback).
- expected.json: the tensors' values, and for each tokenizer the ids that
  `tokenizers` gives for a set of strings.

Run: .venv/bin/python scripts/gen_hf_fixtures.py
"""
import json
import pathlib
from importlib import metadata

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "hf"

TRAINING_TEXT = [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "def tokenize(text): return [ord(c) for c in text]\n" * 2,
    "Llamas and alpacas live in the Andes; 1234 5678 90.",
    "Tokenizers split text into pieces, then merge frequent pairs.",
    "你好世界 こんにちは 안녕하세요 Привет мир",
]

PROBES = [
    "Hello world", "The lazy dog's 12345 tricks!", "  leading and   inner spaces\n\ttab", "你好, 世界 🦙",
    "<|im_start|>user\nhi<|im_end|>", "café naïve Straße", "x = [1, 2, 3]  # comment", "",
]


def train_byte_level():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    return tok


def train_sentencepiece_style():
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False)
    tok.train_from_iterator(TRAINING_TEXT, trainer)
    spec = json.loads(tok.to_str())
    vocab = spec["model"]["vocab"]
    for byte in range(256):  # byte-fallback tokens, as Llama's tokenizer.json has them
        vocab.setdefault(f"<0x{byte:02X}>", len(vocab))
    return Tokenizer.from_str(json.dumps(spec))


def write_weights(model_dir, rng):
    tensors = {
        "model.embed_tokens.weight": rng.standard_normal((8, 4)).astype(np.float32),
        "model.layers.0.mlp.up_proj.weight": rng.standard_normal((6, 4)).astype(np.float16),
        "model.layers.0.self_attn.q_proj.bias": rng.standard_normal((4,)).astype(np.float32),
        "lm_head.weight": rng.standard_normal((8, 4)).astype(np.float32),
    }
    shards = {
        "model-00001-of-00002.safetensors": ["model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight"],
        "model-00002-of-00002.safetensors": ["model.layers.0.self_attn.q_proj.bias", "lm_head.weight"],
    }
    weight_map = {}
    for shard, names in shards.items():
        save_file({n: tensors[n] for n in names}, str(model_dir / shard), metadata={"format": "pt"})
        weight_map.update({n: shard for n in names})
    (model_dir / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": sum(t.nbytes for t in tensors.values())}, "weight_map": weight_map}, indent=1))
    return {n: {"dtype": str(t.dtype), "shape": list(t.shape), "values": t.astype(np.float32).reshape(-1).tolist()}
            for n, t in tensors.items()}


def main():
    rng = np.random.default_rng(11)
    model_dir = OUT / "tiny-sharded"
    model_dir.mkdir(parents=True, exist_ok=True)
    (OUT / "spm-bpe").mkdir(parents=True, exist_ok=True)
    (model_dir / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4, "intermediate_size": 6,
        "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 8,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "float32"}, indent=1))
    (model_dir / "generation_config.json").write_text(json.dumps({"bos_token_id": 0, "eos_token_id": 2}))
    (model_dir / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": None, "eos_token": "<|im_end|>", "add_bos_token": False, "add_eos_token": False}))
    byte_level = train_byte_level()
    byte_level.save(str(model_dir / "tokenizer.json"))
    spm = train_sentencepiece_style()
    spm.save(str(OUT / "spm-bpe" / "tokenizer.json"))
    expected = {
        "versions": {"tokenizers": metadata.version("tokenizers"), "safetensors": metadata.version("safetensors")},
        "tensors": write_weights(model_dir, rng),
        "tokenizers": {
            "tiny-sharded": [{"text": p, "ids": byte_level.encode(p, add_special_tokens=False).ids} for p in PROBES],
            "spm-bpe": [{"text": p, "ids": spm.encode(p, add_special_tokens=False).ids} for p in PROBES],
        },
    }
    (OUT / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
