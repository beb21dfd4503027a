"""tessera quantize on the tiny Hugging Face models: the written checkpoint
read back with the safetensors library and dequantized by its documented
layout (models/quantize_checkpoint.h) is each original weight rounded to
the nearest level of its group's grid; it loads without re-quantizing and gives the logits that
quantizing at load gives; damaged checkpoints are refused by name."""
import json
import re
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from conftest import DATA, run

LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def dequantize(tensors, name, bits, group):
    q = tensors[name]
    scales = tensors[name + "_scale"]
    if bits == 8:
        values = q.astype(np.float32)
        zeros = np.zeros_like(scales)
    else:
        low = (q & 0x0F).astype(np.int8)
        high = (q >> 4).astype(np.int8)
        nibbles = np.stack([low, high], axis=-1).reshape(q.shape[0], -1)
        values = np.where(nibbles >= 8, nibbles - 16, nibbles).astype(np.float32)
        zeros = tensors.get(name + "_zero_point", np.zeros(scales.shape, np.int8)).astype(np.float32)
    cols = values.shape[1]
    group = cols if group == 0 else group
    groups = np.arange(cols) // group
    return scales[:, groups] * (values - zeros[:, groups]), scales[:, groups]


def grid_ends(tensors, name, bits, group):
    """Each weight's group's lowest and highest level."""
    scales = tensors[name + "_scale"]
    cols = tensors[name].shape[1] * (2 if bits == 4 else 1)
    groups = np.arange(cols) // (cols if group == 0 else group)
    if bits == 8:
        return -127 * scales[:, groups], 127 * scales[:, groups]
    zeros = tensors.get(name + "_zero_point", np.zeros(scales.shape, np.int8)).astype(np.float32)[:, groups]
    return scales[:, groups] * (-8 - zeros), scales[:, groups] * (7 - zeros)


def quantize(tessera_bin, model_dir, out, scheme, *extra):
    result = run([tessera_bin, "quantize", "-m", model_dir, "--scheme", scheme, "-o", out, *extra])
    assert result.returncode == 0, result.stderr
    return result


def logits(tessera_bin, model_dir, ids, out, *extra):
    result = run([tessera_bin, "logits", "-m", model_dir, "--token-ids", ",".join(map(str, ids)), "-o", out,
                  "--kv-dtype", "f32", "-t", "2", *extra])
    assert result.returncode == 0, result.stderr
    return np.fromfile(out, dtype=np.float32).reshape(len(ids), -1)


