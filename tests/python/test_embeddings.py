"""POST /v1/embeddings: a served decoder's final hidden states, pooled as the
model is configured, against the same pooling of transformers' hidden
states (tests/data/hf-tiny/*/embeddings.json: recovered from the logits
transformers computed, by scripts/gen_embedding_goldens.py), through the
openai client unmodified."""
import base64
import json

import numpy as np
import openai
import pytest

from conftest import DATA
from daemon import Daemon

MODELS = ("llama", "qwen3", "gemma3")


@pytest.fixture(scope="module")
def served(tessera_bin, smollm2):
    config = "models:\n"
    for name in MODELS:
        path = DATA / "hf-tiny" / name
        # An f32 cache, as the logits are held to transformers (tests/python/test_hf_models.py).
        config += (f"  - name: {name}-mean\n    path: {path}\n    kv_cache: {{budget_mb: 16, dtype: f32}}\n"
                   f"    embeddings: {{pooling: mean, normalize: false}}\n"
                   f"  - name: {name}-last\n    path: {path}\n    kv_cache: {{budget_mb: 16, dtype: f32}}\n"
                   f"    embeddings: {{pooling: last, only: true}}\n")
    config += f"  - name: smollm2\n    path: {smollm2}\n    kv_cache: {{budget_mb: 32}}\n"
    d = Daemon(tessera_bin, [], config)
    yield d, openai.OpenAI(base_url=d.base + "/v1", api_key="unused", max_retries=0)
    assert d.stop() == 0


@pytest.mark.parametrize("name", MODELS)
def test_pooled_hidden_states_match_transformers(served, name):
    _, client = served
    golden = json.loads((DATA / "hf-tiny" / name / "embeddings.json").read_text())
    inputs = [case["ids"] for case in golden["cases"]]
    mean = client.embeddings.create(model=f"{name}-mean", input=inputs, encoding_format="float")
    last = client.embeddings.create(model=f"{name}-last", input=inputs, encoding_format="float")
    assert mean.usage.prompt_tokens == sum(len(i) for i in inputs)
    for case, m, l in zip(golden["cases"], mean.data, last.data):
        assert np.abs(np.array(m.embedding) - case["mean"]).max() < 1e-4, len(case["ids"])
        unit = np.array(case["last"]) / np.linalg.norm(case["last"])
        assert np.abs(np.array(l.embedding) - unit).max() < 1e-4, len(case["ids"])


def test_base64_carries_the_same_floats(served):
    d, _ = served
    body = {"model": "smollm2", "input": ["The quick brown fox", "jumps over the lazy dog"]}
    _, plain = d.post("/v1/embeddings", body)
    _, packed = d.post("/v1/embeddings", dict(body, encoding_format="base64"))
    for p, q in zip(plain["data"], packed["data"]):
        assert np.frombuffer(base64.b64decode(q["embedding"]), dtype="<f4").tolist() == pytest.approx(p["embedding"], abs=0)
        assert len(p["embedding"]) == 576 and abs(np.linalg.norm(p["embedding"]) - 1) < 1e-5


def test_an_input_gives_the_same_vector_alone_and_in_a_batch(served):
    _, client = served
    texts = ["alpha beta gamma " * 20, "short", "a third, different input"]
    together = client.embeddings.create(model="smollm2", input=texts).data
    for text, e in zip(texts, together):
        assert client.embeddings.create(model="smollm2", input=text).data[0].embedding == e.embedding


def test_an_embeddings_only_model_refuses_generation(served):
    d, _ = served
    status, body = d.post("/v1/completions", {"model": "llama-last", "prompt": [5, 6, 7], "max_tokens": 2})
    assert status == 400 and "embeddings only" in body["error"]["message"], body


@pytest.mark.parametrize("extra, field", [
    ({"input": []}, "input"),
    ({"input": [[]]}, "input"),
    ({"input": [1 << 30]}, "input"),
    ({"input": "x", "dimensions": 8}, "dimensions"),
    ({"input": "x", "encoding_format": "int8"}, "encoding_format"),
    ({"input": ["x"] * 257}, "input"),
    ({"input": "x", "extra": 1}, "extra"),
])
def test_bad_requests_get_a_400_naming_the_field(served, extra, field):
    d, _ = served
    status, body = d.post("/v1/embeddings", {"model": "smollm2", **extra})
    assert status == 400 and body["error"]["param"] == field, body
