"""GGUF files of real model shapes with random weights, written in seconds:
speed does not depend on weight values, and a CPU-against-GPU comparison
needs only the same file on both sides. The tokenizer comes from one of
llama.cpp's vocabulary files in tests/data, so prompts tokenize as the real
model's would and the embedding has the real vocabulary's rows.

    python3 scripts/make_random_gguf.py --shape llama-8b --type q4_k_m --out DIR
    python3 scripts/make_random_gguf.py --list

Block formats get random quant bytes with every f16 scale field set to a
small random value, so that weights stay in a trained model's range (|w|
under about 0.1) and logits stay finite through every layer. Needs numpy
only: the GGUF reading and writing here is the few lines this needs
(gguf-py's reader takes tens of seconds over a 150,000-token vocabulary,
and GPU machines do not have it).
"""
import argparse
import pathlib
import struct
import sys

import numpy as np

DATA = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "tokenizer-vectors" / "llama-cpp-python-0.3.36"
ALIGNMENT = 32


class T:
    """GGML tensor types: (id, values per block, bytes per block)."""
    F32, F16, Q4_0, Q5_0, Q8_0, Q4_K, Q6_K, MXFP4 = (0, 1, 4), (1, 1, 2), (2, 32, 18), (6, 32, 22), (8, 32, 34), \
        (12, 256, 144), (14, 256, 210), (39, 32, 17)

# name: (architecture, vocabulary file, hidden, layers, heads, kv heads,
#        feed-forward, rope base, rms eps, q/k/v bias, tied embeddings)
SHAPES = {
    "qwen2.5-0.5b": ("qwen2", "ggml-vocab-qwen2.gguf", 896, 24, 14, 2, 4864, 1e6, 1e-6, True, True),
    "llama-1b": ("llama", "ggml-vocab-llama-bpe.gguf", 2048, 16, 32, 8, 8192, 5e5, 1e-5, False, True),
    "llama-8b": ("llama", "ggml-vocab-llama-bpe.gguf", 4096, 32, 32, 8, 14336, 5e5, 1e-5, False, False),
    # Mixture of experts (EXPERTS below): ~0.8B in all, ~0.35B read per token.
    "qwen3moe-8x": ("qwen3moe", "ggml-vocab-qwen2.gguf", 1024, 16, 16, 8, 1536, 1e6, 1e-6, False, True),
    # gpt-oss-20b's shape (64 heads of 64, 32 experts of 2880, 4 per token;
    # biases, sinks, YaRN), ~20B in all, ~3.6B read per token, with Qwen2's
    # 151,936-token vocabulary for o200k's 201,088 (no GGUF vocabulary file
    # of it is at hand): 0.3 GB fewer output-head bytes a token.
    "gpt-oss-20b": ("gpt-oss", "ggml-vocab-qwen2.gguf", 2880, 24, 64, 8, 2880, 150000.0, 1e-5, True, False),
}
# MoE shapes: (experts, experts per token); their feed-forward width is each expert's.
EXPERTS = {"qwen3moe-8x": (8, 2), "gpt-oss-20b": (32, 4)}
# Head widths other than hidden / heads.
HEAD_DIM = {"gpt-oss-20b": 64}
# Architectures with RMSNorm on each query and key head.
QK_NORM = {"qwen3", "qwen3moe"}
# mxfp4_moe as llama-quantize's MXFP4_MOE: experts MXFP4, other matrices Q8_0.
FILE_TYPES = {"q4_0": 2, "q8_0": 7, "f16": 1, "q4_k_m": 15, "mxfp4_moe": 38}

# Where each f16 scale sits in a block, and its magnitude: weight = scale *
# (quant level), so scale * the largest level stays near 0.1.
SCALE_FIELDS = {
    T.Q4_0: ([0], 0.012), T.Q5_0: ([0], 0.006), T.Q8_0: ([0], 0.0008),
    T.Q4_K: ([0, 2], 0.00012), T.Q6_K: ([208], 0.00003),
}


EMBEDDING_GAIN = 8.0


