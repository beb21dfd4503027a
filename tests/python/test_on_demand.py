"""Models loaded on demand within a memory budget: the first request names
a sleeping model and waits for it to load (the answer says how long, in
X-Model-Load-Seconds); a model idle past keep_alive_s goes back to sleep;
when a load would pass server.memory_budget_mb, the least recently used
idle model is unloaded first. /v1/models shows each model's state, the
metrics count loads and unloads, and the daemon's resident memory stays
within the budget plus a stated margin."""
import json
import os
import re
import subprocess
import threading
import time

import openai
from daemon import Daemon
from streaming import stream_once

MiB = 1 << 20
KV_MB = 16
# What the daemon holds with no model loaded (runtime, HTTP and gRPC
# threads, parsed config) is measured at start; the margin is over that.
MARGIN = 64 * MiB


def estimate(path):
    """The daemon's own estimate of a model's footprint (model_loader.cc):
    its file, its KV budget and 64 MiB for activations."""
    return os.path.getsize(path) + KV_MB * MiB + 64 * MiB


def two_and_a_half(tessera_bin, model):
    """A budget that holds two copies of `model` and not three: 2.5 times
    what one copy counts (the larger of the daemon's estimate and what this
    machine's load measured, as the daemon counts it)."""
    d = Daemon(tessera_bin, [], config(model, 0, [("probe", {})]))
    try:
        counted = metric(d, "tessera:model_memory_bytes", model_name="probe")
    finally:
        assert d.stop() == 0, d.log_text()
    one = max(estimate(model), int(counted))
    return 2 * one + one // 2


def config(model, budget_mb, entries, timeout_s=120):
    text = f"server:\n  memory_budget_mb: {budget_mb}\n  model_load_timeout_s: {timeout_s}\nmodels:\n"
    for name, extra in entries:
        text += f"  - name: {name}\n    path: {model}\n    kv_cache: {{budget_mb: {KV_MB}}}\n"
        for key, value in extra.items():
            text += f"    {key}: {value}\n"
    return text


def states(d):
    status, text = d.get("/v1/models")
    assert status == 200, text
    return {m["id"]: m["status"]["value"] for m in json.loads(text)["data"]}


def metric(d, name, **labels):
    """The sum of `name` over the series that carry `labels`."""
    _, text = d.get("/metrics")
    total = 0.0
    for m in re.finditer(r"^%s(?:\{([^}]*)\})? (\S+)$" % re.escape(name), text, re.M):
        have = set((m.group(1) or "").split(","))
        if all(f'{k}="{v}"' in have for k, v in labels.items()):
            total += float(m.group(2))
    return total


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        m = re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M)
    return int(m.group(1)) * 1024 if m else 0  # none once it has exited


