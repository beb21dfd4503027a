"""Details of the OpenAI API that clients rely on: stream options, the system
fingerprint, fields SDKs send by default, and vLLM's output extensions."""
import json
import re
import socket
import urllib.request

import openai
import pytest

from daemon import Daemon


@pytest.fixture(scope="module")
def client(daemon):
    return openai.OpenAI(base_url=daemon.base + "/v1", api_key="unused", max_retries=0)


def sse_payloads(daemon, path, body):
    req = urllib.request.Request(daemon.base + path, method="POST", data=json.dumps(dict(body, stream=True)).encode())
    events = [e for e in urllib.request.urlopen(req, timeout=60).read().decode().split("\n\n") if e]
    assert events[-1] == "data: [DONE]"
    return [json.loads(e[6:]) for e in events[:-1]]


@pytest.mark.parametrize("path, body", [
    ("/v1/completions", {"prompt": "Hi", "max_tokens": 4}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}),
])
def test_usage_is_streamed_only_when_asked_for(daemon, path, body):
    body = dict(body, model="smollm2", ignore_eos=True)
    plain = sse_payloads(daemon, path, body)
    # Code that reads chunk.choices[0] on every chunk must not meet an empty one.
    assert all(p["choices"] and "usage" not in p for p in plain)
    asked = sse_payloads(daemon, path, dict(body, stream_options={"include_usage": True}))
    assert all("usage" not in p for p in asked[:-1])
    assert asked[-1]["choices"] == [] and asked[-1]["usage"]["completion_tokens"] == 4
    continuous = sse_payloads(daemon, path, dict(body, stream_options={"include_usage": True, "continuous_usage_stats": True}))
    counts = [p["usage"]["completion_tokens"] for p in continuous]
    assert counts == sorted(counts) and counts[-1] == 4 and counts[0] < 4
    assert all(p["usage"]["prompt_tokens"] == asked[-1]["usage"]["prompt_tokens"] for p in continuous)


def test_an_unknown_stream_option_is_named(daemon):
    status, body = daemon.post("/v1/completions", {"model": "smollm2", "prompt": "Hi", "stream": True,
                                                   "stream_options": {"include_usage": True, "frequency": 2}})
    assert status == 400 and "stream_options.frequency" in body["error"]["message"]


def test_system_fingerprint_is_stable_for_a_model(client):
    a = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Hi"}], max_tokens=2)
    b = client.completions.create(model="smollm2", prompt="Hi", max_tokens=2)
    assert a.system_fingerprint and a.system_fingerprint.startswith("fp_")
    assert a.system_fingerprint == b.system_fingerprint
    chunks = list(client.completions.create(model="smollm2", prompt="Hi", max_tokens=2, stream=True))
    assert {c.system_fingerprint for c in chunks} == {a.system_fingerprint}


def test_fields_sdks_send_by_default_are_accepted(client):
    r = client.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "Hi"}], max_tokens=2, store=False, metadata={"run": "a"},
        service_tier="auto", prompt_cache_key="k", safety_identifier="user-1", modalities=["text"], reasoning_effort="low",
        extra_body={"verbosity": "low"})
    assert r.choices[0].message.role == "assistant"


@pytest.mark.parametrize("field, value", [("modalities", ["text", "audio"]), ("reasoning_effort", "extreme"),
                                          ("web_search_options", {})])
def test_fields_that_would_change_the_output_are_refused(daemon, field, value):
    status, body = daemon.post("/v1/chat/completions", {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}],
                                                        field: value})
    assert status == 400 and field in body["error"]["message"]


def test_include_stop_str_in_output_keeps_the_stop_string(client):
    kwargs = dict(model="smollm2", prompt="Count: 1, 2, 3, 4,", max_tokens=24, temperature=0)
    plain = client.completions.create(**kwargs).choices[0].text
    assert " 6" in plain
    stop = " 6"
    cut = client.completions.create(**kwargs, stop=[stop]).choices[0]
    kept = client.completions.create(**kwargs, stop=[stop], extra_body={"include_stop_str_in_output": True}).choices[0]
    assert cut.finish_reason == kept.finish_reason == "stop"
    assert kept.text == cut.text + stop and plain.startswith(kept.text)


