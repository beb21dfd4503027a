"""Sampling defaults: a request that leaves temperature (top_p, top_k, min_p,
repetition_penalty) out gets the model's recommendation from its
generation_config.json, the config's sampling_defaults over it, and
OpenAI's defaults for the rest. On the tiny Hugging Face Llama: temperature 0
makes every seed give the same text, temperature 1 gives different texts."""
import json
import shutil

from conftest import DATA
from daemon import Daemon

SEEDS = range(6)


def tiny_model(tmp_path, **generation):
    """A copy of tests/data/hf-tiny/llama whose generation_config.json also holds `generation`."""
    model = tmp_path / "llama"
    shutil.copytree(DATA / "hf-tiny" / "llama", model)
    config = json.loads((model / "generation_config.json").read_text())
    config.update(generation)
    (model / "generation_config.json").write_text(json.dumps(config))
    return model


def serve(tessera_bin, model, sampling_defaults=None):
    yaml = f"models:\n  - name: tiny\n    path: {model}\n    kv_cache:\n      budget_mb: 16\n"
    if sampling_defaults is not None:
        yaml += f"    sampling_defaults: {json.dumps(sampling_defaults)}\n"
    return Daemon(tessera_bin, [], yaml)


def texts_by_seed(d, **fields):
    """The completion's text for each seed, the request leaving out what `fields` does not name."""
    out = set()
    for seed in SEEDS:
        status, body = d.post("/v1/completions", {"model": "tiny", "prompt": "hello world", "max_tokens": 12,
                                                  "seed": seed, "ignore_eos": True, **fields})
        assert status == 200, body
        out.add(body["choices"][0]["text"])
    return out


def test_the_models_recommended_temperature_applies_when_the_request_leaves_it_out(tessera_bin, tmp_path):
    d = serve(tessera_bin, tiny_model(tmp_path, temperature=0.0))
    try:
        assert len(texts_by_seed(d)) == 1  # greedy, whatever the seed
        assert len(texts_by_seed(d, temperature=1.0)) > 1  # the request's own value wins
        assert "sampling defaults: temperature 0" in d.log_text()
    finally:
        assert d.stop() == 0


def test_the_config_overrides_the_model_and_can_ignore_it(tessera_bin, tmp_path):
    model = tiny_model(tmp_path, temperature=0.0, top_k=1)
    for overrides in ({"temperature": 1.0, "top_k": 0}, {"from_model": False}):
        d = serve(tessera_bin, model, overrides)
        try:
            assert len(texts_by_seed(d)) > 1, overrides
        finally:
            assert d.stop() == 0
    d = serve(tessera_bin, tiny_model(tmp_path / "plain"), {"top_k": 1})
    try:
        assert len(texts_by_seed(d)) == 1  # top_k 1 from the config alone: greedy
    finally:
        assert d.stop() == 0


def test_without_a_recommendation_sampling_is_openais_temperature_1(tessera_bin, tmp_path):
    d = serve(tessera_bin, tiny_model(tmp_path))
    try:
        assert len(texts_by_seed(d)) > 1
        assert "sampling defaults: none" in d.log_text()
    finally:
        assert d.stop() == 0


def test_an_unusable_recommendation_is_left_out_and_the_model_still_loads(tessera_bin, tmp_path):
    d = serve(tessera_bin, tiny_model(tmp_path, temperature=0.0, top_p=7, top_k="many"))
    try:
        assert len(texts_by_seed(d)) == 1  # the usable temperature still applies
        log = d.log_text()
        assert "generation_config.json: top_p 7" in log and "outside (0, 1]" in log
        assert "generation_config.json: top_k is not an integer" in log
    finally:
        assert d.stop() == 0


def test_a_sampling_default_outside_its_range_is_a_config_error(tessera_bin, tmp_path):
    from conftest import run
    config = tmp_path / "bad.yaml"
    config.write_text(f"models:\n  - name: tiny\n    path: {tiny_model(tmp_path)}\n    sampling_defaults: {{top_p: 0}}\n")
    r = run([tessera_bin, "serve", "--config", config, "--port", "0"], timeout=60)
    assert r.returncode != 0
    assert b"sampling_defaults.top_p" in r.stderr + r.stdout
