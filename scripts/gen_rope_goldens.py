#!/usr/bin/env python3
"""Writes tests/data/rope/<case>.bin: random query heads before and after
transformers' rotary embedding (LlamaRotaryEmbedding + apply_rotary_pos_emb,
float32), at head_dim 128 and positions up to 32767, for rope bases and
scalings that Hugging Face checkpoints use. Layout: int32 n_positions,
int32 head_dim, float32 rope_theta, then int32 positions[n], float32
x[n][head_dim], float32 rotated[n][head_dim]; expected.json records the
scaling and the versions.

  /tmp/hfvenv/bin/python scripts/gen_rope_goldens.py
"""
import json
import pathlib
import struct

import numpy as np
import torch
import transformers
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "rope"
HEAD_DIM = 128
CASES = {
    "base1e6": (1000000.0, None),
    "base1e4": (10000.0, None),
    "llama3": (500000.0, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                          "original_max_position_embeddings": 8192}),
    "linear": (10000.0, {"rope_type": "linear", "factor": 4.0}),
}


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    positions = np.unique(np.concatenate([np.arange(0, 64), rng.integers(64, 32768, size=64)])).astype(np.int32)
    x = rng.normal(0.0, 1.0, size=(len(positions), HEAD_DIM)).astype(np.float32)
    record = {"transformers": transformers.__version__, "torch": torch.__version__, "cases": {}}
    for name, (theta, scaling) in CASES.items():
        config = LlamaConfig(hidden_size=HEAD_DIM * 4, num_attention_heads=4, head_dim=HEAD_DIM, rope_theta=theta,
                             rope_scaling=scaling, max_position_embeddings=32768)
        rotary = LlamaRotaryEmbedding(config)
        q = torch.from_numpy(x)[None, None]  # (batch, heads, seq, dim)
        cos, sin = rotary(q, torch.from_numpy(positions.astype(np.int64))[None])
        rotated, _ = apply_rotary_pos_emb(q, q, cos, sin)
        with open(OUT / f"{name}.bin", "wb") as f:
            f.write(struct.pack("<iif", len(positions), HEAD_DIM, theta))
            f.write(positions.astype("<i4").tobytes())
            f.write(x.astype("<f4").tobytes())
            f.write(rotated[0, 0].numpy().astype("<f4").tobytes())
        record["cases"][name] = {"rope_theta": theta, "rope_scaling": scaling}
        print(name, "written")
    (OUT / "expected.json").write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
