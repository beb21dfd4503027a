"""The engine on the real models against llama.cpp: greedy continuations
and perplexity (references from scripts/gen_generation_goldens.py), and the
generate command's behaviour."""
import json
import re

import numpy as np
import pytest

from conftest import DATA, model_level_models, run


# Golden file name -> model fixture (conftest.py).
MODELS = {"smollm2": "smollm2", "gemma3": "gemma3", "qwen2.5-coder": "qwen25_coder"}


def goldens(name):
    return json.loads((DATA / "generation-goldens" / f"{name}.json").read_text())


def cases(name):
    return [pytest.param(name, c, id=f"{name}-{i}") for i, c in enumerate(goldens(name)["cases"])]


ALL_CASES = [case for name in MODELS for case in cases(name)]


@pytest.mark.parametrize("name,case", ALL_CASES)
def test_greedy_tokens_match_llama_cpp(tessera_bin, request, name, case):
    model = request.getfixturevalue(MODELS[name])
    result = run([tessera_bin, "generate", "-m", model, "-p", case["prompt"], "-n", "32", "--temperature", "0",
                  "--ignore-eos", "--print-ids", "-t", "2"])
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    # Before llama.cpp's own two evaluation paths part, the reference is
    # unambiguous; past that point we hold to the batched one.
    agreed = case["llama_cpp_paths_agree_for"]
    assert got[:agreed] == case["tokens"][:agreed]
    assert got == case["tokens"]


@pytest.mark.parametrize("name,case", ALL_CASES)
def test_logits_after_prompt_match_llama_cpp(tessera_bin, request, tmp_path, name, case):
    # The engine follows llama.cpp's rounding step by step, so its largest
    # logits agree to float precision, not merely in their order.
    model = request.getfixturevalue(MODELS[name])
    out = tmp_path / "logits.f32"
    result = run([tessera_bin, "logits", "-m", model, "--token-ids", ",".join(map(str, case["prompt_ids"])),
                  "-o", out, "-t", "2"])
    assert result.returncode == 0, result.stderr
    logits = np.fromfile(out, dtype=np.float32).reshape(len(case["prompt_ids"]), -1)[-1]
    top = case["top_logits"]
    assert np.abs(logits[top["ids"]] - np.array(top["logits"])).max() < 1e-3
    assert list(np.argsort(-logits, kind="stable")[:len(top["ids"])]) == top["ids"]


@pytest.mark.parametrize("name", list(MODELS))
def test_perplexity_within_a_tenth_of_a_percent_of_llama_cpp(tessera_bin, request, name):
    model = request.getfixturevalue(MODELS[name])
    ref = goldens(name)["perplexity"]
    result = run([tessera_bin, "perplexity", "-m", model, "-f", DATA / ref["file"], "--ctx", str(ref["ctx"]),
                  "--chunks", str(ref["chunks"]), "-t", "2"])
    assert result.returncode == 0, result.stderr
    last = result.stdout.decode().strip().splitlines()[-1]
    ppl = float(re.search(r"PPL = ([0-9.]+)", last).group(1))
    assert abs(ppl - ref["value"]) / ref["value"] < 0.001, (ppl, ref["value"])


# Qwen2.5's keys carry offsets in the hundreds from their bias: one scale per
# token and head holds them only centred and rotated (uncentred: +13%). On
# four chunks its perplexity moves 0.7% between f16 and f32 caches alone, so
# it gets more room here; tests/bench/quant_accuracy.py measures the whole text.
@pytest.mark.parametrize("name,tolerance", model_level_models({"smollm2": 0.005, "gemma3": 0.005, "qwen2.5-coder": 0.015}).items())
def test_int8_kv_cache_perplexity_near_f16(tessera_bin, request, name, tolerance):
    model = request.getfixturevalue(MODELS[name])

    def ppl(kv_dtype):
        result = run([tessera_bin, "perplexity", "-m", model, "-f", DATA / "perplexity" / "gpl-3.0.txt", "--ctx", "512",
                      "--chunks", "4", "-t", "2", "--kv-dtype", kv_dtype])
        assert result.returncode == 0, result.stderr
        return float(re.search(r"PPL = ([0-9.]+)", result.stdout.decode().strip().splitlines()[-1]).group(1))

    f16, int8 = ppl("f16"), ppl("int8")
    assert abs(int8 - f16) / f16 < tolerance, (int8, f16)


def test_generate_prints_only_text_on_stdout(tessera_bin, smollm2):
    result = run([tessera_bin, "generate", "-m", smollm2, "-p", "The capital of France is", "-n", "8",
                  "--temperature", "0"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().startswith(" Paris")
    assert b"tok/s" in result.stderr and b"tok/s" not in result.stdout


def test_same_seed_same_text(tessera_bin, smollm2):
    args = [tessera_bin, "generate", "-m", smollm2, "-p", "Once upon a time", "-n", "24", "--temperature", "1.0",
            "--top-k", "0", "--top-p", "1.0", "--min-p", "0"]
    a = run(args + ["--seed", "7"]).stdout
    b = run(args + ["--seed", "7"]).stdout
    c = run(args + ["--seed", "8"]).stdout
    assert a == b
    assert a != c


def test_warmup_run_leaves_the_sampled_text_as_it_was(tessera_bin, smollm2):
    # The warm-up runs the prompt once and starts the sequence again with the
    # same seed: what is timed must be the run that would have happened.
    args = [tessera_bin, "generate", "-m", smollm2, "-p", "Once upon a time", "-n", "24", "--temperature", "1.0",
            "--top-k", "0", "--top-p", "1.0", "--min-p", "0", "--seed", "11", "--print-ids"]
    cold = run(args)
    warm = run(args + ["--warmup"])
    assert cold.returncode == 0 and warm.returncode == 0, warm.stderr
    assert len(json.loads(warm.stdout)) == 24
    assert warm.stdout == cold.stdout


def test_missing_model_is_a_clear_error(tessera_bin):
    result = run([tessera_bin, "generate", "-m", "/no/such.gguf", "-p", "hi"])
    assert result.returncode == 1
    assert b"/no/such.gguf" in result.stderr
