#!/usr/bin/env python3
"""Writes tests/data/malformed/: crafted GGUF and safetensors files that each
break one rule, plus expected.tsv (file, then a fragment the error message must
contain). The valid_* files are the unbroken baselines.

Run: python3 scripts/gen_malformed_corpus.py
"""
import json
import pathlib
import struct

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "malformed"

# GGUF value type tags
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return gstr(key) + struct.pack("<I", vtype) + payload


def kv_str(key, value):
    return kv(key, STR, gstr(value))


def kv_u32(key, value):
    return kv(key, U32, struct.pack("<I", value))


def arr(elem_type, items_payload, count):
    return struct.pack("<IQ", elem_type, count) + items_payload


def nested_array(depth):
    """An array holding an array … `depth` levels down, the innermost empty."""
    payload = arr(U8, b"", 0)
    for _ in range(depth - 1):
        payload = arr(ARR, payload, 1)
    return payload


def tensor_info(name, dims, ggml_type, offset):
    return gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + \
        struct.pack("<IQ", ggml_type, offset)


def gguf(kvs, tensors, data=b"", version=3, n_tensors=None, n_kv=None, alignment=32, magic=b"GGUF"):
    head = magic + struct.pack("<I", version)
    head += struct.pack("<QQ", len(tensors) if n_tensors is None else n_tensors, len(kvs) if n_kv is None else n_kv)
    body = head + b"".join(kvs) + b"".join(tensors)
    pad = (-len(body)) % alignment
    return body + b"\0" * pad + data


BASE_KVS = [kv_str("general.architecture", "llama"), kv_u32("general.alignment", 32)]
BASE_TENSORS = [tensor_info("a", [4], 0, 0), tensor_info("b", [2, 2], 0, 32)]
BASE_DATA = bytes(range(16)) + b"\0" * 16 + bytes(range(16))


def base(**overrides):
    args = dict(kvs=BASE_KVS, tensors=BASE_TENSORS, data=BASE_DATA)
    args.update(overrides)
    return gguf(**args)


def vocab_kvs(tokens=None, extra=(), model="gpt2", merges=None, pre="gpt2"):
    tokens = tokens if tokens is not None else ["a", "b", "ab", "<s>"]
    out = [kv_str("general.architecture", "llama"), kv_str("tokenizer.ggml.model", model)]
    out.append(kv("tokenizer.ggml.tokens", ARR, arr(STR, b"".join(gstr(t) for t in tokens), len(tokens))))
    if model == "gpt2":
        merges = merges if merges is not None else ["a b"]
        out.append(kv("tokenizer.ggml.merges", ARR, arr(STR, b"".join(gstr(m) for m in merges), len(merges))))
        out.append(kv_str("tokenizer.ggml.pre", pre))
    return out + list(extra)


def vocab_file(**kw):
    return gguf(vocab_kvs(**kw), [])


