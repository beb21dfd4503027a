"""The XPU backend on Intel's own OpenCL runtime for CPUs (PyPI
intel-opencl-rt, installed into the test environment by install-deps): the
driver that offers what PoCL does not, unified shared memory and Intel
sub-groups, so the backend's USM allocations and its sub-group decode kernel
(cl/linear_lanes.cl) run here as they would on an Intel GPU. The parity
suite and greedy continuations of the golden prompts against the CPU
backend. Skipped, saying so, where the runtime is not installed."""
import json
import os
import pathlib
import re
import sys

import pytest

from conftest import DATA, run

RUNTIME_LIB = pathlib.Path(sys.prefix) / "lib"


def runtime_installed():
    return (RUNTIME_LIB / "libintelocl.so").exists() and (RUNTIME_LIB / "libimf.so").exists()


pytestmark = pytest.mark.skipif(not runtime_installed(), reason="Intel's OpenCL CPU runtime is not installed (pip intel-opencl-rt)")


@pytest.fixture(scope="module")
def intel_env(tmp_path_factory, tessera_bin):
    """An environment whose ICD loader finds only Intel's CPU driver."""
    vendors = tmp_path_factory.mktemp("vendors")
    (vendors / "intel-cpu.icd").write_text(str(RUNTIME_LIB / "libintelocl.so") + "\n")
    env = dict(os.environ, OCL_ICD_VENDORS=str(vendors), TESSERA_KERNEL_CACHE=str(tmp_path_factory.mktemp("kernels")))
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(RUNTIME_LIB), os.environ.get("LD_LIBRARY_PATH")]))
    env.pop("OCL_ICD_FILENAMES", None)
    listed = run([tessera_bin, "backends", "--json"], env=env)
    assert listed.returncode == 0, listed.stderr
    xpu = next((b for b in json.loads(listed.stdout)["backends"] if b["backend"] == "xpu"), None)
    if xpu is None:
        pytest.skip("this build has no XPU plugin (OpenCL headers not installed)")
    assert xpu["devices"], xpu
    return env


def test_the_device_has_unified_shared_memory_and_intel_sub_groups(tessera_bin, intel_env):
    listed = json.loads(run([tessera_bin, "backends", "--json"], env=intel_env).stdout)
    [xpu] = [b for b in listed["backends"] if b["backend"] == "xpu"]
    description = xpu["devices"][0]["description"]
    assert "Intel(R) OpenCL" in description
    assert "unified shared memory" in description and "Intel sub-groups" in description


def test_parity_suite_passes(tessera_bin, intel_env):
    suite = pathlib.Path(tessera_bin).parent / "tests" / "tessera_gpu_tests"
    if not suite.exists():
        pytest.skip("the parity suite is not built")
    result = run([suite, "--gtest_filter=Backends/*"], env=intel_env, timeout=600)
    out = result.stdout.decode()
    assert result.returncode == 0, out[-4000:]
    passed = re.search(r"\[  PASSED  \] (\d+) tests?", out)
    assert passed and int(passed.group(1)) > 0 and "[  SKIPPED ]" not in out, out[-2000:]


def test_greedy_tokens_match_the_cpu(tessera_bin, smollm2, intel_env):
    # Decode runs the sub-group kernel; each continuation's 32 tokens must
    # be the CPU's on nine of the ten golden prompts.
    cases = json.loads((DATA / "generation-goldens" / "smollm2.json").read_text())["cases"]
    same = 0
    for case in cases:
        outputs = {}
        for device in ("cpu", "xpu:0"):
            result = run([tessera_bin, "generate", "-m", smollm2, "-p", case["prompt"], "-n", "32", "--temperature", "0",
                          "--ignore-eos", "--print-ids", "--device", device, "-t", "2"], env=intel_env, timeout=600)
            assert result.returncode == 0, result.stderr
            outputs[device] = json.loads(result.stdout)
        assert len(outputs["xpu:0"]) == 32
        same += outputs["cpu"] == outputs["xpu:0"]
    assert same >= 9, f"{same}/{len(cases)} prompts"
