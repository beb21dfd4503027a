"""The tessera binary as a user runs it: inspect and tokenize."""
import json
import os
import re

import pytest

from conftest import DATA, run


def test_inspect_smollm2(tessera_bin, smollm2):
    result = run([tessera_bin, "inspect", smollm2])
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert "architecture: llama" in out
    assert re.search(r"\bblock_count\s+30\n", out)
    assert "bpe (byte-level), 49152 tokens" in out
    assert "pre-tokenizer smollm" in out
    assert "tensors: 272 (F32 x61, Q4_1 x210, Q8_0 x1)" in out


def test_inspect_gemma3(tessera_bin, gemma3):
    result = run([tessera_bin, "inspect", gemma3])
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert "architecture: gemma3" in out
    assert re.search(r"attention\.sliding_window\s+512\n", out)
    assert "sentencepiece, 262144 tokens" in out
    assert "Q4_K" in out and "Q6_K" in out


@pytest.mark.parametrize("name,fragment", [
    ("bad_magic.gguf", "bad magic"),
    ("tensor_overlap.gguf", "overlaps"),
    ("alignment_not_power_of_two.gguf", "not a power of two"),
])
def test_inspect_bad_file_exits_1_with_one_clear_line(tessera_bin, name, fragment):
    result = run([tessera_bin, "inspect", DATA / "malformed" / name])
    assert result.returncode == 1
    assert result.stdout == b""
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert name in lines[0] and fragment in lines[0]


def test_inspect_missing_file(tessera_bin):
    result = run([tessera_bin, "inspect", "/no/such/model.gguf"])
    assert result.returncode == 1
    assert b"/no/such/model.gguf" in result.stderr


def golden_rows(name, limit):
    with open(DATA / "tokenizer-goldens" / f"{name}.jsonl") as f:
        rows = [json.loads(line) for line in f]
    # Command-line arguments cannot carry NUL bytes.
    return [r for r in rows if "00" not in [r["text_hex"][i:i + 2] for i in range(0, len(r["text_hex"]), 2)]][:limit]


@pytest.mark.parametrize("model_fixture,golden", [("smollm2", "smollm2"), ("gemma3", "gemma3")])
def test_tokenize_prints_llama_cpp_ids(tessera_bin, request, model_fixture, golden):
    model = request.getfixturevalue(model_fixture)
    for row in golden_rows(golden, 25):
        text = bytes.fromhex(row["text_hex"])
        if not text:
            continue
        result = run([tessera_bin, "tokenize", "--model", model, "--text", text])
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == row["plain"], text
        special = run([tessera_bin, "tokenize", "--model", model, "--text", text, "--add-special", "--parse-special"])
        assert json.loads(special.stdout) == row["special"], text


def test_tokenize_hf_directory(tessera_bin):
    expected = json.loads((DATA / "hf" / "expected.json").read_text())
    probe = expected["tokenizers"]["tiny-sharded"][0]
    result = run([tessera_bin, "tokenize", "--model", DATA / "hf" / "tiny-sharded", "--text", probe["text"],
                  "--parse-special"])
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == probe["ids"]


def test_tokenize_requires_a_model(tessera_bin):
    result = run([tessera_bin, "tokenize", "--text", "hi"])
    assert result.returncode != 0
    assert b"--model" in result.stderr


def test_inspect_hf_directory(tessera_bin):
    result = run([tessera_bin, "inspect", DATA / "hf" / "tiny-sharded"])
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert "format: Hugging Face, 2 safetensors file(s)" in out
    assert re.search(r"num_hidden_layers\s+1\n", out)
    assert "tokenizer: bpe (byte-level), 400 tokens" in out
    assert "tensors: 4 (F16 x1, F32 x3)" in out


def test_inspect_safetensors_file(tessera_bin):
    result = run([tessera_bin, "inspect", DATA / "hf" / "tiny-sharded" / "model-00001-of-00002.safetensors"])
    assert result.returncode == 0, result.stderr
    assert b"format: safetensors, 1 metadata entries" in result.stdout
    assert b"tensors: 2 (F16 x1, F32 x1)" in result.stdout
    bad = run([tessera_bin, "inspect", DATA / "malformed" / "overlap.safetensors"])
    assert bad.returncode == 1 and b"overlaps" in bad.stderr


@pytest.mark.parametrize("device,message", [
    ("tpu:0", b"device 'tpu:0': expected cpu, cuda, cuda:N, hip:N or xpu:N"),
    ("cpu:3", b"device cpu:3: not present"),
    ("hip:0", b"device hip:0: this build has no backend for it (no libtessera-backend-hip.so found)"),
])
def test_unusable_device_is_a_clear_error(tessera_bin, smollm2, tmp_path, device, message):
    # An empty plugin directory: the HIP plugin, where this build has one,
    # is not found (test_backends.py covers the plugin finding no device).
    env = dict(os.environ, TESSERA_BACKEND_DIR=str(tmp_path))
    result = run([tessera_bin, "generate", "-m", smollm2, "-p", "hi", "-n", "1", "--device", device], env=env)
    assert result.returncode == 1
    assert message in result.stderr, result.stderr