class RssWatch:
    """The daemon's largest resident set while it runs."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, 0, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, rss(self.pid))
            time.sleep(0.02)

    def finish(self):
        self.stop.set()
        self.thread.join()
        return self.peak


def complete(d, model):
    status, text, headers = d.request("POST", "/v1/completions",
                                      {"model": model, "prompt": "The capital of France is", "max_tokens": 8, "temperature": 0})
    return status, json.loads(text), headers


def test_three_models_round_robin_in_a_budget_that_holds_two(tessera_bin, smollm2):
    budget = two_and_a_half(tessera_bin, smollm2)
    d = Daemon(tessera_bin, [], config(smollm2, budget // MiB, [(n, {"load": "on_demand"}) for n in "abc"]))
    try:
        assert states(d) == {"a": "sleeping", "b": "sleeping", "c": "sleeping"}
        baseline = rss(d.proc.pid)
        watch = RssWatch(d.proc.pid)
        answers, most_loaded = {}, 0
        for i in range(9):
            name = "abc"[i % 3]
            status, body, headers = complete(d, name)
            assert status == 200, body
            answers.setdefault(name, set()).add(body["choices"][0]["text"])
            # Each request here finds its model asleep (the other two were used since).
            assert float(headers["X-Model-Load-Seconds"]) > 0, headers
            now = states(d)
            assert now[name] == "loaded"
            most_loaded = max(most_loaded, sum(s == "loaded" for s in now.values()))
        peak = watch.finish()
        # The same weights under three names give one answer each, every time.
        assert all(len(texts) == 1 for texts in answers.values()), answers
        assert len({next(iter(t)) for t in answers.values()}) == 1
        assert most_loaded == 2
        assert metric(d, "tessera:model_loads_total", outcome="loaded") == 9
        assert metric(d, "tessera:model_unloads_total", reason="memory_budget") == 7
        assert metric(d, "tessera:memory_budget_bytes") == (budget // MiB) * MiB
        assert sum(metric(d, "tessera:model_memory_bytes", model_name=n) for n in "abc") <= budget
        assert peak <= budget + baseline + MARGIN, (
            f"peak RSS {peak / MiB:.0f} MiB over the budget {budget / MiB:.0f} MiB + baseline {baseline / MiB:.0f} MiB + margin")
        # A loaded model answers without waiting, and says nothing of loads.
        status, _, headers = complete(d, "c")
        assert status == 200 and "X-Model-Load-Seconds" not in headers
    finally:
        assert d.stop() == 0, d.log_text()


def test_concurrent_streams_across_the_models_each_end_once(tessera_bin, smollm2):
    """Six clients at once on three models, two of which fit: requests for
    the third wait for an idle model to unload (never one serving), and every
    stream ends complete."""
    budget = two_and_a_half(tessera_bin, smollm2)
    d = Daemon(tessera_bin, [], config(smollm2, budget // MiB, [(n, {"load": "on_demand"}) for n in "abc"]))
    try:
        client = openai.OpenAI(base_url=d.base + "/v1", api_key="unused", max_retries=0, timeout=180)
        outcomes = []

        def run(name):
            for _ in range(2):
                outcomes.append(stream_once(client, name))

        threads = [threading.Thread(target=run, args=(n,)) for n in "abcabc"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(outcomes) == 12
        assert all(kind == "complete" for kind, _ in outcomes), outcomes
        assert len({text for _, text in outcomes}) == 1  # the same weights, greedy
        assert sum(s == "loaded" for s in states(d).values()) <= 2
    finally:
        assert d.stop() == 0, d.log_text()


def test_an_idle_model_sleeps_after_keep_alive_and_wakes_on_demand(tessera_bin, smollm2):
    d = Daemon(tessera_bin, [], config(smollm2, 0, [("always", {}), ("brief", {"load": "on_demand", "keep_alive_s": 1})]))
    try:
        assert states(d) == {"always": "loaded", "brief": "sleeping"}
        status, first, headers = complete(d, "brief")
        assert status == 200 and float(headers["X-Model-Load-Seconds"]) > 0
        assert states(d)["brief"] == "loaded"
        deadline = time.time() + 15
        while states(d)["brief"] != "sleeping":
            assert time.time() < deadline, "the model never went to sleep"
            time.sleep(0.2)
        assert metric(d, "tessera:model_unloads_total", model_name="brief", reason="idle") == 1
        assert metric(d, "tessera:model_loaded", model_name="brief") == 0
        assert states(d)["always"] == "loaded"  # no keep_alive_s: it stays
        status, again, headers = complete(d, "brief")
        assert status == 200 and "X-Model-Load-Seconds" in headers
        assert again["choices"][0]["text"] == first["choices"][0]["text"]
        assert metric(d, "tessera:model_loads_total", model_name="brief", outcome="loaded") == 2
        assert metric(d, "tessera:model_load_seconds_count", model_name="brief") == 2
    finally:
        assert d.stop() == 0, d.log_text()


def test_a_model_larger_than_the_budget_gets_a_clear_503(tessera_bin, smollm2):
    small = estimate(smollm2) // 2 // MiB
    d = Daemon(tessera_bin, [], config(smollm2, small, [("big", {"load": "on_demand"})]))
    try:
        status, body, headers = complete(d, "big")
        assert status == 503, body
        assert "server.memory_budget_mb" in body["error"]["message"], body
        assert headers.get("Retry-After")
        assert states(d) == {"big": "sleeping"}
        status, _, _ = complete(d, "nonesuch")
        assert status == 404
    finally:
        assert d.stop() == 0, d.log_text()


def test_startup_models_past_the_budget_refuse_to_start(tessera_bin, smollm2, tmp_path):
    text = config(smollm2, estimate(smollm2) * 3 // 2 // MiB, [("one", {}), ("two", {})])
    path = tmp_path / "over.yaml"
    path.write_text(text)
    out = subprocess.run([str(tessera_bin), "serve", "--config", str(path), "--port", "0", "--grpc-port", "0"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "model 'two' needs about" in out.stdout + out.stderr
    assert "server.memory_budget_mb" in out.stdout + out.stderr
