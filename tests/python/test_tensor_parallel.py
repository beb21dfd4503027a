"""`tessera serve` with tensor- and context-parallel worker processes: the
same answers as one rank, and the failure contract when a rank dies or hangs (every request
in flight ends with an error, /health turns 503, the process exits 3, and
the flight-recorder dumps name the stuck collective and rank)."""
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request

import pytest
from conftest import free_port, run
from daemon import Daemon

TIMEOUT_S = 2.0
GROUP_FAILED_EXIT = 3
PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time, in a small village,",
           "The three primary colors are"]


# The group's rendezvous secret, for the tests that start workers by hand.
GROUP_ENV = dict(os.environ, TESSERA_RENDEZVOUS_SECRET="tensor-parallel-test-secret")


def start(tessera_bin, smollm2, tmp, parallel):
    config = tmp / "serve.yaml"
    config.write_text(f"""
server: {{host: 127.0.0.1}}
parallel: {{{parallel}, collective_timeout_s: {TIMEOUT_S}, flight_recorder_dir: "{tmp / 'dumps'}"}}
models:
  - {{name: smollm2, path: "{smollm2}", threads: 1, scheduler: {{max_sequences: 8}}}}
""")
    log = open(tmp / "serve.log", "w+")
    proc = subprocess.Popen([str(tessera_bin), "serve", "--config", str(config), "--port", "0", "--grpc-port", "0"],
                            stdout=log, stderr=subprocess.STDOUT, env=GROUP_ENV)
    return proc, log


