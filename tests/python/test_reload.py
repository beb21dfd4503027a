"""SIGHUP reloads the config's model list while serving: a model added is
served, a removed one drains and then is gone, a changed one is loaded anew
and switched to, an unchanged one is kept as it is; a broken config changes
nothing. Under 8 streaming clients, every request ends with exactly one
complete answer or one clear error, and none is cut mid-stream."""
import json
import re
import signal
import threading
import time

import openai
import pytest

from daemon import Daemon
from streaming import stream_once


def config(smollm2, entries):
    text = "server:\n  drain_timeout_s: 30\nmodels:\n"
    for name, budget in entries:
        text += f"  - name: {name}\n    path: {smollm2}\n    kv_cache: {{budget_mb: {budget}}}\n"
    return text


def served_names(d, key=None):
    status, text, _ = d.request("GET", "/v1/models", headers={"Authorization": f"Bearer {key}"} if key else None)
    assert status == 200, text
    return sorted(m["id"] for m in json.loads(text)["data"])


def reload_count(d, outcome):
    _, text = d.get("/metrics")
    m = re.search(r'^tessera:config_reloads_total\{outcome="%s"\} (\S+)$' % outcome, text, re.M)
    return float(m.group(1)) if m else 0.0


def rewrite_and_signal(d, text):
    with open(d.config.name, "w") as f:
        f.write(text)
    d.proc.send_signal(signal.SIGHUP)


def wait_for(predicate, timeout=60, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def daemon(tessera_bin, smollm2):
    d = Daemon(tessera_bin, [], config(smollm2, [("a", 24), ("b", 24), ("k", 24)]))
    yield d
    assert d.stop() == 0, d.log_text()


def test_models_come_and_go_under_streaming_load(daemon, smollm2):
    client = openai.OpenAI(base_url=daemon.base + "/v1", api_key="unused", max_retries=0, timeout=120)
    reference = stream_once(client, "a")
    assert reference[0] == "complete"
    stop = threading.Event()
    outcomes = {m: [] for m in "abk"}
    started = {m: 0 for m in "abk"}
    lock = threading.Lock()

    def client_loop(model):
        while not stop.is_set():
            with lock:
                started[model] += 1
            outcome = stream_once(client, model)
            with lock:
                outcomes[model].append(outcome)

    threads = [threading.Thread(target=client_loop, args=(m,)) for m in "aaabbbkk"]
    for t in threads:
        t.start()
    time.sleep(3)
    rewrite_and_signal(daemon, config(smollm2, [("a", 32), ("c", 24), ("k", 24)]))
    wait_for(lambda: served_names(daemon) == ["a", "c", "k"], what="the new model list")
    assert daemon.get("/v1/models/b")[0] == 404
    # The reload is logged once the models it took out have drained.
    wait_for(lambda: "reload applied" in daemon.log_text(), what="b to be drained and gone")
    time.sleep(3)
    stop.set()
    for t in threads:
        t.join(timeout=180)
    # Exactly one outcome per request sent.
    assert {m: len(o) for m, o in outcomes.items()} == started
    # The changed and the kept model answered everything, whole and the same.
    for m in "ak":
        assert outcomes[m] and all(o == reference for o in outcomes[m]), (m, outcomes[m][:3])
    # The removed model's requests finished within the drain, or were refused
    # clearly once it was going or gone; none was cut.
    assert all(o == reference or (o[0] == "error" and o[1] in (404, 503)) for o in outcomes["b"]), outcomes["b"]
    assert any(o == reference for o in outcomes["b"])
    assert stream_once(client, "c") == reference
    assert reload_count(daemon, "applied") == 1 and reload_count(daemon, "failed") == 0
    assert "reload applied: added: c; replaced: a; removed: b; kept: k" in daemon.log_text()


def test_a_broken_config_changes_nothing(daemon, smollm2):
    rewrite_and_signal(daemon, "models: [\n")
    wait_for(lambda: reload_count(daemon, "failed") == 1, what="the failed reload to be counted")
    rewrite_and_signal(daemon, config(smollm2, [("a", 24), ("z", 24)]).replace("name: z", "name: z\n    device: nope:7"))
    wait_for(lambda: reload_count(daemon, "failed") == 2, what="the second failed reload")
    assert served_names(daemon) == ["a", "b", "k"]
    assert daemon.get("/health")[0] == 200
    client = openai.OpenAI(base_url=daemon.base + "/v1", api_key="unused", max_retries=0)
    for m in "abk":
        assert client.completions.create(model=m, prompt="Hi", max_tokens=2).choices[0].text is not None
    assert reload_count(daemon, "applied") == 0
    assert "reload failed, nothing changed" in daemon.log_text()


def test_an_unchanged_config_keeps_every_model(daemon, smollm2):
    with open(daemon.config.name) as f:
        text = f.read()
    rewrite_and_signal(daemon, text)
    wait_for(lambda: reload_count(daemon, "applied") == 1, what="the reload")
    assert "reload applied: kept: a b k" in daemon.log_text()
    assert served_names(daemon) == ["a", "b", "k"]


def test_the_admin_route_reloads_only_with_the_admin_key(tessera_bin, smollm2, daemon):
    # Without an admin key configured the route does not exist.
    assert daemon.request("POST", "/admin/reload", body={})[0] == 404
    text = config(smollm2, [("a", 24)]).replace("server:\n", "server:\n  admin_key: adm1n\n  api_keys: [user]\n")
    d = Daemon(tessera_bin, [], text)
    try:
        assert d.request("POST", "/admin/reload", body={})[0] == 401
        assert d.request("POST", "/admin/reload", body={}, headers={"Authorization": "Bearer user"})[0] == 401
        admin = {"Authorization": "Bearer adm1n"}
        status, _, headers = d.request("GET", "/admin/reload", headers=admin)
        assert status == 405 and headers.get("Allow") == "POST"
        with open(d.config.name, "w") as f:
            f.write(text.replace("models:\n", "models:\n  - name: c\n    path: %s\n" % smollm2))
        status, body, _ = d.request("POST", "/admin/reload", body={}, headers=admin)
        assert status == 200, body
        assert json.loads(body)["message"] == "reload applied: added: c; kept: a"
        assert served_names(d, "user") == ["a", "c"]
        with open(d.config.name, "w") as f:
            f.write("models: {")
        status, body, _ = d.request("POST", "/admin/reload", body={}, headers=admin)
        assert status == 400 and "nothing changed" in json.loads(body)["error"]["message"], body
        assert served_names(d, "user") == ["a", "c"]
    finally:
        assert d.stop() == 0, d.log_text()

