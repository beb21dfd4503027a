"""Backends loaded as plugins: `tessera backends` lists what loaded and why
anything else did not (the HIP plugin, built wherever hipcc is, loads without
a ROCm driver and says so); with the OpenCL drivers hidden the XPU backend finds
no device, says why, and the daemon starts and serves on the CPU; a file
that is not a plugin is refused with the loader's reason."""
import json
import os
import pathlib
import subprocess

import pytest

from conftest import run
from daemon import Daemon


def plugin_dir(tessera_bin):
    return pathlib.Path(tessera_bin).parent / "backends"


def xpu_plugin_built(tessera_bin):
    return (plugin_dir(tessera_bin) / "libtessera-backend-xpu.so").exists()


def backends(tessera_bin, env=None):
    result = run([tessera_bin, "backends", "--json"], env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def hidden_icds(tmp_path):
    """An environment whose ICD loader finds no OpenCL driver."""
    empty = tmp_path / "vendors"
    empty.mkdir()
    env = dict(os.environ, OCL_ICD_VENDORS=str(empty))
    env.pop("OCL_ICD_FILENAMES", None)
    return env


def by_name(listing):
    return {b["backend"]: b for b in listing["backends"]}


def test_cpu_is_built_in_and_listed(tessera_bin):
    cpu = by_name(backends(tessera_bin))["cpu"]
    assert cpu["source"] == "built in"
    assert len(cpu["devices"]) == 1 and "isa" in cpu["devices"][0]["description"]


def test_xpu_plugin_loads_from_beside_the_binary(tessera_bin):
    if not xpu_plugin_built(tessera_bin):
        pytest.skip("this build has no XPU plugin (OpenCL headers not installed)")
    xpu = by_name(backends(tessera_bin))["xpu"]
    assert xpu["source"].endswith("/libtessera-backend-xpu.so")


def test_without_opencl_drivers_the_xpu_backend_says_why_and_the_daemon_serves_on_the_cpu(tessera_bin, smollm2, tmp_path):
    if not xpu_plugin_built(tessera_bin):
        pytest.skip("this build has no XPU plugin (OpenCL headers not installed)")
    env = hidden_icds(tmp_path)
    xpu = by_name(backends(tessera_bin, env))["xpu"]
    assert xpu["devices"] == []
    assert "no OpenCL platform" in xpu["unusable_devices"]
    text = run([tessera_bin, "backends"], env=env)
    assert "not used: no OpenCL platform" in text.stdout.decode()

    refused = run([tessera_bin, "generate", "-m", smollm2, "-p", "hi", "-n", "2", "--device", "xpu:0"], env=env)
    assert refused.returncode != 0
    assert b"no OpenCL platform" in refused.stderr

    log = open(tmp_path / "serve.log", "w+")
    proc = subprocess.Popen([str(tessera_bin), "serve", "--host", "127.0.0.1", "--port", "0", "--grpc-port", "0",
                             "--threads", "2", "--model", str(smollm2), "--served-model-name", "smollm2"],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    daemon = Daemon.attach(proc, log)
    try:
        status, body, _ = daemon.request("POST", "/v1/completions",
                                         {"model": "smollm2", "prompt": "The capital of France is", "max_tokens": 4})
        assert status == 200, body
        assert json.loads(body)["choices"][0]["text"]
        assert "backend xpu: devices not used: no OpenCL platform" in daemon.log_text()
    finally:
        daemon.stop()


def test_hip_plugin_loads_and_says_why_no_rocm_device_is_used(tessera_bin, smollm2):
    if not (plugin_dir(tessera_bin) / "libtessera-backend-hip.so").exists():
        pytest.skip("this build has no HIP plugin (hipcc not installed)")
    hip = by_name(backends(tessera_bin))["hip"]
    assert hip["source"].endswith("/libtessera-backend-hip.so")
    if pathlib.Path("/dev/kfd").exists():
        pytest.skip("this machine has a ROCm driver: the GPU suite covers it")
    assert hip["devices"] == []
    assert "no ROCm device" in hip["unusable_devices"]
    refused = run([tessera_bin, "generate", "-m", smollm2, "-p", "hi", "-n", "2", "--device", "hip:0"])
    assert refused.returncode != 0
    assert b"hip:0" in refused.stderr


def test_a_file_that_is_not_a_plugin_is_refused_with_the_reason(tessera_bin, smollm2, tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "libtessera-backend-broken.so").write_bytes(b"not an ELF file")
    env = dict(os.environ, TESSERA_BACKEND_DIR=str(plugins))
    listing = backends(tessera_bin, env)
    assert listing["searched"] == [str(plugins)]
    [refused] = listing["plugins_not_loaded"]
    assert refused["plugin"].endswith("libtessera-backend-broken.so")
    assert refused["reason"]
    assert "cpu" in by_name(listing)
    served = run([tessera_bin, "generate", "-m", smollm2, "-p", "hi", "-n", "2"], env=env)
    assert served.returncode == 0, served.stderr


def xpu_description(tessera_bin, env):
    xpu = by_name(backends(tessera_bin, env)).get("xpu")
    if not xpu or not xpu["devices"]:
        pytest.skip("no XPU device on this machine")
    return xpu["devices"][0]["description"]


def test_built_kernels_are_kept_on_disk_and_a_damaged_copy_is_rebuilt(tessera_bin, tmp_path):
    if not xpu_plugin_built(tessera_bin):
        pytest.skip("this build has no XPU plugin (OpenCL headers not installed)")
    cache = tmp_path / "kernels"
    env = dict(os.environ, TESSERA_KERNEL_CACHE=str(cache))
    assert "kernels from cache" not in xpu_description(tessera_bin, env)
    [built] = list((cache / "opencl-program").iterdir())  # an artifact cache entry (engine/io/artifact_cache.h)
    assert built.stat().st_size > 0
    assert "kernels from cache" in xpu_description(tessera_bin, env)
    assert run([tessera_bin, "cache", "verify", "--dir", cache], env=env).returncode == 0
    damaged = bytearray(built.read_bytes())
    damaged[-100] ^= 0xff
    built.write_bytes(bytes(damaged))
    assert "kernels from cache" not in xpu_description(tessera_bin, env)
    assert "kernels from cache" in xpu_description(tessera_bin, env)
