"""Tiny random-weight models written by Hugging Face transformers
(scripts/gen_hf_tiny_models.py): our logits against transformers' for each
architecture and config variant at every position of sequences of up to 512
tokens, f32 weights and f32 KV cache; checkpoints with a tensor nothing uses
or a flag that would change the computation are refused, naming it."""
import json
import re
import shutil
import struct

import numpy as np
import pytest

from conftest import DATA, run

ARCHS = ["llama", "llama3", "llama-bias", "mistral", "qwen2", "qwen3", "qwen3-bias", "phi3", "phi3-partial", "gemma2",
         "gemma3", "qwen3moe", "qwen2moe", "mixtral", "gpt-oss"]


def max_diff_from_transformers(tessera_bin, tmp_path, model, case, reference_dir):
    """Largest |logit difference| at any position of `case` (an expected.json
    case of `reference_dir`) between `model` and transformers."""
    out = tmp_path / "logits.f32"
    result = run([tessera_bin, "logits", "-m", model, "--token-ids", ",".join(map(str, case["ids"])), "-o", out,
                  "--kv-dtype", "f32", "-t", "2"])
    assert result.returncode == 0, result.stderr
    ours = np.fromfile(out, dtype=np.float32).reshape(len(case["ids"]), -1)
    ref = np.fromfile(reference_dir / case["logits"], dtype=np.float32).reshape(len(case["ids"]), -1)
    assert ours.shape == ref.shape
    return float(np.abs(ours - ref).max())


@pytest.mark.parametrize("arch", ARCHS)
def test_logits_match_transformers(tessera_bin, tmp_path, arch):
    model_dir = DATA / "hf-tiny" / arch
    expected = json.loads((model_dir / "expected.json").read_text())
    assert len(expected["cases"]) >= 3
    assert max(len(case["ids"]) for case in expected["cases"]) >= 512
    for case in expected["cases"]:
        diff = max_diff_from_transformers(tessera_bin, tmp_path, model_dir, case, model_dir)
        assert diff < 1e-4, f"{arch}: max |diff| {diff:.2e}"


def test_gpt_oss_mxfp4_checkpoint_matches_transformers(tessera_bin, tmp_path):
    """gpt-oss in the form openai ships it: MXFP4 experts (NAME_blocks,
    NAME_scales), which transformers dequantizes as it loads. The CPU
    multiplies MXFP4 blocks by Q8_0-rounded activations, as it does for a
    GGUF file, which moves logits of magnitude ~0.3 by up to ~1e-3 (the
    float-weight gpt-oss above stays within 1e-4); a misplaced nibble or
    exponent moves them by ~0.1. The repacking itself is compared exactly
    in tests/unit/mxfp4_repack_test.cc."""
    model_dir = DATA / "hf-tiny" / "gpt-oss-mxfp4"
    expected = json.loads((model_dir / "expected.json").read_text())
    assert "quantization_config" in json.loads((model_dir / "config.json").read_text())
    for case in expected["cases"]:
        diff = max_diff_from_transformers(tessera_bin, tmp_path, model_dir, case, model_dir)
        assert diff < 2e-3, f"max |diff| {diff:.2e}"


def test_inspect_reports_the_architecture(tessera_bin):
    result = run([tessera_bin, "inspect", DATA / "hf-tiny" / "gemma3"])
    assert result.returncode == 0, result.stderr
    assert b"architecture: gemma3_text" in result.stdout


def test_unsupported_architecture_is_named(tessera_bin, tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    for f in (DATA / "hf-tiny" / "llama").iterdir():
        (model_dir / f.name).write_bytes(f.read_bytes())
    config = json.loads((model_dir / "config.json").read_text())
    config["model_type"] = "mamba"
    (model_dir / "config.json").write_text(json.dumps(config))
    result = run([tessera_bin, "generate", "-m", model_dir, "-p", "hi", "-n", "1"])
    assert result.returncode == 1
    assert b"model_type 'mamba' is not supported" in result.stderr


def copy_model(name, tmp_path):
    model_dir = tmp_path / name
    shutil.copytree(DATA / "hf-tiny" / name, model_dir)
    return model_dir


def read_safetensors(path):
    data = path.read_bytes()
    header_len = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + header_len]), data[8 + header_len:]


def add_tensor(safetensors_path, name, shape=(4,), values=None):
    """Appends an f32 tensor (zeros unless `values`, raw bytes) to a safetensors file."""
    header, body = read_safetensors(safetensors_path)
    values = values if values is not None else bytes(4 * int(np.prod(shape)))
    header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [len(body), len(body) + len(values)]}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    safetensors_path.write_bytes(struct.pack("<Q", len(text)) + text + body + values)


def test_unused_tensor_is_refused_by_name(tessera_bin, tmp_path):
    model_dir = copy_model("llama", tmp_path)
    add_tensor(model_dir / "model.safetensors", "model.layers.0.mlp.extra_proj.weight")
    result = run([tessera_bin, "logits", "-m", model_dir, "--token-ids", "5,6,7", "-o", tmp_path / "l.f32"])
    assert result.returncode == 1
    assert b"tensor 'model.layers.0.mlp.extra_proj.weight' is not used" in result.stderr, result.stderr


