"""The tensor-parallel rendezvous store as a stranger on the network meets
it: reading the configuration, overwriting it before a worker joins, and
holding its connections all fail, while the group's own ranks (holding the
secret) join and serve."""
import os
import socket
import struct
import subprocess
import time

from conftest import free_port
from daemon import Daemon

SECRET = "rendezvous-attack-test-secret"


def leader_config(smollm2, store_port):
    return (f"parallel: {{tensor: 2, leader: \"127.0.0.1:{store_port}\", spawn_workers: false, join_timeout_s: 60}}\n"
            f"models:\n  - name: smollm2\n    path: {smollm2}\n    threads: 1\n    kv_cache: {{budget_mb: 32}}\n")


def start_leader(tessera_bin, smollm2, store_port, tmp_path):
    config = tmp_path / "leader.yaml"
    config.write_text(leader_config(smollm2, store_port))
    log = open(tmp_path / "leader.log", "w+")
    proc = subprocess.Popen([str(tessera_bin), "serve", "--config", str(config), "--port", "0", "--grpc-port", "0"],
                            stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, TESSERA_RENDEZVOUS_SECRET=SECRET))
    return proc, log


def wait_listening(port, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


def stranger_exchange(port, payload):
    """What the store sends a peer that skips the handshake and sends `payload`."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(payload)
    received = b""
    try:
        while chunk := s.recv(65536):
            received += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    return received


def old_get(key):
    return b"G" + struct.pack("<I", len(key)) + key + b"\0" * 64


def old_set(key, value):
    return b"S" + struct.pack("<I", len(key)) + key + struct.pack("<I", len(value)) + value


def thread_count(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def test_a_stranger_can_neither_read_write_nor_crowd_the_store(tessera_bin, smollm2, tmp_path):
    store_port = free_port()
    proc, log = start_leader(tessera_bin, smollm2, store_port, tmp_path)
    worker = None
    flood = []
    try:
        wait_listening(store_port)
        # Read: only the handshake's greeting and a refusal come back.
        reply = stranger_exchange(store_port, old_get(b"tessera/config"))
        assert reply[:4] == b"TSS1" and len(reply) <= 4 + 32 + 1, reply
        assert b"models" not in reply and b"smollm2" not in reply
        # Write: a configuration naming another model, before any worker joined.
        evil = b'{"models": [{"name": "x", "path": "/etc/passwd"}], "parallel": {"flight_recorder_dir": "/tmp/evil"}}'
        stranger_exchange(store_port, old_set(b"tessera/config", evil) + b"\0" * 64)
        # Crowd: 300 connections held open.
        threads_before = thread_count(proc.pid)
        for _ in range(300):
            try:
                flood.append(socket.create_connection(("127.0.0.1", store_port), timeout=2))
            except OSError:
                break
        time.sleep(0.5)
        # At most 8 handshakes per address at once (each thread lives 2 s);
        # the rest of the growth is the leader's own start-up.
        assert thread_count(proc.pid) - threads_before <= 40, "a stranger's connections each took a leader thread"
        # The group's worker still joins, and gets the leader's configuration.
        worker_log = open(tmp_path / "worker.log", "w+")
        worker = subprocess.Popen([str(tessera_bin), "worker", "--rank", "1", "--world", "2", "--leader",
                                   f"127.0.0.1:{store_port}", "--threads", "1", "--join-timeout", "60"],
                                  stdout=worker_log, stderr=subprocess.STDOUT,
                                  env=dict(os.environ, TESSERA_RENDEZVOUS_SECRET=SECRET))
        d = Daemon.attach(proc, log)
        status, body = d.post("/v1/completions", {"model": "smollm2", "prompt": "The capital of France is",
                                                  "max_tokens": 4, "temperature": 0})
        assert status == 200, body
        assert "/etc/passwd" not in open(tmp_path / "worker.log").read()
    finally:
        for s in flood:
            s.close()
        for p in (proc, worker):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def test_a_worker_with_the_wrong_secret_is_refused_at_once(tessera_bin, smollm2, tmp_path):
    store_port = free_port()
    proc, _ = start_leader(tessera_bin, smollm2, store_port, tmp_path)
    try:
        wait_listening(store_port)
        started = time.time()
        r = subprocess.run([str(tessera_bin), "worker", "--rank", "1", "--world", "2", "--leader",
                            f"127.0.0.1:{store_port}", "--join-timeout", "60"], capture_output=True, timeout=60,
                           env=dict(os.environ, TESSERA_RENDEZVOUS_SECRET="not-the-secret"))
        assert r.returncode != 0
        assert b"secret does not match" in r.stdout + r.stderr, r
        assert time.time() - started < 10
        missing = subprocess.run([str(tessera_bin), "worker", "--rank", "1", "--world", "2", "--leader",
                                  f"127.0.0.1:{store_port}"], capture_output=True, timeout=60,
                                 env={k: v for k, v in os.environ.items() if k != "TESSERA_RENDEZVOUS_SECRET"})
        assert missing.returncode != 0 and b"TESSERA_RENDEZVOUS_SECRET" in missing.stdout + missing.stderr
    finally:
        proc.kill()
        proc.wait()


def test_remote_workers_without_a_secret_are_refused_at_the_leader(tessera_bin, smollm2, tmp_path):
    config = tmp_path / "leader.yaml"
    config.write_text(leader_config(smollm2, free_port()))
    env = {k: v for k, v in os.environ.items() if k != "TESSERA_RENDEZVOUS_SECRET"}
    r = subprocess.run([str(tessera_bin), "serve", "--config", str(config), "--port", "0", "--grpc-port", "0"],
                       capture_output=True, timeout=60, env=env)
    assert r.returncode != 0
    assert b"need a shared secret" in r.stdout + r.stderr, r