def use_more_bits(layer, layers):
    """Q4_K_M's rule for the layers whose attn_v and ffn_down get Q6_K."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def tensor_type(file_type, name, layer, layers, row_length, tied):
    if file_type == "mxfp4_moe":
        return T.MXFP4 if "_exps." in name else T.Q8_0
    if file_type in ("q4_0", "q8_0", "f16"):
        chosen = {"q4_0": T.Q4_0, "q8_0": T.Q8_0, "f16": T.F16}[file_type]
        if name == "output.weight" or (tied and name == "token_embd.weight"):
            chosen = T.Q8_0 if file_type != "f16" else T.F16
        return chosen
    chosen = T.Q4_K
    if name == "output.weight" or (tied and name == "token_embd.weight"):
        chosen = T.Q6_K
    elif (".attn_v." in name or ".ffn_down" in name) and use_more_bits(layer, layers):
        chosen = T.Q6_K
    if row_length % 256:  # K-quants need whole 256-wide blocks
        chosen = {T.Q4_K: T.Q5_0, T.Q6_K: T.Q8_0}[chosen]
    return chosen


def random_tensor(rng, qtype, rows, cols, gain=1.0):
    """Bytes of a (rows, cols) tensor in qtype, as a uint8 array."""
    if qtype == T.F32:
        return (1.0 + 0.05 * rng.standard_normal((rows, cols))).astype(np.float32).view(np.uint8)
    if qtype == T.F16:
        return (0.02 * gain * rng.standard_normal((rows, cols), dtype=np.float32)).astype(np.float16).view(np.uint8)
    _, block_values, block_bytes = qtype
    blocks = rows * (cols // block_values)
    data = np.frombuffer(bytearray(rng.bytes(blocks * block_bytes)), dtype=np.uint8).reshape(blocks, block_bytes)
    if qtype == T.MXFP4:
        # E8M0 exponents 2^-8 .. 2^-6 (byte 0): |w| up to 6 * 2^-6, about 0.1.
        data[:, 0] = rng.integers(119, 122, size=blocks, dtype=np.uint8)
        return data
    offsets, magnitude = SCALE_FIELDS[qtype]
    scales = (rng.uniform(0.5, 1.0, size=blocks) * magnitude * gain).astype(np.float16)
    for offset in offsets:
        data[:, offset:offset + 2] = scales.view(np.uint8).reshape(blocks, 2)
    if qtype == T.Q4_K:
        # Every sub-block's (scale, min) = (8, 60) with min scale = scale:
        # w = d (8 q - 60), centred on zero as trained weights are.
        data[:, 4:16] = np.array([8] * 4 + [252] * 4 + [200] * 4, dtype=np.uint8)
    return data


def layer_tensors(arch, hidden, heads, kv_heads, ffn, bias, experts=None, head_dim=None):
    """(name suffix, rows, cols, experts) of one block; rows are output
    features; experts 0 for a plain matrix, else the stacked count."""
    head_dim = head_dim or hidden // heads
    q_dim = heads * head_dim
    ffn_norm = "post_attention_norm.weight" if arch == "gpt-oss" else "ffn_norm.weight"
    out = [("attn_norm.weight", 1, hidden, 0), ("attn_q.weight", q_dim, hidden, 0),
           ("attn_k.weight", kv_heads * head_dim, hidden, 0), ("attn_v.weight", kv_heads * head_dim, hidden, 0),
           ("attn_output.weight", hidden, q_dim, 0), (ffn_norm, 1, hidden, 0)]
    if experts:
        n = experts[0]
        out += [("ffn_gate_inp.weight", n, hidden, 0), ("ffn_gate_exps.weight", ffn, hidden, n),
                ("ffn_up_exps.weight", ffn, hidden, n), ("ffn_down_exps.weight", hidden, ffn, n)]
    if arch == "gpt-oss":
        # Biases everywhere (the experts' stacked per expert), and a sink per head.
        out += [("attn_output.bias", 1, hidden, 0), ("attn_sinks.weight", 1, heads, 0),
                ("ffn_gate_inp.bias", 1, experts[0], 0), ("ffn_gate_exps.bias", experts[0], ffn, 0),
                ("ffn_up_exps.bias", experts[0], ffn, 0), ("ffn_down_exps.bias", experts[0], hidden, 0)]
    else:
        out += [("ffn_gate.weight", ffn, hidden, 0), ("ffn_up.weight", ffn, hidden, 0), ("ffn_down.weight", hidden, ffn, 0)]
    if arch in QK_NORM:
        out += [("attn_q_norm.weight", 1, head_dim, 0), ("attn_k_norm.weight", 1, head_dim, 0)]
    if bias:
        out += [("attn_q.bias", 1, q_dim, 0), ("attn_k.bias", 1, kv_heads * head_dim, 0),
                ("attn_v.bias", 1, kv_heads * head_dim, 0)]
    return out


# GGUF value types whose size is fixed, by type id; 8 is a string, 9 an array.
FIXED_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


class Cursor:
    def __init__(self, data):
        self.data, self.at = data, 0

    def take(self, n):
        self.at += n
        if self.at > len(self.data):
            raise ValueError("GGUF file ends early")
        return self.data[self.at - n:self.at]

    def u32(self):
        return struct.unpack("<I", self.take(4))[0]

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def string(self):
        return self.take(self.u64())

    def skip_value(self, kind):
        if kind in FIXED_SIZES:
            self.take(FIXED_SIZES[kind])
        elif kind == 8:
            self.string()
        elif kind == 9:
            sub, count = self.u32(), self.u64()
            if sub in FIXED_SIZES:
                self.take(FIXED_SIZES[sub] * count)
            else:
                for _ in range(count):
                    self.skip_value(sub)
        else:
            raise ValueError(f"unknown GGUF value type {kind}")


def read_header(path):
    """(key/value entries as {key: raw bytes of the whole entry}, tensors as
    [(name, dims, type id)]) of a GGUF file; reads the header only."""
    with open(path, "rb") as f:
        data = f.read(64 << 20)
    c = Cursor(data)
    if c.take(4) != b"GGUF" or c.u32() != 3:
        raise ValueError(f"{path}: not a GGUF version 3 file")
    n_tensors, n_kv = c.u64(), c.u64()
    entries = {}
    for _ in range(n_kv):
        begin = c.at
        key = c.string().decode()
        c.skip_value(c.u32())
        entries[key] = data[begin:c.at]
    tensors = []
    for _ in range(n_tensors):
        name = c.string().decode()
        dims = [c.u64() for _ in range(c.u32())]
        kind = c.u32()
        c.u64()
        tensors.append((name, dims, kind))
    return entries, tensors


# (id, values, bytes) per block of every type a header may name: those
# written here, and Q4_1, Q5_1, Q2_K, Q3_K, Q5_K and BF16.
BLOCKS = {t[0]: t for t in (T.F32, T.F16, T.Q4_0, T.Q5_0, T.Q8_0, T.Q4_K, T.Q6_K, T.MXFP4, (3, 32, 20), (7, 32, 24),
                            (10, 256, 84), (11, 256, 110), (13, 256, 176), (30, 1, 2))}


def tensor_bytes(dims, kind):
    if kind not in BLOCKS:
        raise ValueError(f"GGUF tensor type {kind} is not known here")
    _, values, size = BLOCKS[kind]
    count = int(np.prod(dims))
    return count // values * size


def pack_string(text):
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def kv_u32(key, value):
    return pack_string(key) + struct.pack("<II", 4, value)


def kv_f32(key, value):
    return pack_string(key) + struct.pack("<If", 6, value)


def kv_str(key, value):
    return pack_string(key) + struct.pack("<I", 8) + pack_string(value)


def write_model(shape, file_type, path, seed):
    arch, vocab_file, hidden, layers, heads, kv_heads, ffn, rope_base, eps, bias, tied = SHAPES[shape]
    vocab_entries, _ = read_header(DATA / vocab_file)
    tokenizer = [raw for key, raw in vocab_entries.items() if key.startswith("tokenizer.")]
    c = Cursor(vocab_entries["tokenizer.ggml.tokens"])
    c.string()
    c.u32()
    c.u32()
    vocab = c.u64()
    kv = [kv_str("general.architecture", arch), kv_str("general.name", f"random {shape} {file_type}"),
          kv_u32("general.file_type", FILE_TYPES[file_type]), kv_u32(f"{arch}.context_length", 8192),
          kv_u32(f"{arch}.embedding_length", hidden), kv_u32(f"{arch}.block_count", layers),
          kv_u32(f"{arch}.feed_forward_length", ffn), kv_u32(f"{arch}.attention.head_count", heads),
          kv_u32(f"{arch}.attention.head_count_kv", kv_heads), kv_f32(f"{arch}.rope.freq_base", rope_base),
          kv_f32(f"{arch}.attention.layer_norm_rms_epsilon", eps)] + tokenizer
    experts = EXPERTS.get(shape)
    if experts:
        kv += [kv_u32(f"{arch}.expert_count", experts[0]), kv_u32(f"{arch}.expert_used_count", experts[1]),
               kv_u32(f"{arch}.expert_feed_forward_length", ffn)]
    head_dim = HEAD_DIM.get(shape)
    if head_dim:
        kv += [kv_u32(f"{arch}.attention.key_length", head_dim), kv_u32(f"{arch}.attention.value_length", head_dim)]
    if arch == "gpt-oss":
        kv += [kv_u32(f"{arch}.attention.sliding_window", 128), kv_str(f"{arch}.rope.scaling.type", "yarn"),
               kv_f32(f"{arch}.rope.scaling.factor", 32.0), kv_u32(f"{arch}.rope.scaling.original_context_length", 4096)]

    plan = [("token_embd.weight", vocab, hidden, 0, -1)]
    for i in range(layers):
        plan += [(f"blk.{i}.{name}", rows, cols, n, i)
                 for name, rows, cols, n in layer_tensors(arch, hidden, heads, kv_heads, ffn, bias, experts, head_dim)]
    plan.append(("output_norm.weight", 1, hidden, 0, -1))
    if not tied:
        plan.append(("output.weight", vocab, hidden, 0, -1))
    # Norms and the router stay f32, as llama.cpp's converter keeps them.
    typed = [(name, rows, cols, n, T.F32 if rows == 1 or "ffn_gate_inp" in name or name.endswith(".bias") else
              tensor_type(file_type, name, layer, layers, cols, tied)) for name, rows, cols, n, layer in plan]

    infos, offset = [], 0
    for name, rows, cols, n, qtype in typed:
        dims = [cols] if rows == 1 else [cols, rows] + ([n] if n else [])  # GGUF lists the fastest dimension first
        infos.append(pack_string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims) +
                     struct.pack("<IQ", qtype[0], offset))
        offset += -(-tensor_bytes(dims, qtype[0]) // ALIGNMENT) * ALIGNMENT
    head = b"GGUF" + struct.pack("<IQQ", 3, len(typed), len(kv)) + b"".join(kv) + b"".join(infos)
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        f.write(head + bytes(-len(head) % ALIGNMENT))
        for name, rows, cols, n, qtype in typed:
            if name.endswith(".bias") or "ffn_gate_inp" in name:
                # Router scores of a trained model's spread, so tokens use every expert.
                data = (0.02 * rng.standard_normal(rows * cols)).astype(np.float32).view(np.uint8)
            elif n:
                data = np.concatenate([random_tensor(rng, qtype, rows, cols).reshape(-1) for _ in range(n)])
            else:
                # A larger embedding keeps each token's identity in the
                # residual stream through random layers.
                data = random_tensor(rng, qtype, rows, cols, EMBEDDING_GAIN if name == "token_embd.weight" else 1.0)
            f.write(data.tobytes())
            f.write(bytes(-data.size % ALIGNMENT))


def weight_bytes_per_token(path):
    """Bytes of every matrix a decode step reads: all tensors but the
    embedding table, which is read whole only when it is also the output."""
    _, tensors = read_header(path)
    sizes = {name: tensor_bytes(dims, kind) for name, dims, kind in tensors}
    total = sum(sizes.values())
    if "output.weight" in sizes:
        total -= sizes["token_embd.weight"]
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES))
    parser.add_argument("--type", action="append", choices=sorted(FILE_TYPES))
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("."))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    if args.list:
        for name, spec in SHAPES.items():
            print(name, spec[0], f"hidden {spec[2]}, {spec[3]} layers")
        return
    if not args.shape or not args.type:
        parser.error("give --shape and --type (each may repeat)")
    args.out.mkdir(parents=True, exist_ok=True)
    for shape in args.shape:
        for file_type in args.type:
            path = args.out / f"random-{shape}-{file_type}.gguf"
            write_model(shape, file_type, path, args.seed)
            print(path, f"{path.stat().st_size / 2**20:.0f} MiB", flush=True)


if __name__ == "__main__":
    sys.exit(main())