def test_tied_output_is_accepted_only_as_a_copy_of_the_embedding(tessera_bin, tmp_path):
    """transformers ties lm_head to the embedding and ignores a stored one;
    a stored copy is accepted, a different matrix is refused by name."""
    for label, same in (("copy", True), ("different", False)):
        model_dir = copy_model("qwen2", tmp_path / label)
        weights = model_dir / "model.safetensors"
        header, body = read_safetensors(weights)
        begin, end = header["model.embed_tokens.weight"]["data_offsets"]
        embedding = body[begin:end] if same else bytes(end - begin)
        add_tensor(weights, "lm_head.weight", header["model.embed_tokens.weight"]["shape"], embedding)
        result = run([tessera_bin, "logits", "-m", model_dir, "--token-ids", "5,6,7", "-o", tmp_path / "l.f32"])
        if same:
            assert result.returncode == 0, result.stderr
        else:
            assert result.returncode == 1
            assert b"tensor 'lm_head.weight' is not used: the embeddings are tied" in result.stderr, result.stderr


@pytest.mark.parametrize("change,message", [
    ("dtype", rb"tensor 'model\.layers\.0\.mlp\.experts\.down_proj_scales' must be U8 \(MXFP4\)"),
    ("shape", rb"tensor 'model\.layers\.0\.mlp\.experts\.down_proj_scales' has shape \[4, 64, 1\], expected \[4, 64, 4\]")])
def test_malformed_mxfp4_experts_are_refused_by_name(tessera_bin, tmp_path, change, message):
    model_dir = copy_model("gpt-oss-mxfp4", tmp_path)
    weights = model_dir / "model.safetensors"
    header, body = read_safetensors(weights)
    entry = header["model.layers.0.mlp.experts.down_proj_scales"]
    if change == "dtype":
        entry["dtype"] = "I8"
    else:
        entry["shape"] = [4, 64, 1]
        entry["data_offsets"][1] = entry["data_offsets"][0] + 4 * 64
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    weights.write_bytes(struct.pack("<Q", len(text)) + text + body)
    result = run([tessera_bin, "logits", "-m", model_dir, "--token-ids", "5,6,7", "-o", tmp_path / "l.f32"])
    assert result.returncode == 1
    assert re.search(message, result.stderr), result.stderr


def test_biases_without_their_flag_are_refused(tessera_bin, tmp_path):
    """A Llama checkpoint with projection biases but attention_bias false
    would silently lose its biases; the first unused bias is named."""
    model_dir = copy_model("llama-bias", tmp_path)
    config = json.loads((model_dir / "config.json").read_text())
    config["attention_bias"] = False
    config["mlp_bias"] = False
    (model_dir / "config.json").write_text(json.dumps(config))
    result = run([tessera_bin, "logits", "-m", model_dir, "--token-ids", "5,6,7", "-o", tmp_path / "l.f32"])
    assert result.returncode == 1
    assert re.search(rb"tensor 'model\.layers\.\d+\.[a-z_.]+_proj\.bias' is not used", result.stderr), result.stderr


@pytest.mark.parametrize("flag,value,message", [
    ("hidden_act", "gelu", b"'hidden_act': gelu is not supported"),
    ("rope_scaling", {"rope_type": "longrope", "factor": 4.0}, b"rope_scaling type 'longrope' is not supported"),
    ("rope_scaling", {"rope_type": "yarn", "factor": 4.0}, b"rope_scaling (yarn) needs original_max_position_embeddings"),
    ("quantization_config", {"quant_method": "bitsandbytes"}, b"quantization_config.quant_method: 'bitsandbytes' checkpoints are not supported"),
    ("quantization_config", {"quant_method": "awq"}, b"quantization_config.bits: must be an integer"),
    ("partial_rotary_factor", 1.5, b"'partial_rotary_factor' must be in (0, 1]"),
])
def test_unhonoured_config_flag_is_refused_by_name(tessera_bin, tmp_path, flag, value, message):
    model_dir = copy_model("llama", tmp_path)
    config = json.loads((model_dir / "config.json").read_text())
    config[flag] = value
    (model_dir / "config.json").write_text(json.dumps(config))
    result = run([tessera_bin, "logits", "-m", model_dir, "--token-ids", "5,6,7", "-o", tmp_path / "l.f32"])
    assert result.returncode == 1
    assert message in result.stderr, result.stderr


@pytest.mark.parametrize("form", ["flat", "per_layer_type"])
def test_transformers_5_rope_parameters_give_the_same_logits(tessera_bin, tmp_path, form):
    # transformers 5 writes rope_theta inside rope_parameters (per layer type
    # for models whose layer types differ); the model computes the same.
    model_dir = copy_model("qwen3", tmp_path)
    config = json.loads((model_dir / "config.json").read_text())
    parameters = {"rope_type": "default", "rope_theta": config.pop("rope_theta")}
    config.pop("rope_scaling", None)
    config["rope_parameters"] = parameters if form == "flat" else {"full_attention": parameters}
    (model_dir / "config.json").write_text(json.dumps(config))
    case = json.loads((model_dir / "expected.json").read_text())["cases"][1]
    assert max_diff_from_transformers(tessera_bin, tmp_path, model_dir, case, model_dir) < 1e-4
