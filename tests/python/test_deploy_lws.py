"""deploy/k8s/overlays/cpu-lws: tensor parallelism across pods as a
LeaderWorkerSet. The rendered objects validate against Kubernetes 1.30 (the
pod templates as PodTemplates), the group agrees with the served
configuration and the daemon's flags, and the leader's and the worker's
commands, with the variables the LeaderWorkerSet controller sets, serve a
completion together on this machine."""
import os
import re
import signal
import subprocess

import pytest
import yaml

from conftest import free_port
from daemon import Daemon
from test_deploy import DEPLOY, KUBERNETES, PRESTOP_TO_KILL_MARGIN_S, by_kind, rendered, run, served_config

OVERLAY = "cpu-lws"
# The fields of leaderworkerset.x-k8s.io/v1 (the controller's CRD), which no
# Kubernetes schema holds.
LWS_SPEC_FIELDS = {"replicas", "leaderWorkerTemplate", "rolloutStrategy", "startupPolicy", "networkConfig"}
LWS_TEMPLATE_FIELDS = {"size", "restartPolicy", "leaderTemplate", "workerTemplate", "subGroupPolicy",
                       "volumeClaimTemplates"}
GROUP_FAILED_EXIT = 3


@pytest.fixture(scope="module")
def docs():
    return rendered(OVERLAY)


def templates(docs):
    group = by_kind(docs, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    return group["leaderTemplate"], group["workerTemplate"]


def expand(arg, env):
    """Kubernetes' $(VAR) expansion of a container's command and args."""
    return re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], arg)


def host_port(address):
    host, _, port = address.rpartition(":")
    return host, int(port)


def test_objects_validate_against_kubernetes_1_30(docs):
    import kubernetes_validate
    kinds = {d["kind"] for d in docs}
    assert "Deployment" not in kinds, "the LeaderWorkerSet replaces the Deployment"
    assert {"LeaderWorkerSet", "Service", "ConfigMap", "NetworkPolicy", "HorizontalPodAutoscaler"} <= kinds
    objects = [d for d in docs if d["kind"] not in ("LeaderWorkerSet", "ServiceMonitor")]
    for template in templates(docs):
        objects.append({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "tessera"},
                        "template": template})
    for doc in objects:
        try:
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as e:
            pytest.fail(f"{doc['kind']}/{doc['metadata']['name']}: {e.message} at {list(e.path)}")


def test_group_fields_are_the_controllers(docs):
    lws = by_kind(docs, "LeaderWorkerSet")
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert set(lws["spec"]) <= LWS_SPEC_FIELDS
    group = lws["spec"]["leaderWorkerTemplate"]
    assert set(group) <= LWS_TEMPLATE_FIELDS
    assert group["restartPolicy"] == "RecreateGroupOnPodRestart", "a lost rank ends its group's collectives"
    # LeaderReady would wait for a leader that is ready only once its workers joined.
    assert lws["spec"]["startupPolicy"] == "LeaderCreated"


