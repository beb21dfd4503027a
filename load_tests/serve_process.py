"""A `tessera serve` started from a config text, for the load tests: the
process and its base URL once it reports ready; and the events of one
streamed completion."""
import json
import pathlib
import re
import subprocess
import time
import urllib.request


def start_serve(binary, config_text, log_dir, name, timeout=120):
    config = pathlib.Path(log_dir) / f"{name}.yaml"
    config.write_text(config_text)
    log = open(pathlib.Path(log_dir) / f"{name}.log", "w+")
    proc = subprocess.Popen([binary, "serve", "--config", str(config), "--port", "0", "--grpc-port", "0"],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + timeout
    while time.time() < deadline:
        text = pathlib.Path(log.name).read_text()
        m = re.search(r"listening: HTTP on [\d.]+:(\d+)", text)
        if m and "ready:" in text:
            return proc, f"http://127.0.0.1:{m.group(1)}"
        if proc.poll() is not None:
            raise RuntimeError(text)
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not become ready")


def streamed_completion(base, body, timeout=600):
    """Yields the JSON events of a streamed /v1/completions request (`body`
    a dict with "stream": true), up to [DONE]."""
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        for raw in r:
            line = raw.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                yield json.loads(line[6:])
