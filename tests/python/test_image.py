"""A built image (scripts/build-image.sh), run as a container runtime would:
its configuration (user, ports, stop signal, entrypoint, health check), and
its entrypoint run as user 10001 in the image's root file system with a
model mounted at /models/model.gguf: /health turns 200, a completion
answers, the image's health check passes, SIGTERM to the serving process
drains it and it exits 0. Skipped unless TESSERA_IMAGE names an image in
buildah's storage (building one takes minutes, so `make test` does not)."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest
import yaml

from daemon import Daemon
from test_deploy import DEPLOY

IMAGE = os.environ.get("TESSERA_IMAGE")
BUILDAH = ["buildah", "--storage-driver", "vfs"]

pytestmark = pytest.mark.skipif(not IMAGE or not shutil.which("buildah"),
                                reason="set TESSERA_IMAGE to an image built by scripts/build-image.sh")


def buildah(*args, **kwargs):
    return subprocess.run(BUILDAH + list(args), capture_output=True, text=True, check=True, **kwargs).stdout


@pytest.fixture(scope="module")
def image_config():
    return json.loads(buildah("inspect", "--type", "image", IMAGE))


@pytest.fixture(scope="module")
def container():
    name = buildah("from", IMAGE).strip()
    yield name
    subprocess.run(BUILDAH + ["rm", name], capture_output=True)


def test_image_configuration(image_config):
    config = image_config["Docker"]["config"]
    served = yaml.safe_load((DEPLOY / "docker" / "config.yaml").read_text())["server"]
    assert config["User"] == "10001:10001"
    assert set(config["ExposedPorts"]) == {f"{served['http_port']}/tcp", f"{served['grpc_port']}/tcp"}
    assert config["StopSignal"] == "SIGTERM"
    assert config["Entrypoint"] == ["/usr/local/bin/entrypoint.sh"]
    assert config["Healthcheck"]["Test"] == ["CMD", "/usr/local/bin/healthcheck.sh"]
    sizes = json.loads(buildah("images", "--json", IMAGE))
    print(f"{IMAGE}: {sizes[0]['size']}")


def serving_pid(port, deadline):
    """The tessera process the entrypoint exec'd into."""
    while time.time() < deadline:
        out = subprocess.run(["pgrep", "-f", f"tessera serve --config /etc/tessera/config.yaml --port {port}"],
                             capture_output=True, text=True).stdout.split()
        if out:
            return int(out[0])
        time.sleep(0.1)
    raise TimeoutError("the entrypoint started no tessera serve")


def test_container_serves_and_drains_on_sigterm(container, smollm2, tmp_path):
    log = open(tmp_path / "container.log", "w+")
    run = BUILDAH + ["run", "--isolation", "chroot", "--user", "10001:10001",
                     "-v", f"{smollm2}:/models/model.gguf:ro", container, "--"]
    proc = subprocess.Popen(run + ["/usr/local/bin/entrypoint.sh", "--port", "0", "--grpc-port", "0", "--threads", "2"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        d = Daemon.attach(proc, log)
        status, body = d.post("/v1/completions", {"model": "model", "prompt": "The capital of France is",
                                                  "max_tokens": 4, "temperature": 0})
        assert status == 200 and body["choices"][0]["text"], body
        check = subprocess.run(BUILDAH + ["run", "--isolation", "chroot", "--env", f"TESSERA_HTTP_PORT={d.http_port}",
                                          container, "--", "/usr/local/bin/healthcheck.sh"], capture_output=True)
        assert check.returncode == 0, check.stderr
        pid = serving_pid(0, time.time() + 10)
        owner = subprocess.run(["ps", "-o", "uid=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()
        assert owner == "10001", "the daemon runs as the image's user"
        os.kill(pid, signal.SIGTERM)  # what the runtime sends PID 1, the exec'd daemon
        assert proc.wait(timeout=60) == 0
        assert "draining" in d.log_text()
    finally:
        if proc.poll() is None:
            proc.kill()