def gguf_cases():
    big = 1 << 40
    cases = {
        "valid_model": (base(), None),
        "valid_vocab": (vocab_file(), None),
        "empty": (b"", "truncated"),
        "short_magic": (b"GGU", "truncated"),
        "bad_magic": (b"GGML" + b"\0" * 40, "bad magic"),
        "version_1": (base(version=1), "version 1 is not supported"),
        "version_4": (base(version=4), "unsupported GGUF version 4"),
        "big_endian": (base(version=0x03000000), "big-endian"),
        "truncated_counts": (b"GGUF" + struct.pack("<I", 3) + b"\0\0\0", "tensor count"),
        "huge_tensor_count": (base(n_tensors=big), "tensor count"),
        "huge_kv_count": (base(n_kv=big), "metadata count"),
        "key_too_long": (gguf([struct.pack("<Q", (64 << 20) + 1) + b"\0" * 32], [], n_kv=1), "exceeds the limit"),
        "key_past_end": (gguf([struct.pack("<Q", 1000) + b"abc"], [], n_kv=1), "truncated"),
        "empty_key": (gguf([kv_str("", "x")], []), "empty key"),
        "duplicate_key": (gguf([kv_str("k", "x"), kv_str("k", "y")], []), "duplicate metadata key 'k'"),
        "unknown_value_type": (gguf([kv("k", 13, b"\0" * 8)], []), "unknown value type 13"),
        "bad_bool": (gguf([kv("flag", BOOL, b"\x02")], []), "neither 0 nor 1"),
        "string_too_long": (gguf([kv("k", STR, struct.pack("<Q", (64 << 20) + 1))], []), "exceeds the limit"),
        "string_past_end": (gguf([kv("k", STR, struct.pack("<Q", 500) + b"xy")], []), "truncated"),
        "array_unknown_type": (gguf([kv("k", ARR, arr(99, b"", 0))], []), "unknown array element type 99"),
        "array_too_long": (gguf([kv("k", ARR, arr(U8, b"", (64 << 20) + 1))], []), "exceeds the limit"),
        "array_past_end": (gguf([kv("k", ARR, arr(U32, b"\0" * 8, 1000))], []), "runs past the end"),
        "array_truncated_items": (gguf([kv("k", ARR, arr(U32, b"\0" * 6, 2))], [], alignment=1), "truncated"),
        "array_nested_too_deep": (gguf([kv("k", ARR, nested_array(6))], []), "nested deeper"),
        "alignment_wrong_type": (base(kvs=[kv("general.alignment", U64, struct.pack("<Q", 32))]), "expected uint32"),
        "alignment_zero": (base(kvs=[kv_u32("general.alignment", 0)]), "not a power of two"),
        "alignment_not_power_of_two": (base(kvs=[kv_u32("general.alignment", 48)]), "not a power of two"),
        "alignment_too_large": (base(kvs=[kv_u32("general.alignment", 2 << 20)]), "not a power of two up to"),
        "tensor_zero_dims": (base(tensors=[tensor_info("a", [], 0, 0)]), "0 dimensions"),
        "tensor_five_dims": (base(tensors=[tensor_info("a", [1, 1, 1, 1, 1], 0, 0)]), "5 dimensions"),
        "tensor_zero_dim": (base(tensors=[tensor_info("a", [4, 0], 0, 0)]), "is zero or overflows"),
        "tensor_dim_overflow": (base(tensors=[tensor_info("a", [1 << 32, 1 << 32], 0, 0)]), "overflows"),
        "tensor_dim_over_int64": (base(tensors=[tensor_info("a", [1 << 63], 0, 0)]), "overflows"),
        "tensor_removed_type": (base(tensors=[tensor_info("a", [32], 4, 0)]), "unknown tensor type 4"),
        "tensor_unknown_type": (base(tensors=[tensor_info("a", [32], 999, 0)]), "unknown tensor type 999"),
        "tensor_misaligned": (base(tensors=[tensor_info("a", [4], 0, 8)]), "not a multiple of the alignment"),
        "tensor_partial_block": (base(tensors=[tensor_info("a", [33], 2, 0)]), "not a whole number of Q4_0 blocks"),
        # gpt-oss's experts: MXFP4 (type 39) in blocks of 32, stacked by expert.
        "tensor_partial_mxfp4_block": (base(tensors=[tensor_info("blk.0.ffn_up_exps.weight", [48, 4, 2], 39, 0)]),
                                       "not a whole number of MXFP4 blocks"),
        "tensor_byte_size_overflow": (base(tensors=[tensor_info("a", [1 << 62], 0, 0)]), "byte size overflows"),
        "tensor_past_end": (base(tensors=[tensor_info("a", [1024], 0, 0)]), "lies outside the data section"),
        "tensor_offset_overflow": (base(tensors=[tensor_info("a", [4], 0, (1 << 64) - 32)]), "lies outside"),
        "tensor_overlap": (base(tensors=[tensor_info("a", [16], 0, 0), tensor_info("b", [4], 0, 32)], data=bytes(96)),
                           "overlaps"),
        "tensor_duplicate_name": (base(tensors=[tensor_info("a", [4], 0, 0), tensor_info("a", [4], 0, 32)]), "duplicate name"),
        "tensor_name_too_long": (gguf(BASE_KVS, [struct.pack("<Q", (64 << 20) + 1)], n_tensors=1), "exceeds the limit"),
        "tensor_info_truncated": (gguf(BASE_KVS, [tensor_info("a", [4], 0, 0)[:-6]], n_tensors=1), "truncated"),
        "data_truncated": (base()[:-20], "lies outside"),
        "no_data_section": (gguf(BASE_KVS, BASE_TENSORS, data=b"", alignment=1), "past the end"),
        "value_truncated": (gguf([kv("k", U64, b"\0\0\0")], [], alignment=1), "truncated"),
        # Tokenizer metadata
        "vocab_missing_model": (gguf([kv_str("general.architecture", "llama"), kv_str("tokenizer.ggml.pre", "gpt2")], []),
                                None),
        "vocab_unsupported_model": (vocab_file(model="t5"), "tokenizer model 't5' is not supported"),
        "vocab_tokens_not_strings": (gguf([kv_str("tokenizer.ggml.model", "gpt2"),
                                           kv("tokenizer.ggml.tokens", ARR, arr(I32, b"\0" * 8, 2))], []),
                                     "array of int32, expected string"),
        "vocab_tokens_empty": (vocab_file(tokens=[]), "empty"),
        "vocab_scores_wrong_length": (vocab_file(model="llama", extra=[kv("tokenizer.ggml.scores", ARR, arr(F32, b"\0" * 4, 1))]),
                                      "1 entries, expected 4"),
        "vocab_token_type_wrong_type": (vocab_file(extra=[kv("tokenizer.ggml.token_type", ARR, arr(F32, b"\0" * 16, 4))]),
                                        "array of float32, expected int32"),
        "vocab_bad_merge": (vocab_file(merges=["ab"]), "is not two tokens"),
        "vocab_bos_out_of_range": (vocab_file(extra=[kv_u32("tokenizer.ggml.bos_token_id", 10)]), "outside the vocabulary"),
        "vocab_unknown_pre": (vocab_file(pre="klingon"), "unknown pre-tokenizer 'klingon'"),
        "vocab_bos_wrong_type": (vocab_file(extra=[kv_str("tokenizer.ggml.bos_token_id", "1")]), "expected a non-negative integer"),
    }
    # A file with no tokenizer is valid as a file; only the tokenizer load says so.
    cases["vocab_missing_model"] = (cases["vocab_missing_model"][0], "missing: the file has no tokenizer")
    return cases