def test_min_tokens_holds_back_the_end_and_stop_strings(client):
    chat = dict(model="smollm2", messages=[{"role": "user", "content": "Say hi."}], max_tokens=60, temperature=0)
    short = client.chat.completions.create(**chat)
    assert short.choices[0].finish_reason == "stop" and short.usage.completion_tokens < 40
    held = client.chat.completions.create(**chat, extra_body={"min_tokens": 40})
    assert held.usage.completion_tokens >= 40
    # Greedy: the same tokens until the end of generation was held back.
    assert held.choices[0].message.content.startswith(short.choices[0].message.content.rstrip())
    kwargs = dict(model="smollm2", prompt="Count: 1, 2, 3, 4,", max_tokens=24, temperature=0, stop=[","])
    first = client.completions.create(**kwargs).choices[0].text
    later = client.completions.create(**kwargs, extra_body={"min_tokens": 6}).choices[0].text
    assert "," not in first and "," in later and later.startswith(first)


@pytest.mark.parametrize("extra", [{"min_tokens": 30}, {"min_tokens": -1}])
def test_min_tokens_beyond_max_tokens_is_refused(daemon, extra):
    status, body = daemon.post("/v1/completions", {"model": "smollm2", "prompt": "Hi", "max_tokens": 20, **extra})
    assert status == 400 and body["error"]["param"] == "min_tokens", body


def test_skip_special_tokens_false_renders_control_tokens(client):
    # SmolLM2's chat turn ends with <|im_end|>: a completion that runs past it shows it only when asked.
    prompt = "<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\nHi<|im_end|>\n<|im_start|>user\n"
    kwargs = dict(model="smollm2", prompt=prompt, max_tokens=40, temperature=0)
    ids = client.completions.create(**kwargs, logprobs=0, extra_body={"ignore_eos": True})
    assert "<|im_end|>" in ids.choices[0].logprobs.tokens, "the model wrote no control token to test with"
    hidden = client.completions.create(**kwargs, extra_body={"ignore_eos": True}).choices[0].text
    shown = client.completions.create(**kwargs, extra_body={"ignore_eos": True, "skip_special_tokens": False}).choices[0].text
    assert "<|im_end|>" not in hidden and "<|im_end|>" in shown
    assert re.sub(r"<\|[a-z_]+\|>", "", shown) == hidden


def raw_exchange(daemon, request: bytes):
    """Sends one request on a new connection; returns the status line, headers and whatever body came before the server closed or went quiet."""
    with socket.create_connection(("127.0.0.1", daemon.http_port), timeout=10) as s:
        s.sendall(request)
        s.settimeout(1.0)
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except socket.timeout:
            pass
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return lines[0], headers, body


