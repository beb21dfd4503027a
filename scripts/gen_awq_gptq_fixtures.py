#!/usr/bin/env python3
"""Writes tests/data/hf-quant/: the tiny Llama of tests/data/hf-tiny/llama
with its linear layers stored as the published 4-bit checkpoint formats
pack them, and the weights each format's definition dequantizes to.

- awq/: AutoAWQ's GEMM format (quant_method awq, version gemm, zero_point):
  qweight int32 (in, out/8), eight outputs a word in the order
  [0, 2, 4, 6, 1, 3, 5, 7]; qzeros int32 (in/g, out/8) packed alike;
  scales f16 (in/g, out). w[o, i] = (q - z) * s of group i // g.
- gptq/: AutoGPTQ's format (quant_method gptq, sym, checkpoint_format gptq):
  qweight int32 (in/8, out), eight inputs a word in order; qzeros int32
  (groups, out/8) holding zero - 1; scales f16 (groups, out); g_idx int32
  (in). w[o, i] = (q - (z + 1)) * s, both of group g_idx[i].
- gptq-actorder/: the same with desc_act: g_idx follows a permutation of
  the inputs, so a group's inputs are scattered.
Each directory has expected.safetensors: every quantized linear's dequantized
f32 weight under its Hugging Face name.

Run: .venv/bin/python scripts/gen_awq_gptq_fixtures.py
"""
import json
import pathlib
import shutil

import numpy as np
from safetensors.numpy import load_file, save_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "data" / "hf-tiny" / "llama"
OUT = ROOT / "tests" / "data" / "hf-quant"
GROUP = 32
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def pack_columns(values, order):
    """(rows, cols) of 4-bit values -> int32 (rows, cols/8): word j holds columns 8j + order[k] at nibble k."""
    rows, cols = values.shape
    out = np.zeros((rows, cols // 8), dtype=np.uint32)
    for k in range(8):
        out |= values[:, np.arange(cols // 8) * 8 + order[k]].astype(np.uint32) << (4 * k)
    return out.view(np.int32)


def pack_rows(values):
    """(rows, cols) of 4-bit values -> int32 (rows/8, cols): word r holds rows 8r + k at nibble k."""
    rows, cols = values.shape
    out = np.zeros((rows // 8, cols), dtype=np.uint32)
    for k in range(8):
        out |= values[np.arange(rows // 8) * 8 + k, :].astype(np.uint32) << (4 * k)
    return out.view(np.int32)


def quantize(w_t, g_idx, n_groups, symmetric):
    """w_t: (in, out). Per (group, output) scale and zero; returns q (in, out), zeros, scales (groups, out)."""
    scales = np.zeros((n_groups, w_t.shape[1]), dtype=np.float16)
    zeros = np.zeros((n_groups, w_t.shape[1]), dtype=np.int64)
    for g in range(n_groups):
        rows = w_t[g_idx == g]
        if symmetric:
            s = np.maximum(np.abs(rows).max(axis=0), 1e-6) / 7.0
            z = np.full(w_t.shape[1], 8)
        else:
            lo, hi = np.minimum(rows.min(axis=0), 0), np.maximum(rows.max(axis=0), 0)
            s = np.maximum(hi - lo, 1e-6) / 15.0
            z = np.clip(np.round(-lo / s), 0, 15).astype(np.int64)
        scales[g] = s.astype(np.float16)
        zeros[g] = z
    s_full = scales[g_idx].astype(np.float32)
    q = np.clip(np.round(w_t / s_full) + zeros[g_idx], 0, 15).astype(np.int64)
    return q, zeros, scales


def dequantize(q, zeros, scales, g_idx):
    return ((q - zeros[g_idx]).astype(np.float32) * scales[g_idx].astype(np.float32)).T.copy()


def write(name, quantization_config, convert):
    out = OUT / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(SOURCE / f, out / f)
    config = json.loads((SOURCE / "config.json").read_text())
    config["quantization_config"] = quantization_config
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    tensors, expected = {}, {}
    rng = np.random.default_rng(11)
    for key, value in load_file(SOURCE / "model.safetensors").items():
        prefix = key[: -len(".weight")]
        if not any(key.endswith(f"{p}.weight") for p in LINEARS):
            tensors[key] = value
            continue
        packed, reference = convert(value.T.astype(np.float32), rng)
        for suffix, t in packed.items():
            tensors[f"{prefix}.{suffix}"] = t
        expected[key] = reference
    save_file(tensors, out / "model.safetensors")
    save_file(expected, out / "expected.safetensors")


def awq(w_t, rng):
    g_idx = np.arange(w_t.shape[0]) // GROUP
    q, zeros, scales = quantize(w_t, g_idx, w_t.shape[0] // GROUP, symmetric=False)
    packed = {"qweight": pack_columns(q, AWQ_ORDER), "qzeros": pack_columns(zeros, AWQ_ORDER), "scales": scales}
    return packed, dequantize(q, zeros, scales, g_idx)


def gptq(act_order):
    def convert(w_t, rng):
        n_in = w_t.shape[0]
        order = rng.permutation(n_in) if act_order else np.arange(n_in)
        g_idx = np.empty(n_in, dtype=np.int32)
        g_idx[order] = np.arange(n_in) // GROUP
        q, zeros, scales = quantize(w_t, g_idx, n_in // GROUP, symmetric=True)
        packed = {"qweight": pack_rows(q), "qzeros": pack_columns(zeros - 1, list(range(8))), "scales": scales,
                  "g_idx": g_idx}
        return packed, dequantize(q, zeros, scales, g_idx)
    return convert


def main():
    write("awq", {"quant_method": "awq", "bits": 4, "group_size": GROUP, "zero_point": True, "version": "gemm"}, awq)
    base = {"quant_method": "gptq", "bits": 4, "group_size": GROUP, "sym": True, "checkpoint_format": "gptq"}
    write("gptq", dict(base, desc_act=False), gptq(False))
    write("gptq-actorder", dict(base, desc_act=True), gptq(True))


if __name__ == "__main__":
    main()
