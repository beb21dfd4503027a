"""Starts `tessera serve` on loopback with free ports and stops it."""
import json
import re
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request


class Daemon:
    def __init__(self, tessera_bin, args, config_yaml=None, model=None, https_ca=None):
        """`https_ca`: the daemon serves HTTPS with a certificate this CA file verifies."""
        self.ssl_context = ssl.create_default_context(cafile=str(https_ca)) if https_ca else None
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
        argv = [str(tessera_bin), "serve", "--host", "127.0.0.1", "--port", "0", "--grpc-port", "0", "--threads", "2"]
        if model is not None:
            argv += ["--model", str(model), "--served-model-name", "smollm2"]
        if config_yaml is not None:
            self.config = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
            self.config.write(config_yaml)
            self.config.flush()
            argv += ["--config", self.config.name]
        self.proc = subprocess.Popen(argv + [str(a) for a in args], stdout=self.log, stderr=subprocess.STDOUT)
        self.http_port, self.grpc_port = self._wait_for_ports()
        self.base = f"{'https' if https_ca else 'http'}://127.0.0.1:{self.http_port}"
        self.wait_healthy()

    @classmethod
    def attach(cls, proc, log):
        """A daemon started by the caller (own arguments or limits), logging to `log`."""
        d = cls.__new__(cls)
        d.proc, d.log, d.ssl_context = proc, log, None
        d.http_port, d.grpc_port = d._wait_for_ports()
        d.base = f"http://127.0.0.1:{d.http_port}"
        d.wait_healthy()
        return d

    def _wait_for_ports(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = re.search(r"listening: HTTP on [\d.]+:(\d+), gRPC on [\d.]+:(\d+)", self.log_text())
            if m:
                return int(m.group(1)), int(m.group(2))
            if self.proc.poll() is not None:
                raise RuntimeError("tessera serve exited:\n" + self.log_text())
            time.sleep(0.05)
        raise RuntimeError("tessera serve did not start:\n" + self.log_text())

    def log_text(self):
        with open(self.log.name) as f:
            return f.read()

    def wait_healthy(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            status, _ = self.get("/health")
            if status == 200:
                return
            if self.proc.poll() is not None:
                raise RuntimeError("tessera serve exited:\n" + self.log_text())
            time.sleep(0.05)
        raise RuntimeError("tessera serve never became healthy:\n" + self.log_text())

    def request(self, method, path, body=None, raw=None, headers=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers or {})
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=120, context=self.ssl_context) as r:
                return r.status, r.read().decode(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), dict(e.headers)

    def get(self, path):
        status, text, _ = self.request("GET", path)
        return status, text

    def post(self, path, body):
        status, text, _ = self.request("POST", path, body)
        return status, json.loads(text)

    def stream(self, path, body):
        """POSTs with stream: true; the JSON payloads of the SSE events, in order."""
        status, text, _ = self.request("POST", path, {**body, "stream": True})
        assert status == 200, text
        return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]

    def metric(self, name, **labels):
        """The value of one sample on /metrics (0 when absent)."""
        _, text = self.get("/metrics")
        for line in text.splitlines():
            if line.startswith("#") or not line.startswith(name):
                continue
            m = re.match(r"([^{ ]+)(\{[^}]*\})? (\S+)", line)
            if m.group(1) != name:
                continue
            found = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
            if all(found.get(k) == v for k, v in labels.items()):
                return float(m.group(3))
        return 0.0

    def wait_for_metric(self, name, done, timeout=10, **labels):
        """Polls one sample until done(value) holds or the timeout passes;
        returns the last value."""
        deadline = time.time() + timeout
        value = self.metric(name, **labels)
        while not done(value) and time.time() < deadline:
            time.sleep(0.02)
            value = self.metric(name, **labels)
        return value

    def terminate(self):
        self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode
