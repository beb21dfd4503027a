"""The daemon's OpenAI HTTP API, used through the real `openai` client."""
import json
import pathlib
import socket

import openai
import pytest

from conftest import run
from daemon import Daemon


@pytest.fixture(scope="module")
def client(daemon):
    return openai.OpenAI(base_url=daemon.base + "/v1", api_key="unused", max_retries=0)


def test_models_and_health(daemon, client):
    assert [m.id for m in client.models.list().data] == ["smollm2"]
    assert daemon.get("/health")[0] == 200
    status, model = daemon.post("/tokenize", {"model": "smollm2", "prompt": "Hello world"})
    assert status == 200 and model["count"] == len(model["tokens"]) and model["max_model_len"] > 0


def test_metrics_report_the_device_memory(daemon):
    total = daemon.metric("tessera:device_memory_total_bytes", model_name="smollm2", device="cpu:0")
    used = daemon.metric("tessera:device_memory_used_bytes", model_name="smollm2", device="cpu:0")
    assert total > 0 and 0 < used <= total


def test_completion_usage_matches_tokenizer(daemon, client):
    prompt = "The three primary colours are"
    r = client.completions.create(model="smollm2", prompt=prompt, max_tokens=10, temperature=0)
    _, tok = daemon.post("/tokenize", {"model": "smollm2", "prompt": prompt})
    assert r.usage.prompt_tokens == tok["count"]
    assert r.usage.completion_tokens == 10 and r.choices[0].finish_reason == "length"
    assert r.usage.total_tokens == r.usage.prompt_tokens + 10
    assert r.choices[0].text.strip()


def test_streaming_equals_non_streaming_chat(client):
    messages = [{"role": "user", "content": "Name three fruits."}]
    full = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=40, temperature=0)
    chunks = list(client.chat.completions.create(model="smollm2", messages=messages, max_tokens=40, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == full.choices[0].message.content
    assert chunks[-1].usage.completion_tokens == full.usage.completion_tokens
    assert chunks[-1].choices == []
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finish == [full.choices[0].finish_reason]


def test_sse_ends_with_done(daemon):
    import urllib.request
    req = urllib.request.Request(daemon.base + "/v1/completions", method="POST",
                                 data=json.dumps({"model": "smollm2", "prompt": "Hi", "max_tokens": 3, "stream": True,
                                                  "stream_options": {"include_usage": True}}).encode())
    body = urllib.request.urlopen(req, timeout=60).read().decode()
    events = [e for e in body.split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    assert json.loads(events[-2][6:])["usage"]["completion_tokens"] == 3


def test_n_and_seed_reproducibility(client):
    kwargs = dict(model="smollm2", prompt="Once upon a time", max_tokens=16, temperature=1.0, n=3, seed=1234)
    a = client.completions.create(**kwargs)
    b = client.completions.create(**kwargs)
    assert sorted(c.index for c in a.choices) == [0, 1, 2]
    assert [c.text for c in a.choices] == [c.text for c in b.choices]
    assert len({c.text for c in a.choices}) > 1, "choices of one request should differ"
    c = client.completions.create(**dict(kwargs, seed=99))
    assert [x.text for x in c.choices] != [x.text for x in a.choices]


def test_stop_string_ends_generation(client):
    base = client.completions.create(model="smollm2", prompt="Count: 1, 2, 3,", max_tokens=20, temperature=0)
    text = base.choices[0].text
    stop = text.strip()[2:4]  # a piece from the middle of the greedy continuation
    r = client.completions.create(model="smollm2", prompt="Count: 1, 2, 3,", max_tokens=20, temperature=0, stop=[stop])
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].text == text[: text.index(stop)]


def test_logprobs(client):
    r = client.completions.create(model="smollm2", prompt="The sky is", max_tokens=5, temperature=0, logprobs=3)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 5
    for token, value, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert value <= 0 and len(top) <= 3
        assert max(top.values()) == pytest.approx(value, abs=1e-5)  # greedy: the chosen token is the best
    assert "".join(lp.tokens) == r.choices[0].text
    chat = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Hi"}], max_tokens=4,
                                          temperature=0, logprobs=True, top_logprobs=2)
    content = chat.choices[0].logprobs.content
    assert len(content) >= 1 and all(len(c.top_logprobs) == 2 for c in content)
    assert all(bytes(c.bytes).decode("utf-8", "replace") == c.token for c in content)


def test_echo_and_token_prompts(daemon, client):
    r = client.completions.create(model="smollm2", prompt="Echo me", max_tokens=3, temperature=0, echo=True)
    assert r.choices[0].text.startswith("Echo me")
    _, tok = daemon.post("/tokenize", {"model": "smollm2", "prompt": "Echo me"})
    by_ids = client.completions.create(model="smollm2", prompt=tok["tokens"], max_tokens=3, temperature=0)
    assert r.choices[0].text == "Echo me" + by_ids.choices[0].text
    _, back = daemon.post("/detokenize", {"model": "smollm2", "tokens": tok["tokens"]})
    assert back["prompt"] == "Echo me"


def test_errors_are_openai_error_objects(daemon, client):
    cases = [
        ({"model": "smollm2", "prompt": "x", "bogus_field": 1}, 400, "bogus_field"),
        ({"model": "smollm2", "prompt": "x", "temperature": 5}, 400, "temperature"),
        ({"model": "smollm2", "prompt": "x", "n": 1000}, 400, "n"),
        ({"model": "smollm2", "prompt": "x", "stop": ["a"] * 100}, 400, "stop"),
        ({"model": "smollm2", "prompt": "x", "logprobs": 50}, 400, "logprobs"),
        ({"model": "smollm2", "prompt": "x", "max_tokens": 10**6}, 400, "max_tokens"),
        ({"model": "smollm2", "prompt": "x", "logit_bias": {"99999999": 1}}, 400, "logit_bias"),
        ({"model": "missing", "prompt": "x"}, 404, "model"),
    ]
    for body, status, param in cases:
        got, err = daemon.post("/v1/completions", body)
        assert got == status, (body, err)
        assert set(err["error"]) == {"message", "type", "param", "code"} and err["error"]["param"] == param
    status, text, _ = daemon.request("POST", "/v1/completions", raw=b"{not json")
    assert status == 400 and "error" in json.loads(text)
    status, text, _ = daemon.request("POST", "/v1/chat/completions", raw=b"[" * 1000 + b"]" * 1000)
    assert status == 400 and "nests deeper" in json.loads(text)["error"]["message"]
    status, _, _ = daemon.request("POST", "/v1/completions", raw=b"x" * (9 << 20))
    assert status == 413
    assert daemon.request("GET", "/v1/completions")[0] == 405
    assert daemon.request("GET", "/nowhere")[0] == 404
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "x"}],
                                       tools=[{"type": "function", "function": {"name": "f"}}])


