"""bf16 and f16 Hugging Face checkpoints on every x86 CPU. The tiny Llama's
weights rounded to bf16 (or f16) and stored so, against the same values
widened to f32: logits within 1e-3 at every position of a prompt long
enough to take the prompt path (oneDNN) and then a decode step at a time (the
dot-product kernels), natively and with AVX-512 and AMX capped off."""
import json
import os
import shutil
import struct

import numpy as np
import pytest

from conftest import DATA, run

CAPPED = {"TESSERA_MAX_CPU_ISA": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
IDS = [1] + [(i * 37) % 390 + 5 for i in range(47)]  # 48 tokens


def read_safetensors(path):
    data = path.read_bytes()
    header_len = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + header_len]), data[8 + header_len:]


def write_safetensors(path, tensors):
    """tensors: name -> (dtype name, shape, bytes)."""
    header, body = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + body)


def bf16_bits(values):
    """f32 -> bf16, round to nearest even (every value here is finite)."""
    u = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def half_and_widened(tmp_path, half):
    """Two copies of hf-tiny/llama: weights stored as `half` (BF16 or F16),
    and the same rounded values stored as F32."""
    source = DATA / "hf-tiny" / "llama"
    header, body = read_safetensors(source / "model.safetensors")
    halves, widened = {}, {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        values = np.frombuffer(body[begin:end], dtype=np.float32)
        if half == "BF16":
            bits = bf16_bits(values)
            wide = (bits.astype(np.uint32) << 16).view(np.float32)
        else:
            bits = values.astype(np.float16)
            wide = bits.astype(np.float32)
        halves[name] = (half, info["shape"], bits.tobytes())
        widened[name] = ("F32", info["shape"], wide.tobytes())
    dirs = []
    for label, tensors in ((half.lower(), halves), ("f32", widened)):
        d = tmp_path / label
        shutil.copytree(source, d)
        write_safetensors(d / "model.safetensors", tensors)
        dirs.append(d)
    return dirs


def logits(tessera_bin, model, out, env, batch=512):
    """Every position's logits, `batch` prompt tokens a forward pass."""
    result = run([tessera_bin, "logits", "-m", model, "--token-ids", ",".join(map(str, IDS)), "-o", out,
                  "--kv-dtype", "f32", "-t", "2", "--batch", batch], env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    return np.fromfile(out, dtype=np.float32).reshape(len(IDS), -1)


@pytest.mark.parametrize("half", ["BF16", "F16"])
@pytest.mark.parametrize("isa", ["native", "avx2"])
def test_half_weights_give_the_logits_of_the_same_weights_in_f32(tessera_bin, tmp_path, half, isa):
    half_dir, f32_dir = half_and_widened(tmp_path, half)
    env = CAPPED if isa == "avx2" else {}
    ref = logits(tessera_bin, f32_dir, tmp_path / "f32.f32", env)
    assert np.abs(ref).max() > 0.1  # the logits are not all near zero
    for batch in (512, 3):  # the whole prompt in one pass; three tokens a pass, as decode steps run
        ours = logits(tessera_bin, half_dir, tmp_path / "half.f32", env, batch)
        diff = np.abs(ours - ref).max()
        assert diff < 1e-3, f"{half} on {isa}, {batch} tokens a pass: max |diff| {diff:.2e}"
