#!/usr/bin/env python3
"""Writes tests/data/gguf/all_types.gguf with gguf-py's own writer: one
metadata key of every value type, nested arrays, a custom alignment and
tensors of several types. The reader tests check every value against what
this script wrote.

Run: .venv/bin/python scripts/gen_gguf_fixtures.py
"""
import json
import pathlib

import gguf
import numpy as np

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "gguf" / "all_types.gguf"


def main():
    OUT.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(OUT), arch="testarch")
    w.add_custom_alignment(64)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 0.15625)
    w.add_uint64("t.u64", 18000000000000000000)
    w.add_int64("t.i64", -9000000000000000000)
    w.add_float64("t.f64", -2.5e-300)
    w.add_bool("t.true", True)
    w.add_bool("t.false", False)
    w.add_string("t.str", "héllo, 世界 🦙")
    w.add_array("t.arr_i32", [1, -2, 3])
    w.add_array("t.arr_str", ["a", "bc", ""])
    w.add_array("t.arr_nested", [[1, 2], [3]])
    rng = np.random.default_rng(7)
    f32 = rng.standard_normal((3, 5)).astype(np.float32)
    f16 = rng.standard_normal((2, 8)).astype(np.float16)
    q8 = gguf.quants.quantize(rng.standard_normal((2, 64)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
    expected = {
        "f32_tensor": f32.reshape(-1).tolist(),
        "f16_tensor": f16.astype(np.float32).reshape(-1).tolist(),
        "q8_tensor": gguf.quants.dequantize(q8, gguf.GGMLQuantizationType.Q8_0).reshape(-1).tolist(),
    }
    OUT.with_suffix(".expected.json").write_text(json.dumps(expected))
    w.add_tensor("f32_tensor", f32)
    w.add_tensor("f16_tensor", f16)
    w.add_tensor("q8_tensor", q8, raw_shape=q8.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