def test_too_many_headers_are_refused(daemon):
    with socket.create_connection(("127.0.0.1", daemon.http_port)) as s:
        headers = "".join(f"X-H{i}: v\r\n" for i in range(200))
        s.sendall(f"GET /health HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode())
        assert s.recv(100).startswith(b"HTTP/1.1 431")


def test_http_and_cli_give_the_same_greedy_text(tessera_bin, smollm2, client):
    prompt = "The best way to learn a new language is"
    cli = run([tessera_bin, "generate", "--model", smollm2, "--prompt", prompt, "--max-tokens", "24", "--temperature", "0",
               "--ignore-eos"])
    assert cli.returncode == 0, cli.stderr
    r = client.completions.create(model="smollm2", prompt=prompt, max_tokens=24, temperature=0,
                                  extra_body={"ignore_eos": True})
    assert r.choices[0].text == cli.stdout.decode()[:-1]  # the CLI ends its output with a newline


def test_two_models_in_one_daemon(tessera_bin, smollm2, gemma3):
    template = pathlib.Path(__file__).resolve().parents[1] / "data" / "chat-templates" / "google-gemma-3-it.jinja"
    config = (f"models:\n  - name: small\n    path: {smollm2}\n    kv_cache: {{budget_mb: 32}}\n"
              f"  - name: gemma\n    path: {gemma3}\n    chat_template: {template}\n    kv_cache: {{budget_mb: 32}}\n")
    d = Daemon(tessera_bin, [], config)
    try:
        client = openai.OpenAI(base_url=d.base + "/v1", api_key="unused", max_retries=0)
        assert sorted(m.id for m in client.models.list().data) == ["gemma", "small"]
        for name in ("small", "gemma"):
            r = client.chat.completions.create(model=name, messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
            assert r.model == name and r.usage.completion_tokens >= 1
        _, small = d.post("/tokenize", {"model": "small", "prompt": "Hello"})
        _, gemma = d.post("/tokenize", {"model": "gemma", "prompt": "Hello"})
        assert small["tokens"] != gemma["tokens"]  # each request reached its own model
        assert d.metric("tessera:request_success_total", model_name="gemma", finished_reason="length") == 1
        # With several models a request must name one; the error lists them.
        status, body = d.post("/v1/completions", {"prompt": "Hi", "max_tokens": 2})
        assert status == 400
        assert body["error"]["param"] == "model" and "'model' is required" in body["error"]["message"]
        assert "small" in body["error"]["message"] and "gemma" in body["error"]["message"]
    finally:
        assert d.stop() == 0


def test_model_may_be_omitted_when_one_is_served(daemon):
    status, body = daemon.post("/v1/completions", {"prompt": "The capital of France is", "max_tokens": 3, "temperature": 0})
    assert status == 200 and body["model"] == "smollm2"
    status, body = daemon.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3})
    assert status == 200 and body["model"] == "smollm2"
    status, body = daemon.post("/v1/completions", {"model": "other", "prompt": "Hi", "max_tokens": 2})
    assert status == 404 and body["error"]["code"] == "model_not_found"


def test_serve_without_arguments_uses_the_embedded_default(tessera_bin):
    default_model = pathlib.Path.home() / ".cache" / "tessera" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not default_model.exists():
        pytest.skip("the embedded default names ~/.cache/tessera/models, which is not where the models are")
    d = Daemon(tessera_bin, [])  # only --host/--port/--grpc-port/--threads from the helper
    try:
        assert json.loads(d.get("/v1/models")[1])["data"][0]["id"] == "smollm2"
    finally:
        assert d.stop() == 0


def test_expect_100_continue_is_answered(daemon):
    body = json.dumps({"model": "smollm2", "prompt": "Hi", "max_tokens": 1}).encode()
    with socket.create_connection(("127.0.0.1", daemon.http_port), timeout=10) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
        assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        s.sendall(body)
        assert s.recv(100).startswith(b"HTTP/1.1 200 OK")


def test_repeated_prompt_hits_the_prefix_cache(daemon, client):
    messages = [{"role": "system", "content": "You are a careful assistant. " * 8},
                {"role": "user", "content": "Give me one word for happy."}]
    before = daemon.metric("tessera:prefix_cache_hits_total", model_name="smollm2")
    first = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=12, temperature=0)
    second = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=12, temperature=0)
    assert second.choices[0].message.content == first.choices[0].message.content
    hits = daemon.metric("tessera:prefix_cache_hits_total", model_name="smollm2") - before
    # Every full 16-token page of the repeated prompt but the one holding its last token.
    assert hits == (first.usage.prompt_tokens - 1) // 16 * 16
    # The answer says so too, as OpenAI's usage does.
    assert second.usage.prompt_tokens_details.cached_tokens == hits
    assert daemon.metric("tessera:prefix_cache_queries_total", model_name="smollm2") >= 2 * first.usage.prompt_tokens


def test_a_chat_template_path_that_does_not_exist_is_an_error(tessera_bin, smollm2):
    result = run([tessera_bin, "serve", "--model", smollm2, "--port", "0", "--grpc-port", "0",
                  "--chat-template", "/no/such/template.jinja"])
    assert result.returncode == 1
    assert b"'/no/such/template.jinja' is neither a readable file nor template text" in result.stderr