def worker_pids(parent):
    out = subprocess.run(["pgrep", "-P", str(parent), "-f", "tessera worker"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def complete(d, prompt, max_tokens=32):
    status, body = d.post("/v1/completions", {"model": "smollm2", "prompt": prompt, "max_tokens": max_tokens,
                                              "temperature": 0})
    assert status == 200, body
    return body["choices"][0]["text"]


class Stream(threading.Thread):
    """A streaming completion read event by event, each stamped on arrival."""

    def __init__(self, d, prompt):
        super().__init__(daemon=True)
        self.url = d.base + "/v1/completions"
        self.body = json.dumps({"model": "smollm2", "prompt": prompt, "max_tokens": 2000, "temperature": 0,
                                "ignore_eos": True, "stream": True}).encode()
        self.events, self.first_token = [], threading.Event()

    def run(self):
        req = urllib.request.Request(self.url, data=self.body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                for line in r:
                    line = line.decode().strip()
                    if line.startswith("data: ") and line != "data: [DONE]":
                        self.events.append((time.time(), json.loads(line[6:])))
                        self.first_token.set()
        except Exception as e:  # the connection may close once the error is out
            self.events.append((time.time(), {"transport": str(e)}))
        self.first_token.set()

    def error_time(self):
        return next((t for t, e in self.events if "error" in e), None)


def settled_collectives(d, seconds=5):
    # The answer is out before the step that made it has finished its last
    # collective (and an idle notice to the worker may follow it), so the
    # recorder may show one op "started" for a moment; none may ever fail.
    deadline = time.time() + seconds
    while True:
        status, text = d.get("/admin/collectives")
        assert status == 200
        recorded = json.loads(text)["models"]["smollm2"]["collectives"]
        assert not [c for c in recorded if c["state"] == "failed"]
        if all(c["state"] == "completed" for c in recorded) or time.time() > deadline:
            return recorded
        time.sleep(0.05)


def one_rank_answers(tessera_bin, smollm2, tmp_path, prompts):
    (tmp_path / "one").mkdir()
    one = Daemon.attach(*start(tessera_bin, smollm2, tmp_path / "one", "tensor: 1"))
    try:
        return [complete(one, p) for p in prompts]
    finally:
        assert one.stop() == 0


def test_two_ranks_answer_as_one(tessera_bin, smollm2, tmp_path):
    expected = one_rank_answers(tessera_bin, smollm2, tmp_path, PROMPTS)
    proc, log = start(tessera_bin, smollm2, tmp_path, "tensor: 2")
    d = Daemon.attach(proc, log)
    try:
        assert len(worker_pids(proc.pid)) == 1
        assert [complete(d, p) for p in PROMPTS] == expected
        recorded = settled_collectives(d)
        assert recorded and all(c["state"] == "completed" for c in recorded)
        # SIGUSR1 writes the flight recorder and serving goes on.
        proc.send_signal(signal.SIGUSR1)
        dump = tmp_path / "dumps" / "collectives.smollm2.rank0.json"
        deadline = time.time() + 10
        while not dump.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert json.loads(dump.read_text())["reason"] == "SIGUSR1"
        assert complete(d, PROMPTS[0]) == expected[0]
    finally:
        assert d.stop() == 0
    assert "rank 1: released by rank 0" in d.log_text()


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def test_worker_spins_only_while_rank_0_has_work(tessera_bin, smollm2, tmp_path):
    # A worker spins for the next plan between steps and sleeps once rank
    # 0, out of work, says so: idle, it burns no core (its next heartbeat
    # would come 0.67 s on).
    proc, log = start(tessera_bin, smollm2, tmp_path, "tensor: 2")
    d = Daemon.attach(proc, log)
    try:
        [worker] = worker_pids(proc.pid)
        busy = cpu_seconds(worker)
        complete(d, PROMPTS[0], max_tokens=64)
        assert cpu_seconds(worker) - busy > 0.05
        time.sleep(0.05)
        idle = cpu_seconds(worker)
        time.sleep(0.5)
        assert cpu_seconds(worker) - idle < 0.15
    finally:
        assert d.stop() == 0


def test_context_parallel_ranks_answer_as_one(tessera_bin, smollm2, tmp_path):
    # Prompts of 16 tokens or more are divided between the ranks: the long
    # one in every case, the short ones when they tokenize that long.
    prompts = PROMPTS + [" ".join(PROMPTS) * 12]
    expected = one_rank_answers(tessera_bin, smollm2, tmp_path, prompts)
    proc, log = start(tessera_bin, smollm2, tmp_path, "context: 2, context_min_tokens: 16")
    d = Daemon.attach(proc, log)
    try:
        assert len(worker_pids(proc.pid)) == 1
        assert [complete(d, p) for p in prompts] == expected
        status, text = d.get("/admin/collectives")
        sends = [c for c in json.loads(text)["models"]["smollm2"]["collectives"] if c["op"] in ("send", "recv")]
        assert sends, "no keys and values went around the ring"
    finally:
        assert d.stop() == 0


@pytest.mark.parametrize("parallel", ["tensor: 2", "context: 2, context_min_tokens: 4"])
def test_killed_worker_ends_every_stream_with_an_error(tessera_bin, smollm2, tmp_path, parallel):
    proc, log = start(tessera_bin, smollm2, tmp_path, parallel)
    d = Daemon.attach(proc, log)
    streams = [Stream(d, p) for p in PROMPTS[:3]]
    for s in streams:
        s.start()
    for s in streams:
        assert s.first_token.wait(30)
    [worker] = worker_pids(proc.pid)
    killed = time.time()
    subprocess.run(["kill", "-9", str(worker)], check=True)
    saw_503 = False
    while proc.poll() is None and time.time() < killed + 30:
        try:
            status, _ = d.get("/health")
            saw_503 |= status == 503
        except OSError:
            pass  # already gone
        time.sleep(0.05)
    for s in streams:
        s.join(10)
        assert not s.is_alive()
        t = s.error_time()
        assert t is not None, s.events[-3:]
        assert t - killed < TIMEOUT_S + 1.0
        error = next(e for _, e in s.events if "error" in e)["error"]
        assert "engine fault" in error["message"]
    assert proc.wait(30) == GROUP_FAILED_EXIT
    assert saw_503
    assert (tmp_path / "dumps" / "collectives.smollm2.rank0.json").exists()


def test_hung_worker_is_named_by_the_flight_recorders(tessera_bin, smollm2, tmp_path):
    leader = f"127.0.0.1:{free_port()}"
    proc, log = start(tessera_bin, smollm2, tmp_path, f'tensor: 2, leader: "{leader}", spawn_workers: false')
    worker_log = open(tmp_path / "worker.log", "w+")
    worker = subprocess.Popen([str(tessera_bin), "worker", "--rank", "1", "--world", "2", "--leader", leader,
                               "--threads", "1"], stdout=worker_log, stderr=subprocess.STDOUT, env=GROUP_ENV)
    try:
        d = Daemon.attach(proc, log)
        s = Stream(d, PROMPTS[2])
        s.start()
        assert s.first_token.wait(30)
        time.sleep(0.3)
        worker.send_signal(signal.SIGSTOP)
        stopped = time.time()
        assert proc.wait(30) == GROUP_FAILED_EXIT
        s.join(10)
        assert s.error_time() is not None and s.error_time() - stopped < TIMEOUT_S + 1.0
        worker.send_signal(signal.SIGCONT)
        assert worker.wait(30) == GROUP_FAILED_EXIT
    finally:
        for p in (proc, worker):
            if p.poll() is None:
                p.kill()
    dumps = sorted((tmp_path / "dumps").glob("collectives.smollm2.rank*.json"))
    assert [p.name for p in dumps] == ["collectives.smollm2.rank0.json", "collectives.smollm2.rank1.json"]
    traced = run([tessera_bin, "trace-collectives", *dumps])
    assert traced.returncode == 2, traced.stderr
    text = traced.stdout.decode()
    assert "did not complete on every rank" in text or "never started it" in text, text
    assert "the stuck rank: 1." in text, text
    leader_dump = json.loads(dumps[0].read_text())
    failed = [c for c in leader_dump["collectives"] if c["state"] == "failed"]
    assert failed and re.search("time(d )?out", failed[-1]["error"], re.I), failed[-1]


def test_worker_for_another_world_is_refused(tessera_bin, smollm2, tmp_path):
    leader = f"127.0.0.1:{free_port()}"
    proc, log = start(tessera_bin, smollm2, tmp_path, f'tensor: 2, leader: "{leader}", spawn_workers: false, join_timeout_s: 5')
    try:
        r = run([tessera_bin, "worker", "--rank", "1", "--world", "3", "--leader", leader, "--join-timeout", "10"], env=GROUP_ENV)
        assert r.returncode == GROUP_FAILED_EXIT
        assert b"started for a world of 3 ranks" in r.stderr + r.stdout
    finally:
        proc.kill()
        proc.wait()


def test_trace_collectives_refuses_what_is_not_a_dump(tessera_bin, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"rank": 0}')
    r = run([tessera_bin, "trace-collectives", bad])
    assert r.returncode == 1
    assert b"not a flight-recorder dump" in r.stderr
