"""The XPU backend on Intel's own OpenCL runtime for CPUs (PyPI
intel-opencl-rt, installed into the test environment by install-deps): the
driver that offers what PoCL does not, unified shared memory and Intel
sub-groups, so the backend's USM allocations and its sub-group kernels
(cl/linear_lanes.cl for decode linears, attention's shuffle reductions;
forced on with TESSERA_XPU_SUB_GROUPS=on: on a CPU device `auto` leaves
them off) run here as they would on an Intel GPU. The
parity suite, and greedy continuations of golden prompts of each real model
against the CPU backend. Skipped, saying so, where the runtime is not
installed."""
import json
import os
import pathlib
import re
import sys

import pytest

from conftest import DATA, model_level_models, run

RUNTIME_LIB = pathlib.Path(sys.prefix) / "lib"
MODELS = model_level_models({"smollm2": "smollm2", "gemma3": "gemma3", "qwen2.5-coder": "qwen25_coder"})
# Decode on this runtime with the sub-group kernel takes 5 to 12 s a prompt
# here: a few prompts a model keep the suite's time in bounds; the parity
# suite holds every format to the CPU's bits.
PROMPTS_PER_MODEL = 3


def runtime_installed():
    return (RUNTIME_LIB / "libintelocl.so").exists() and (RUNTIME_LIB / "libimf.so").exists()


pytestmark = pytest.mark.skipif(not runtime_installed(), reason="Intel's OpenCL CPU runtime is not installed (pip intel-opencl-rt)")


def xpu_description(tessera_bin, env):
    listed = run([tessera_bin, "backends", "--json"], env=env, timeout=300)
    assert listed.returncode == 0, listed.stderr
    xpu = next((b for b in json.loads(listed.stdout)["backends"] if b["backend"] == "xpu"), None)
    if xpu is None:
        pytest.skip("this build has no XPU plugin (OpenCL headers not installed)")
    assert xpu["devices"], xpu
    return xpu["devices"][0]["description"]


@pytest.fixture(scope="module")
def intel_env(tmp_path_factory):
    """An environment whose ICD loader finds only Intel's CPU driver."""
    vendors = tmp_path_factory.mktemp("vendors")
    (vendors / "intel-cpu.icd").write_text(str(RUNTIME_LIB / "libintelocl.so") + "\n")
    env = dict(os.environ, OCL_ICD_VENDORS=str(vendors), TESSERA_KERNEL_CACHE=str(tmp_path_factory.mktemp("kernels")))
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(RUNTIME_LIB), os.environ.get("LD_LIBRARY_PATH")]))
    env.pop("OCL_ICD_FILENAMES", None)
    env.pop("TESSERA_XPU_SUB_GROUPS", None)
    return env


@pytest.fixture(scope="module")
def sub_group_env(intel_env):
    return dict(intel_env, TESSERA_XPU_SUB_GROUPS="on")


def test_the_device_has_unified_shared_memory_and_sub_groups_only_on_request(tessera_bin, intel_env, sub_group_env):
    by_default = xpu_description(tessera_bin, intel_env)
    assert "Intel(R) OpenCL" in by_default and "unified shared memory" in by_default
    assert "Intel sub-groups unused on a CPU device" in by_default
    assert "Intel sub-groups (decode linears, attention reductions)" in xpu_description(tessera_bin, sub_group_env)


def test_a_bad_sub_group_setting_is_named(tessera_bin, intel_env):
    listed = run([tessera_bin, "backends"], env=dict(intel_env, TESSERA_XPU_SUB_GROUPS="yes"), timeout=300)
    assert listed.returncode == 0, listed.stderr
    assert b"TESSERA_XPU_SUB_GROUPS must be auto, on or off, not 'yes'" in listed.stdout


def test_parity_suite_passes_with_sub_groups(tessera_bin, sub_group_env):
    suite = pathlib.Path(tessera_bin).parent / "tests" / "tessera_gpu_tests"
    if not suite.exists():
        pytest.skip("the parity suite is not built")
    result = run([suite, "--gtest_filter=Backends/*"], env=sub_group_env, timeout=600)
    out = result.stdout.decode()
    assert result.returncode == 0, out[-4000:]
    passed = re.search(r"\[  PASSED  \] (\d+) tests?", out)
    assert passed and int(passed.group(1)) > 0 and "[  SKIPPED ]" not in out, out[-2000:]


@pytest.mark.parametrize("name", MODELS)
def test_greedy_tokens_with_sub_groups_match_the_cpu(tessera_bin, request, sub_group_env, name):
    model = request.getfixturevalue(MODELS[name])
    cases = json.loads((DATA / "generation-goldens" / f"{name}.json").read_text())["cases"][:PROMPTS_PER_MODEL]
    for case in cases:
        outputs = {}
        for device in ("cpu", "xpu:0"):
            result = run([tessera_bin, "generate", "-m", model, "-p", case["prompt"], "-n", "32", "--temperature", "0",
                          "--ignore-eos", "--print-ids", "--device", device, "-t", "2"], env=sub_group_env, timeout=600)
            assert result.returncode == 0, result.stderr
            outputs[device] = json.loads(result.stdout)
        assert len(outputs["xpu:0"]) == 32
        assert outputs["cpu"] == outputs["xpu:0"], case["prompt"]
