"""The daemon under load: concurrent streams, client disconnects, admission
control, KV exhaustion with preemption, and SIGTERM drain."""
import concurrent.futures
import http.client
import json
import time
import urllib.request

import grpc
import openai
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from daemon import Daemon


def config(model, **scheduler):
    """A one-model config; keyword arguments go to the model's scheduler."""
    kv = scheduler.pop("kv_budget_mb", 64)
    lines = "\n".join(f"      {k}: {v}" for k, v in scheduler.items())
    return (f"models:\n  - name: smollm2\n    path: {model}\n    kv_cache:\n      budget_mb: {kv}\n"
            + (f"    scheduler:\n{lines}\n" if lines else ""))


def client_of(d):
    return openai.OpenAI(base_url=d.base + "/v1", api_key="unused", max_retries=0, timeout=300)


def stream_text(client, prompt, max_tokens):
    chunks = list(client.completions.create(model="smollm2", prompt=prompt, max_tokens=max_tokens, temperature=0,
                                            stream=True, stream_options={"include_usage": True}, extra_body={"ignore_eos": True}))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    return text, finish, chunks[-1].usage


def open_endless_stream(d):
    """A streaming completion that runs until stopped, opened and started."""
    req = urllib.request.Request(d.base + "/v1/completions", method="POST", data=json.dumps(
        {"model": "smollm2", "prompt": "Endless", "max_tokens": 2000, "stream": True, "ignore_eos": True}).encode())
    resp = urllib.request.urlopen(req, timeout=60)
    resp.readline()
    return resp


def test_32_concurrent_streams_complete_with_correct_usage(tessera_bin, smollm2):
    d = Daemon(tessera_bin, [], config(smollm2))
    try:
        client = client_of(d)
        prompts = [f"Story number {i}: once there was" + " very" * (i % 7) for i in range(32)]
        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            results = list(pool.map(lambda i: stream_text(client, prompts[i], 12 + i % 5), range(32)))
        for i, (text, finish, usage) in enumerate(results):
            assert finish == ["length"]
            assert usage.completion_tokens == 12 + i % 5
            _, tok = d.post("/tokenize", {"model": "smollm2", "prompt": prompts[i]})
            assert usage.prompt_tokens == tok["count"]
        # Batched greedy output equals the same request run alone.
        alone, _, _ = stream_text(client, prompts[5], 12 + 5 % 5)
        assert alone == results[5][0]
        assert d.metric("tessera:request_success_total", model_name="smollm2", finished_reason="length") == 33
    finally:
        assert d.stop() == 0


def test_disconnect_mid_stream_frees_pages(tessera_bin, smollm2):
    d = Daemon(tessera_bin, [], config(smollm2))
    try:
        conn = http.client.HTTPConnection("127.0.0.1", d.http_port)
        conn.request("POST", "/v1/completions", json.dumps({"model": "smollm2", "prompt": "Tell me everything.",
                                                            "max_tokens": 2000, "stream": True, "ignore_eos": True}))
        resp = conn.getresponse()
        assert resp.status == 200
        resp.fp.readline()
        assert d.metric("tessera:kv_cache_usage_perc", model_name="smollm2") > 0
        conn.sock.close()
        conn.close()
        assert d.wait_for_metric("tessera:num_requests_running", lambda v: v == 0, model_name="smollm2") == 0
        assert d.metric("tessera:kv_cache_usage_perc", model_name="smollm2") == 0
        assert d.metric("tessera:requests_cancelled_total", model_name="smollm2") == 1
    finally:
        assert d.stop() == 0


def test_overload_is_refused_with_429(tessera_bin, smollm2):
    d = Daemon(tessera_bin, [], config(smollm2, max_sequences=1, max_queued_requests=2))
    try:
        body = {"model": "smollm2", "prompt": "Go on and on", "max_tokens": 60, "ignore_eos": True}
        with concurrent.futures.ThreadPoolExecutor(12) as pool:
            results = list(pool.map(lambda _: d.request("POST", "/v1/completions", body), range(12)))
        statuses = [s for s, _, _ in results]
        assert 429 in statuses and 200 in statuses
        for status, text, headers in results:
            if status == 429:
                assert headers.get("Retry-After") == "1"
                assert json.loads(text)["error"]["code"] == "rate_limit_exceeded"
            else:
                assert status == 200 and json.loads(text)["usage"]["completion_tokens"] == 60
        assert d.metric("tessera:requests_rejected_total", model_name="smollm2", reason="queue_full") == statuses.count(429)
    finally:
        assert d.stop() == 0


def test_kv_exhaustion_preempts_and_still_completes(tessera_bin, smollm2):
    # 4 MiB of f16 KV holds about 180 tokens of SmolLM2: four 130-token
    # sequences cannot all stay resident.
    d = Daemon(tessera_bin, [], config(smollm2, kv_budget_mb=4))
    try:
        client = client_of(d)
        prompts = [f"Topic {i}: the history of" for i in range(4)]
        solo = [stream_text(client, p, 120)[0] for p in prompts[:2]]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda p: stream_text(client, p, 120), prompts))
        assert all(finish == ["length"] and usage.completion_tokens == 120 for _, finish, usage in results)
        assert [r[0] for r in results[:2]] == solo
        assert d.metric("tessera:num_preemptions_total", model_name="smollm2") > 0
    finally:
        assert d.stop() == 0


def test_sigterm_under_load_loses_no_accepted_request(tessera_bin, smollm2):
    d = Daemon(tessera_bin, ["--drain-timeout", "60"], config(smollm2))
    client = client_of(d)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(stream_text, client, f"Request {i} says", 40) for i in range(8)]
        d.wait_for_metric("tessera:num_requests_running", lambda v: v >= 8, timeout=30, model_name="smollm2")
        d.terminate()
        time.sleep(0.1)
        assert d.get("/health")[0] == 503
        with grpc.insecure_channel(f"127.0.0.1:{d.grpc_port}") as channel:
            check = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
            assert check.status == health_pb2.HealthCheckResponse.NOT_SERVING
        status, text, _ = d.request("POST", "/v1/completions", {"model": "smollm2", "prompt": "late", "max_tokens": 2})
        assert status == 503 and "shutting down" in json.loads(text)["error"]["message"]
        for f in futures:
            text, finish, usage = f.result(timeout=120)
            assert finish == ["length"] and usage.completion_tokens == 40
    d.proc.wait(60)
    assert d.proc.returncode == 0


def test_drain_timeout_ends_what_is_left_with_an_error(tessera_bin, smollm2):
    d = Daemon(tessera_bin, ["--drain-timeout", "0.5"], config(smollm2))
    with open_endless_stream(d) as resp:
        d.terminate()
        body = resp.read().decode()
    events = [json.loads(e[6:]) for e in body.split("\n\n") if e.startswith("data: {")]
    assert any("error" in e for e in events), "the cut-off request must end with an error event"
    assert body.rstrip().endswith("data: [DONE]")
    d.proc.wait(30)
    assert d.proc.returncode == 0


def test_second_sigterm_exits_at_once(tessera_bin, smollm2):
    d = Daemon(tessera_bin, ["--drain-timeout", "600"], config(smollm2))
    with open_endless_stream(d) as resp:
        d.terminate()
        time.sleep(0.2)
        assert d.proc.poll() is None, "the first signal drains"
        t0 = time.time()
        d.terminate()
        d.proc.wait(10)
        assert time.time() - t0 < 5
    assert d.proc.returncode != 0
