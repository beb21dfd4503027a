"""tessera quantize with a GGUF input: the written directory describes the
same model in Hugging Face form. Its config.json gives back the GGUF's
metadata; its tokenizer.json, read by the `tokenizers` library, encodes as
tessera encodes with the GGUF's own vocabulary; its weights are gguf-py's
dequantization of the GGUF (Llama's q/k rows back in Hugging Face's order),
quantized; and it computes what quantizing the GGUF at load computes."""
import json

import numpy as np
import pytest
from gguf import GGUFReader
from gguf.quants import dequantize
from safetensors.numpy import load_file
from tokenizers import Tokenizer

from conftest import DATA, run
from test_quantize import dequantize as dequantize_written


@pytest.fixture(scope="module")
def smollm2_a16w8(tessera_bin, smollm2, tmp_path_factory):
    out = tmp_path_factory.mktemp("gguf") / "smollm2-a16w8"
    result = run([tessera_bin, "quantize", "-m", smollm2, "--scheme", "a16w8", "-o", out])
    assert result.returncode == 0, result.stderr
    return out


def metadata(reader, key):
    field = reader.fields[key]
    value = field.parts[field.data[0]]
    return bytes(value).decode() if field.types[0].name == "STRING" else value[0]


def test_config_gives_back_the_gguf_metadata(smollm2, smollm2_a16w8):
    reader = GGUFReader(str(smollm2))
    config = json.loads((smollm2_a16w8 / "config.json").read_text())
    assert config["model_type"] == "llama"
    for hf_key, gguf_key in [("num_hidden_layers", "llama.block_count"), ("hidden_size", "llama.embedding_length"),
                             ("intermediate_size", "llama.feed_forward_length"),
                             ("num_attention_heads", "llama.attention.head_count"),
                             ("num_key_value_heads", "llama.attention.head_count_kv"),
                             ("max_position_embeddings", "llama.context_length")]:
        assert config[hf_key] == int(metadata(reader, gguf_key)), hf_key
    assert np.float32(config["rms_norm_eps"]) == metadata(reader, "llama.attention.layer_norm_rms_epsilon")
    assert np.float32(config["rope_theta"]) == metadata(reader, "llama.rope.freq_base")
    assert config["vocab_size"] == len(reader.fields["tokenizer.ggml.tokens"].data)
    assert config["quantization_config"]["scheme"] == "a16w8"
    tokenizer_config = json.loads((smollm2_a16w8 / "tokenizer_config.json").read_text())
    assert tokenizer_config["chat_template"] == metadata(reader, "tokenizer.chat_template")


def test_tokenizer_json_encodes_like_the_gguf(tessera_bin, smollm2, smollm2_a16w8):
    reference = Tokenizer.from_file(str(smollm2_a16w8 / "tokenizer.json"))
    vectors = (DATA / "tokenizer-vectors" / "ggml-vocab-starcoder.gguf.inp").read_text()
    texts = [t for t in vectors.split("\n__ggml_vocab_test__\n") if t]
    texts += ["<|im_start|>user\nHi<|im_end|>", "def f(x):\n\treturn x ** 2  # 12345", "日本語 🦙 ✅ naïve café"]
    mismatches = []
    for text in texts:
        result = run([tessera_bin, "tokenize", "--model", smollm2, "--parse-special", "--text", text])
        assert result.returncode == 0, result.stderr
        if json.loads(result.stdout) != reference.encode(text, add_special_tokens=False).ids:
            mismatches.append(text)
    assert not mismatches, mismatches
    assert len(texts) >= 40


def unpair_rotary_rows(w, heads):
    """llama.cpp's converter stores each head's rows as (d/2, 2) pairs of the
    Hugging Face (2, d/2) halves; this undoes it."""
    rows = w.shape[0]
    return w.reshape(heads, rows // heads // 2, 2, -1).swapaxes(1, 2).reshape(w.shape)


def test_weights_are_the_gguf_dequantized(smollm2, smollm2_a16w8):
    reader = GGUFReader(str(smollm2))
    heads, kv_heads = int(metadata(reader, "llama.attention.head_count")), int(metadata(reader, "llama.attention.head_count_kv"))
    gguf = {t.name: dequantize(t.data, t.tensor_type).reshape([int(d) for d in reversed(t.shape)]) for t in reader.tensors}
    written = load_file(smollm2_a16w8 / "model.safetensors")
    checked = 0
    for layer in (0, 17, 29):
        names = {"attn_q": ("self_attn.q_proj", heads), "attn_k": ("self_attn.k_proj", kv_heads),
                 "attn_v": ("self_attn.v_proj", 0), "ffn_down": ("mlp.down_proj", 0)}
        for g, (h, unpair) in names.items():
            want = gguf[f"blk.{layer}.{g}.weight"]
            if unpair:
                want = unpair_rotary_rows(want, unpair)
            back, steps = dequantize_written(written, f"model.layers.{layer}.{h}.weight", 8, 0)
            assert np.all(np.abs(back - want) <= 0.5 * steps * 1.0001 + 1e-7), (layer, g)
            checked += 1
        assert np.array_equal(written[f"model.layers.{layer}.input_layernorm.weight"], gguf[f"blk.{layer}.attn_norm.weight"])
    assert np.array_equal(written["model.embed_tokens.weight"], gguf["token_embd.weight"])
    assert checked == 12


def test_it_computes_what_quantizing_the_gguf_at_load_computes(tessera_bin, smollm2, smollm2_a16w8, tmp_path):
    ids = [1, 504, 3458, 282, 260, 1789, 30, 1096, 314, 216, 9, 16, 17, 2]
    logits = {}
    for name, model, extra in [("dir", smollm2_a16w8, []), ("gguf", smollm2, ["--quantize", "a16w8"])]:
        out = tmp_path / f"{name}.f32"
        result = run([tessera_bin, "logits", "-m", model, "--token-ids", *map(str, ids), "-o", out, "--kv-dtype", "f32",
                      "-t", "2", *extra])
        assert result.returncode == 0, result.stderr
        logits[name] = np.fromfile(out, dtype=np.float32).reshape(len(ids), -1)
    # The same quantized weights; only the rotary arithmetic (transformers'
    # against ggml's) and the order of q/k rows differ.
    assert np.array_equal(logits["dir"].argmax(-1), logits["gguf"].argmax(-1))
    spread = logits["gguf"].max() - logits["gguf"].min()
    assert np.abs(logits["dir"] - logits["gguf"]).max() < 1e-3 * spread


def test_gguf_without_a_hugging_face_form_is_refused(tessera_bin, gemma3, tmp_path):
    result = run([tessera_bin, "quantize", "-m", gemma3, "--scheme", "a16w8", "-o", tmp_path / "out"])
    assert result.returncode != 0
    assert b"gemma3" in result.stderr and b"Hugging Face" in result.stderr
    assert not (tmp_path / "out" / "model.safetensors").exists()


def test_damaged_gguf_is_refused_by_name(tessera_bin, smollm2, tmp_path):
    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(smollm2.read_bytes()[: 1 << 20])
    result = run([tessera_bin, "quantize", "-m", damaged, "--scheme", "a16w8", "-o", tmp_path / "out"])
    assert result.returncode != 0
    assert b"damaged.gguf" in result.stderr
    missing = run([tessera_bin, "quantize", "-m", tmp_path / "none.gguf", "--scheme", "a16w8", "-o", tmp_path / "out"])
    assert missing.returncode != 0 and b"none.gguf" in missing.stderr