def test_group_agrees_with_the_served_configuration(docs, tessera_bin):
    config = served_config(docs)
    parallel, server = config["parallel"], config["server"]
    group = by_kind(docs, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    leader, worker = templates(docs)
    assert group["size"] == parallel["tensor"]
    assert parallel["spawn_workers"] is False, "worker pods are the ranks"
    store_host, store_port = host_port(parallel["leader"])
    assert store_host == "0.0.0.0", "workers reach the store from other pods"

    lead = leader["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in lead["ports"]}
    assert ports == {"http": server["http_port"], "grpc": server["grpc_port"], "rendezvous": store_port}
    start = lead["startupProbe"]
    assert start["periodSeconds"] * start["failureThreshold"] > parallel["join_timeout_s"]
    pre_stop = lead["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert leader["spec"]["terminationGracePeriodSeconds"] >= server["drain_timeout_s"] + pre_stop + PRESTOP_TO_KILL_MARGIN_S

    work = worker["spec"]["containers"][0]
    argv = work["command"] + work["args"]
    assert argv[:2] == ["/usr/local/bin/tessera", "worker"]
    flags = run([tessera_bin, "worker", "--help"]).stdout.decode()
    for flag in argv[2::2]:
        assert flag in flags, flag
    options = dict(zip(argv[2::2], argv[3::2]))
    assert options["--rank"] == "$(LWS_WORKER_INDEX)" and options["--world"] == "$(LWS_GROUP_SIZE)"
    assert options["--leader"] == f"$(LWS_LEADER_ADDRESS):{store_port}"
    assert float(options["--join-timeout"]) >= parallel["join_timeout_s"]
    mounts = {m["name"]: m["mountPath"] for m in work["volumeMounts"]}
    assert all(m["path"].startswith(mounts["models"] + "/") for m in config["models"]), \
        "workers open the model at the leader's path"


def test_only_leaders_serve_and_groups_scale(docs):
    leader, worker = templates(docs)
    selector = by_kind(docs, "Service")["spec"]["selector"]
    assert selector.items() <= leader["metadata"]["labels"].items()
    assert not selector.items() <= worker["metadata"]["labels"].items(), "workers answer no HTTP"
    target = by_kind(docs, "HorizontalPodAutoscaler")["spec"]["scaleTargetRef"]
    lws = by_kind(docs, "LeaderWorkerSet")
    assert (target["apiVersion"], target["kind"], target["name"]) == (lws["apiVersion"], lws["kind"], lws["metadata"]["name"])
    policy = by_kind(docs, "NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"] == {"leaderworkerset.sigs.k8s.io/name": lws["metadata"]["name"]}
    open_ports = [p["port"] for rule in policy["ingress"] if "from" not in rule for p in rule["ports"]]
    assert sorted(open_ports) == ["grpc", "http"], "the store and collectives stay inside the set"


def secret_env(container, secrets):
    """The variables a container takes from Secrets, with `secrets`
    ({"name/key": value}) playing the cluster's Secrets."""
    out = {}
    for e in container.get("env", []):
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        if ref:
            out[e["name"]] = secrets[f"{ref['name']}/{ref['key']}"]
    return out


def test_every_rank_takes_the_same_rendezvous_secret_from_a_secret(docs):
    leader, worker = templates(docs)
    refs = [{e["name"]: e["valueFrom"]["secretKeyRef"] for e in t["spec"]["containers"][0].get("env", []) if "valueFrom" in e}
            for t in (leader, worker)]
    assert refs[0].get("TESSERA_RENDEZVOUS_SECRET"), "the leader's store must be closed to strangers"
    assert refs[0]["TESSERA_RENDEZVOUS_SECRET"] == refs[1].get("TESSERA_RENDEZVOUS_SECRET")
    argv = " ".join(worker["spec"]["containers"][0]["args"])
    assert "secret" not in argv.lower(), "a secret on a command line is readable by every local user"


def local_group_config(docs, smollm2, tmp_path, collective_timeout_s):
    """The group's served configuration on loopback with a free store port:
    (its path, the store port it replaced, the new one)."""
    config = served_config(docs)
    _, served_port = host_port(config["parallel"]["leader"])
    store_port = free_port()
    config["server"]["host"] = "127.0.0.1"
    config["parallel"].update(leader=f"0.0.0.0:{store_port}", collective_timeout_s=collective_timeout_s)
    config["models"][0].update(path=str(smollm2), threads=1, kv_cache={"budget_mb": 64})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, served_port, store_port


def test_leader_and_worker_commands_serve_together(docs, tessera_bin, smollm2, tmp_path):
    config_path, served_port, store_port = local_group_config(docs, smollm2, tmp_path, 5)
    group = by_kind(docs, "LeaderWorkerSet")["spec"]["leaderWorkerTemplate"]
    leader_template, worker = templates(docs)
    work = worker["spec"]["containers"][0]
    lws_env = {"LWS_LEADER_ADDRESS": "127.0.0.1", "LWS_GROUP_SIZE": str(group["size"]), "LWS_WORKER_INDEX": "1"}
    argv = [str(tessera_bin)] + [expand(a, lws_env).replace(f":{served_port}", f":{store_port}") for a in work["args"]]

    leader_log = open(tmp_path / "leader.log", "w+")
    worker_log = open(tmp_path / "worker.log", "w+")
    # Both templates take the group's secret from the same Secret key; here
    # the test plays the Secret.
    secret = {"tessera-rendezvous/secret": "0123456789abcdef" * 4}
    leader_env = dict(os.environ, TESSERA_BIN=str(tessera_bin), TESSERA_CONFIG=str(config_path),
                      **secret_env(leader_template["spec"]["containers"][0], secret))
    worker_env = dict(os.environ, **secret_env(work, secret))
    leader = subprocess.Popen(["sh", str(DEPLOY / "docker" / "entrypoint.sh"), "--port", "0", "--grpc-port", "0"],
                              stdout=leader_log, stderr=subprocess.STDOUT, env=leader_env)
    rank = subprocess.Popen(argv, stdout=worker_log, stderr=subprocess.STDOUT, env=worker_env)
    try:
        d = Daemon.attach(leader, leader_log)
        status, body = d.post("/v1/completions", {"model": "model", "prompt": "The capital of France is",
                                                  "max_tokens": 8, "temperature": 0})
        assert status == 200 and body["choices"][0]["text"], body
        assert "split over 2 tensor-parallel ranks" in d.log_text()
        leader.send_signal(signal.SIGTERM)
        assert leader.wait(timeout=60) == 0
        # Released by the leader as it exits: the group ends cleanly.
        assert rank.wait(timeout=30) == 0, open(tmp_path / "worker.log").read()
    finally:
        for p in (leader, rank):
            if p.poll() is None:
                p.kill()


def test_worker_whose_leader_dies_exits_for_the_group_restart(docs, tessera_bin, smollm2, tmp_path):
    config_path, _, store_port = local_group_config(docs, smollm2, tmp_path, 2)
    leader_log = open(tmp_path / "leader.log", "w+")
    env = dict(os.environ, TESSERA_RENDEZVOUS_SECRET="s" * 32)
    leader = subprocess.Popen([str(tessera_bin), "serve", "--config", str(config_path), "--port", "0",
                               "--grpc-port", "0"], stdout=leader_log, stderr=subprocess.STDOUT, env=env)
    rank = subprocess.Popen([str(tessera_bin), "worker", "--rank", "1", "--world", "2", "--leader",
                             f"127.0.0.1:{store_port}"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, env=env)
    try:
        Daemon.attach(leader, leader_log)
        leader.kill()
        assert rank.wait(timeout=30) == GROUP_FAILED_EXIT
    finally:
        for p in (leader, rank):
            if p.poll() is None:
                p.kill()
