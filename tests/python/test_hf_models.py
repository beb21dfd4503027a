"""Tiny random-weight models written by Hugging Face transformers
(scripts/gen_hf_tiny_models.py): our logits against transformers' for each
architecture, f32 weights and f32 KV cache."""
import json

import numpy as np
import pytest

from conftest import DATA, run

ARCHS = ["llama", "llama3", "mistral", "qwen2", "gemma3"]


@pytest.mark.parametrize("arch", ARCHS)
def test_logits_match_transformers(tessera_bin, tmp_path, arch):
    model_dir = DATA / "hf-tiny" / arch
    expected = json.loads((model_dir / "expected.json").read_text())
    assert len(expected["cases"]) >= 3
    for case in expected["cases"]:
        out = tmp_path / "logits.f32"
        result = run([tessera_bin, "logits", "-m", model_dir, "--token-ids", ",".join(map(str, case["ids"])), "-o", out,
                      "--kv-dtype", "f32", "-t", "2"])
        assert result.returncode == 0, result.stderr
        ours = np.fromfile(out, dtype=np.float32).reshape(len(case["ids"]), -1)
        ref = np.fromfile(model_dir / case["logits"], dtype=np.float32).reshape(len(case["ids"]), -1)
        assert ours.shape == ref.shape
        assert np.abs(ours - ref).max() < 1e-4, f"{arch}: max |diff| {np.abs(ours - ref).max():.2e}"


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