@pytest.mark.parametrize("path", ["/health", "/v1/models", "/metrics"])
def test_head_gives_the_get_headers_and_no_body(daemon, path):
    status, headers, body = raw_exchange(daemon, b"HEAD %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
    assert status == "HTTP/1.1 200 OK" and body == b""
    _, get_headers, get_body = raw_exchange(daemon, b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())
    assert headers["content-type"] == get_headers["content-type"]
    if path != "/metrics":  # the metrics text changes between the two requests
        assert int(headers["content-length"]) == len(get_body)


def test_head_keeps_the_connection_in_step(daemon):
    # Two requests on one connection: a body after HEAD would be read as the next answer.
    status, _, body = raw_exchange(daemon, b"HEAD /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == "HTTP/1.1 200 OK" and body.startswith(b"HTTP/1.1 200 OK")


@pytest.mark.parametrize("method, path, allow", [("GET", "/v1/completions", "POST"), ("POST", "/health", "GET, HEAD"),
                                                 ("DELETE", "/v1/models", "GET, HEAD")])
def test_405_names_the_allowed_methods(daemon, method, path, allow):
    status, headers, _ = raw_exchange(daemon, b"%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                                      % (method.encode(), path.encode()))
    assert status.startswith("HTTP/1.1 405") and headers["allow"] == allow


def test_400s_are_counted_as_invalid(daemon):
    before = daemon.metric("tessera:requests_rejected_total", model_name="smollm2", reason="invalid") or 0
    for body in ({"model": "smollm2", "prompt": "Hi", "temperature": "hot"}, {"model": "smollm2", "prompt": "Hi", "n": 0},
                 {"prompt": "Hi", "top_p": 7}):
        assert daemon.post("/v1/completions", body)[0] == 400
    assert daemon.metric("tessera:requests_rejected_total", model_name="smollm2", reason="invalid") == before + 3


def test_cors_is_off_unless_configured(daemon):
    status, headers, _ = raw_exchange(daemon, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nOrigin: https://ui.example\r\n"
                                      b"Connection: close\r\n\r\n")
    assert status == "HTTP/1.1 200 OK" and "access-control-allow-origin" not in headers
    status, headers, _ = raw_exchange(daemon, b"OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: https://ui.example\r\n"
                                      b"Access-Control-Request-Method: POST\r\nConnection: close\r\n\r\n")
    assert status.startswith("HTTP/1.1 405") and "access-control-allow-origin" not in headers


def test_cors_answers_an_allowed_origin_only(tessera_bin, smollm2, tmp_path):
    config = tmp_path / "cors.yaml"
    config.write_text(f"server:\n  allowed_origins: ['https://ui.example']\n  api_keys: [secret]\n"
                      f"models:\n  - name: smollm2\n    path: {smollm2}\n")
    d = Daemon(tessera_bin, ["--config", config])
    try:
        preflight = (b"OPTIONS /v1/chat/completions HTTP/1.1\r\nHost: x\r\nOrigin: %s\r\nAccess-Control-Request-Method: POST\r\n"
                     b"Access-Control-Request-Headers: authorization, content-type\r\nConnection: close\r\n\r\n")
        status, headers, _ = raw_exchange(d, preflight % b"https://ui.example")
        assert status.startswith("HTTP/1.1 204")
        assert headers["access-control-allow-origin"] == "https://ui.example" and headers["vary"] == "Origin"
        assert "POST" in headers["access-control-allow-methods"]
        assert headers["access-control-allow-headers"] == "authorization, content-type"
        # Another origin gets no grant (and, without a key, the usual 401).
        status, headers, _ = raw_exchange(d, preflight % b"https://evil.example")
        assert status.startswith("HTTP/1.1 401") and "access-control-allow-origin" not in headers
        body = json.dumps({"model": "smollm2", "prompt": "Hi", "max_tokens": 2, "stream": True}).encode()
        status, headers, streamed = raw_exchange(d, b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nOrigin: https://ui.example\r\n"
                                                 b"Authorization: Bearer secret\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                                                 % (len(body), body))
        assert status == "HTTP/1.1 200 OK" and headers["access-control-allow-origin"] == "https://ui.example"
        assert b"[DONE]" in streamed
        status, headers, _ = raw_exchange(d, b"GET /v1/models HTTP/1.1\r\nHost: x\r\nOrigin: https://ui.example\r\n"
                                          b"Connection: close\r\n\r\n")
        assert status.startswith("HTTP/1.1 401") and headers["access-control-allow-origin"] == "https://ui.example"
    finally:
        assert d.stop() == 0


@pytest.mark.parametrize("path, body", [
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "tools": [{"type": 5}]}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "tool_choice": {"type": ["function"]},
                              "tools": [{"type": "function", "function": {"name": "f"}}]}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [{"type": 7, "text": "Hi"}]}]}),
    ("/v1/responses", {"input": "Hi", "tools": [{"type": 5}]}),
    ("/v1/responses", {"input": "Hi", "text": {"format": {"type": 5}}}),
    ("/v1/messages", {"max_tokens": 2, "messages": [{"role": "user", "content": "Hi"}], "thinking": {"type": 1}}),
])
def test_a_type_field_of_the_wrong_json_type_is_a_400(daemon, path, body):
    status, reply = daemon.post(path, dict(body, model="smollm2"))
    assert status == 400, reply