@pytest.mark.parametrize("scheme,bits,group", [("a16w8", 8, 0), ("a16w4", 4, 32), ("a16w4", 4, 64), ("da8w8", 8, 0)])
def test_quantized_checkpoint_round_trips(tessera_bin, tmp_path, scheme, bits, group):
    source = DATA / "hf-tiny" / "llama"
    last_layer = json.loads((source / "config.json").read_text())["num_hidden_layers"] - 1
    final_group = 32 if scheme == "a16w4" else group  # a16w4's last layer: groups of 32 (quant/schemes.h)
    out = tmp_path / scheme
    extra = ["--group", str(group)] if scheme == "a16w4" else []
    result = quantize(tessera_bin, source, out, scheme, *extra, "--report")
    assert b"model.layers.0.self_attn.q_proj.weight" in result.stdout

    config = json.loads((out / "config.json").read_text())
    q = config["quantization_config"]
    assert q["quant_method"] == "tessera" and q["scheme"] == scheme
    assert q["weights"] == {"bits": bits, "group_size": group, "symmetric": bits == 8}
    assert q["final_layer"] == {"bits": bits, "group_size": final_group, "symmetric": bits == 8}
    assert (out / "tokenizer.json").read_bytes() == (source / "tokenizer.json").read_bytes()

    original = load_file(source / "model.safetensors")
    written = load_file(out / "model.safetensors")
    for name, w in original.items():
        if any(f"{p}.weight" in name for p in LINEAR):
            g = final_group if f"layers.{last_layer}." in name else group
            assert written[name + "_scale"].shape[1] == (1 if g == 0 else w.shape[1] // g), name
            back, steps = dequantize(written, name, bits, g)
            # 4-bit groups may fit a grid that ends inside their range
            # (quant/int_weights.h, RangeFit): values beyond take its end.
            nearest = np.clip(w, *grid_ends(written, name, bits, g))
            assert np.all(np.abs(back - nearest) <= 0.5 * steps * 1.0001 + 1e-7), name
        elif name != "lm_head.weight":
            assert np.array_equal(written[name], w), name
    head_source = original.get("lm_head.weight", original["model.embed_tokens.weight"])
    head, steps = dequantize(written, "lm_head.weight", 8, 0)
    assert np.all(np.abs(head - head_source) <= 0.5 * steps * 1.0001 + 1e-7)

    ids = [1, 17, 42, 7, 99, 250, 3, 12]
    stored = logits(tessera_bin, out, ids, tmp_path / "stored.f32")
    at_load = logits(tessera_bin, source, ids, tmp_path / "at_load.f32", "--quantize", scheme, *(
        ["--group-size", str(group)] if scheme == "a16w4" else []))
    assert np.array_equal(stored, at_load)
    exact = logits(tessera_bin, source, ids, tmp_path / "exact.f32")
    assert np.abs(stored - exact).max() < (0.02 if bits == 8 else 0.12) * np.abs(exact).max()
    assert np.abs(stored - exact).max() > 0  # the weights did change


def test_activation_aware_scaling_folds_exactly(tessera_bin, tmp_path):
    """--method awq multiplies input channels by s and folds 1/s upstream:
    into the norms, up's rows, and v's rows. Under grouped queries (4 query
    heads, 2 value heads here) the query heads that read one value head share
    its scales. The folds are exact, so the logits stay as close to the float
    model's as rounding alone leaves them."""
    source = DATA / "hf-tiny" / "llama"
    out = tmp_path / "awq"
    result = quantize(tessera_bin, source, out, "a16w8", "--method", "awq",
                      "--calib", DATA / "calibration" / "apache-2.0.txt", "--report")
    alphas = {k.decode(): float(a) for k, a in re.findall(rb"^(attention/\d+)\s+([\d.]+)", result.stdout, re.M)}
    assert len(alphas) == 3 and max(alphas.values()) > 0, result.stdout

    config = json.loads((source / "config.json").read_text())
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    head_dim = config["head_dim"]
    original, written = load_file(source / "model.safetensors"), load_file(out / "model.safetensors")
    for layer in range(3):
        name = f"model.layers.{layer}.self_attn.o_proj.weight"
        o = original[name].astype(np.float64)
        back, _ = dequantize(written, name, 8, 0)
        s = (back * o).sum(axis=0) / (o * o).sum(axis=0)  # each column's scale, by least squares
        per_head = s.reshape(kv_heads, heads // kv_heads, head_dim)
        assert np.allclose(per_head, per_head[:, :1, :], rtol=0.01), name
        if alphas[f"attention/{layer}"] > 0:
            assert np.ptp(s) > 0.05, name

    ids = [1, 17, 42, 7, 99, 250, 3, 12]
    stored = logits(tessera_bin, out, ids, tmp_path / "awq.f32")
    exact = logits(tessera_bin, source, ids, tmp_path / "exact.f32")
    assert np.abs(stored - exact).max() < 0.02 * np.abs(exact).max()


def test_quantized_checkpoint_refuses_a_second_quantization(tessera_bin, tmp_path):
    out = tmp_path / "q"
    quantize(tessera_bin, DATA / "hf-tiny" / "llama", out, "a16w8")
    result = run([tessera_bin, "generate", "-m", out, "-p", "hi", "-n", "1", "--quantize", "a16w4"])
    assert result.returncode == 1
    assert b"already quantized" in result.stderr


def damaged(tessera_bin, tmp_path, edit_config=None, edit_tensors=None):
    out = tmp_path / "q"
    quantize(tessera_bin, DATA / "hf-tiny" / "llama", out, "a16w4", "--group", "32")
    if edit_config:
        config = json.loads((out / "config.json").read_text())
        edit_config(config["quantization_config"])
        (out / "config.json").write_text(json.dumps(config))
    if edit_tensors:
        tensors = load_file(out / "model.safetensors")
        edit_tensors(tensors)
        save_file(tensors, out / "model.safetensors")
    result = run([tessera_bin, "generate", "-m", out, "-p", "hi", "-n", "1"])
    assert result.returncode == 1
    return result.stderr.decode()


def test_damaged_checkpoints_are_refused_by_name(tessera_bin, tmp_path):
    name = "model.layers.0.self_attn.q_proj.weight"
    err = damaged(tessera_bin, tmp_path, edit_config=lambda q: q["weights"].update(bits=8, symmetric=True, group_size=0))
    assert "holds 4-bit weights but quantization_config says 8" in err
    shutil.rmtree(tmp_path / "q")
    err = damaged(tessera_bin, tmp_path, edit_config=lambda q: q["weights"].update(group_size=48))
    assert "group_size" in err
    shutil.rmtree(tmp_path / "q")
    err = damaged(tessera_bin, tmp_path, edit_config=lambda q: q.update(quant_method="awq_marlin"))
    assert "awq_marlin" in err
    shutil.rmtree(tmp_path / "q")
    err = damaged(tessera_bin, tmp_path, edit_tensors=lambda t: t.pop(name + "_scale"))
    assert f"'{name}_scale' is missing" in err
    shutil.rmtree(tmp_path / "q")
    err = damaged(tessera_bin, tmp_path, edit_tensors=lambda t: t.update({name + "_scale": t[name + "_scale"][:, :1].copy()}))
    assert f"'{name}_scale' has shape" in err
    shutil.rmtree(tmp_path / "q")
    err = damaged(tessera_bin, tmp_path, edit_tensors=lambda t: t.update({name: t[name][:, :-1].copy()}))
    assert f"'{name}' has shape" in err
    shutil.rmtree(tmp_path / "q")

    def bad_scale(t):
        t[name + "_scale"][0, 0] = np.nan
    err = damaged(tessera_bin, tmp_path, edit_tensors=bad_scale)
    assert "not finite" in err


def test_unknown_scheme_is_refused(tessera_bin, tmp_path):
    result = run([tessera_bin, "quantize", "-m", DATA / "hf-tiny" / "llama", "--scheme", "w3", "-o", tmp_path / "q"])
    assert result.returncode != 0
    assert b"w3" in result.stderr


@pytest.mark.parametrize("name", ["awq", "gptq", "gptq-actorder"])
def test_published_checkpoints_compute_with_their_defined_weights(tessera_bin, tmp_path, name):
    """AutoAWQ / AutoGPTQ checkpoints (scripts/gen_awq_gptq_fixtures.py) give the logits of the float model
    holding the weights their format defines, up to the 16-bit rounding of the activations."""
    packed = DATA / "hf-quant" / name
    reference = tmp_path / "reference"
    shutil.copytree(DATA / "hf-tiny" / "llama", reference)
    tensors = load_file(reference / "model.safetensors")
    tensors.update(load_file(packed / "expected.safetensors"))
    save_file(tensors, reference / "model.safetensors")
    ids = [1, 17, 42, 7, 99, 250, 3, 12, 5, 300]
    got = logits(tessera_bin, packed, ids, tmp_path / "packed.f32")
    want = logits(tessera_bin, reference, ids, tmp_path / "reference.f32")
    assert np.abs(got - want).max() < 1e-3 * np.abs(want).max()


def test_published_checkpoint_damage_is_named(tessera_bin, tmp_path):
    model = tmp_path / "gptq"
    shutil.copytree(DATA / "hf-quant" / "gptq-actorder", model)
    tensors = load_file(model / "model.safetensors")
    g_idx = tensors["model.layers.1.mlp.down_proj.g_idx"]
    g_idx[:] = 0
    save_file(tensors, model / "model.safetensors")
    result = run([tessera_bin, "generate", "-m", model, "-p", "hi", "-n", "1"])
    assert result.returncode == 1
    assert b"model.layers.1.mlp.down_proj.weight': g_idx does not give every group 32 inputs" in result.stderr
    config = json.loads((model / "config.json").read_text())
    config["quantization_config"]["bits"] = 3
    (model / "config.json").write_text(json.dumps(config))
    result = run([tessera_bin, "generate", "-m", model, "-p", "hi", "-n", "1"])
    assert result.returncode == 1
    assert b"3-bit gptq checkpoints are not supported" in result.stderr


def test_report_gives_the_perplexity_before_and_after(tessera_bin, tmp_path):
    source = DATA / "hf-tiny" / "llama"
    out = tmp_path / "a16w4"
    text = DATA / "perplexity" / "gpl-3.0.txt"
    eval_args = ["--eval-ctx", "64", "--eval-chunks", "3"]
    result = quantize(tessera_bin, source, out, "a16w4", "--group", "32", "--report", "--eval", text, *eval_args)
    line = [l for l in result.stdout.decode().splitlines() if l.startswith("perplexity")][-1]
    before, after = (float(x) for x in re.findall(r"(?:before|after) ([0-9.]+)", line))

    def ppl(model):
        r = run([tessera_bin, "perplexity", "-m", model, "-f", text, "--ctx", "64", "--chunks", "3"])
        assert r.returncode == 0, r.stderr
        return float(re.search(r"PPL = ([0-9.]+)", r.stdout.decode()).group(1))

    assert before == pytest.approx(ppl(source), rel=1e-4)
    assert after == pytest.approx(ppl(out), rel=1e-4)
    assert before != after
    assert "3 chunks" in line


def test_report_without_text_says_how_to_get_the_perplexity(tessera_bin, tmp_path):
    result = quantize(tessera_bin, DATA / "hf-tiny" / "llama", tmp_path / "out", "a16w8", "--report")
    assert b"--eval FILE" in result.stderr
    assert b"perplexity (" not in result.stdout
