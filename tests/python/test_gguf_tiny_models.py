"""The GGUF forms of Qwen3, Phi-3, Gemma 2, Qwen3-MoE, Qwen2-MoE, Mixtral and gpt-oss: tiny
models of tests/data/hf-tiny converted by llama.cpp's own converter
(scripts/gen_gguf_tiny_models.py). Their largest logits after ten prompts
and their greedy continuations against llama.cpp's
(scripts/gen_gguf_tiny_goldens.py), and, where the file states everything
transformers computes with, every position's logits against transformers'."""
import json
import struct

import numpy as np
import pytest

from conftest import DATA, run
from test_hf_models import max_diff_from_transformers

GGUF = DATA / "gguf-tiny"
GOLDENS = ["qwen3", "phi3-partial", "gemma2", "qwen3moe", "qwen2moe", "mixtral", "gpt-oss", "gpt-oss-mxfp4"]
# Gemma 2's GGUF form holds no query_pre_attn_scalar (llama.cpp takes the
# head width, where the tiny model says 24), so it is compared with
# llama.cpp only. Phi-3's window is honoured as transformers does; llama.cpp
# ignores it, so "phi3" (window 6) is compared with transformers only.
# gpt-oss's GGUF form rounds YaRN's correction range to whole pairs, as
# llama.cpp does, where transformers keeps it fractional (truncate: false):
# compared with llama.cpp only.
SAME_AS_TRANSFORMERS = ["qwen3", "phi3", "phi3-partial", "qwen3moe", "qwen2moe", "mixtral"]


def goldens(name):
    return json.loads((GGUF / f"{name}.json").read_text())["cases"]


@pytest.mark.parametrize("name", GOLDENS)
def test_logits_after_each_prompt_match_llama_cpp(tessera_bin, tmp_path, name):
    cases = goldens(name)
    assert len(cases) == 10
    for case in cases:
        out = tmp_path / "logits.f32"
        result = run([tessera_bin, "logits", "-m", GGUF / f"{name}.gguf", "--token-ids",
                      ",".join(map(str, case["prompt_ids"])), "-o", out, "-t", "2"])
        assert result.returncode == 0, result.stderr
        logits = np.fromfile(out, dtype=np.float32).reshape(len(case["prompt_ids"]), -1)[-1]
        top = case["top_logits"]
        diff = np.abs(logits[top["ids"]] - np.array(top["logits"])).max()
        assert diff < 1e-3, (case["prompt"], diff)
        assert list(np.argsort(-logits, kind="stable")[:len(top["ids"])]) == top["ids"], case["prompt"]


@pytest.mark.parametrize("name", GOLDENS)
def test_greedy_continuations_match_llama_cpp(tessera_bin, name):
    identical = []
    for case in goldens(name):
        result = run([tessera_bin, "generate", "-m", GGUF / f"{name}.gguf", "-p", case["prompt"], "-n", "32",
                      "--temperature", "0", "--ignore-eos", "--print-ids", "-t", "2"])
        assert result.returncode == 0, result.stderr
        identical.append(json.loads(result.stdout) == case["tokens"])
    assert sum(identical) >= 9, identical


@pytest.mark.parametrize("name", SAME_AS_TRANSFORMERS)
def test_every_position_matches_transformers(tessera_bin, tmp_path, name):
    hf = DATA / "hf-tiny" / name
    for case in json.loads((hf / "expected.json").read_text())["cases"]:
        diff = max_diff_from_transformers(tessera_bin, tmp_path, GGUF / f"{name}.gguf", case, hf)
        assert diff < 1e-4, f"{name}: max |diff| {diff:.2e}"


def with_u32(tmp_path, name, key, value):
    """A copy of tiny model `name` whose u32 metadata `key` says `value`."""
    data = bytearray((GGUF / f"{name}.gguf").read_bytes())
    encoded = struct.pack("<Q", len(key)) + key.encode()
    at = data.find(encoded)
    assert at >= 0 and data.find(encoded, at + 1) < 0, key
    type_at = at + len(encoded)
    assert struct.unpack_from("<I", data, type_at)[0] == 4, "not a u32"  # GGUF value type 4: uint32
    struct.pack_into("<I", data, type_at + 4, value)
    path = tmp_path / f"{name}.gguf"
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("key,value,message", [
    ("qwen3moe.expert_used_count", 9, "experts used per token (9) must be between 1 and the expert count (8)"),
    ("qwen3moe.expert_used_count", 0, "experts used per token (0) must be between 1 and the expert count (8)"),
    ("qwen3moe.expert_count", 6, "tensor 'blk.0.ffn_gate_inp.weight' has shape [8, 64], expected [6, 64]"),
    ("qwen3moe.expert_count", 100000, "key 'qwen3moe.expert_count': 100000 is out of range"),
    ("qwen3moe.expert_feed_forward_length", 48, "tensor 'blk.0.ffn_gate_exps.weight' has shape [8, 32, 64], expected [8, 48, 64]"),
    ("qwen2moe.expert_shared_feed_forward_length", 48, "tensor 'blk.0.ffn_gate_shexp.weight' has shape [96, 64], expected [48, 64]"),
    ("qwen2moe.expert_shared_feed_forward_length", 0, "key 'qwen2moe.expert_shared_feed_forward_length': out of range"),
])
def test_inconsistent_experts_are_refused_by_name(tessera_bin, tmp_path, key, value, message):
    model = with_u32(tmp_path, key.split(".")[0], key, value)
    result = run([tessera_bin, "logits", "-m", model, "--token-ids", "5,6,7", "-o", tmp_path / "out.f32"])
    assert result.returncode == 1
    assert message.encode() in result.stderr, result.stderr
    assert str(model).encode() in result.stderr