def st(header, data=b"", raw_header=None):
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def st_tensor(dtype="F32", shape=(2, 2), offsets=(0, 16)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


def safetensors_cases():
    data = bytes(32)
    return {
        "valid": (st({"__metadata__": {"format": "pt"}, "w": st_tensor(), "v": st_tensor(offsets=(16, 32))}, data), None),
        "empty": (b"", "shorter than the 8-byte"),
        "header_too_large": (struct.pack("<Q", 100_000_001) + b"{}", "exceeds the limit"),
        "header_past_end": (struct.pack("<Q", 4096) + b"{}", "runs past the end"),
        "invalid_json": (st(None, raw_header=b'{"w": '), "not valid JSON"),
        "invalid_utf8": (st(None, raw_header=b'{"\xff\xfe": 1}'), "not valid JSON"),
        "top_level_array": (st([1, 2]), "not a JSON object"),
        "nested_too_deep": (st(None, raw_header=b'{"a":' + b"[" * 50 + b"]" * 50 + b"}"), "nested deeper"),
        "entry_not_object": (st({"w": 5}), "entry is not an object"),
        "missing_dtype": (st({"w": {"shape": [1], "data_offsets": [0, 4]}}, data), "missing string 'dtype'"),
        "unknown_dtype": (st({"w": st_tensor(dtype="Q4")}, data), "unknown dtype 'Q4'"),
        "gguf_dtype_name": (st({"w": st_tensor(dtype="Q4_0")}, data), "unknown dtype 'Q4_0'"),
        "missing_shape": (st({"w": {"dtype": "F32", "data_offsets": [0, 4]}}, data), "missing array 'shape'"),
        "negative_dim": (st({"w": st_tensor(shape=(-1, 4))}, data), "not a non-negative integer"),
        "float_dim": (st({"w": st_tensor(shape=(1.5, 4))}, data), "not a non-negative integer"),
        "too_many_dims": (st({"w": st_tensor(shape=(1,) * 9, offsets=(0, 4))}, data), "dimensions (at most 8)"),
        "element_overflow": (st({"w": st_tensor(shape=(1 << 40, 1 << 40))}, data), "element count overflows"),
        "byte_size_overflow": (st({"w": st_tensor(dtype="F64", shape=(1 << 62,))}, data), "byte size overflows"),
        "offsets_wrong_arity": (st({"w": st_tensor(offsets=(0,))}, data), "'data_offsets' must be"),
        "offsets_negative": (st({"w": st_tensor(offsets=(-16, 0))}, data), "'data_offsets' must be"),
        "offsets_reversed": (st({"w": st_tensor(offsets=(16, 0))}, data), "end before they begin"),
        "size_mismatch": (st({"w": st_tensor(offsets=(0, 12))}, data), "need 16 bytes but data_offsets span 12"),
        "past_end": (st({"w": st_tensor(offsets=(24, 40))}, data), "lies outside"),
        "overlap": (st({"w": st_tensor(), "v": st_tensor(offsets=(8, 24))}, data), "overlaps"),
        "metadata_not_object": (st({"__metadata__": [1]}, data), "__metadata__ is not an object"),
        "metadata_value_not_string": (st({"__metadata__": {"a": 1}}, data), "is not a string"),
        # A number too large for any integer or double (found by fuzzing).
        "number_overflow": (st(None, raw_header=b'{"w": {"dtype": "F64", "shape": [46116e46116]}}'), "not valid JSON"),
    }


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.iterdir():
        old.unlink()
    rows = []
    for name, (blob, expected) in gguf_cases().items():
        (OUT / f"{name}.gguf").write_bytes(blob)
        rows.append((f"{name}.gguf", expected or "-"))
    for name, (blob, expected) in safetensors_cases().items():
        (OUT / f"{name}.safetensors").write_bytes(blob)
        rows.append((f"{name}.safetensors", expected or "-"))
    with open(OUT / "expected.tsv", "w") as f:
        f.write("# file\terror fragment ('-' for a valid baseline)\n")
        for file, expected in rows:
            f.write(f"{file}\t{expected}\n")
    print(f"{len(rows)} files")


if __name__ == "__main__":
    main()
