"""The three real models on each accelerator device present (the first CUDA
GPU; the first XPU device, which PoCL provides on a CPU) against the CPU
backend: greedy continuations of the golden prompts and perplexity.
Skipped, saying so, for a kind with no device here. TESSERA_ACCEL_REPORT
names a JSON-lines file that receives the figures; TESSERA_TEST_MODELS
names the models collected (conftest.model_level_models), TESSERA_ACCEL_PPL_CHUNKS
limits the perplexity runs to that many 512-token chunks (0: all) and
TESSERA_ACCEL_PPL_MODELS those models' perplexity runs to some of them: PoCL
runs the kernels on this CPU, some fifty times slower than the CPU backend."""
import json
import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import DATA, model_level_models, run
from daemon import Daemon

ALL_MODELS = {"smollm2": "smollm2", "gemma3": "gemma3", "qwen2.5-coder": "qwen25_coder"}


MODELS = model_level_models(ALL_MODELS)


def cuda_present():
    if not shutil.which("nvidia-smi"):
        return False
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return listed.returncode == 0 and "GPU" in listed.stdout


def xpu_present():
    binary = os.environ.get("TESSERA_BIN")
    if not binary:
        return False
    listed = subprocess.run([binary, "backends", "--json"], capture_output=True, text=True)
    if listed.returncode != 0:
        return False
    return any(b["backend"] == "xpu" and b["devices"] for b in json.loads(listed.stdout)["backends"])


DEVICES = [pytest.param("cuda:0", marks=pytest.mark.skipif(not cuda_present(), reason="no NVIDIA GPU on this machine")),
           pytest.param("xpu:0", marks=pytest.mark.skipif(not xpu_present(), reason="no OpenCL device on this machine"))]


def report(record):
    path = os.environ.get("TESSERA_ACCEL_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")


# CPU runs take at most four threads: on a 16-vCPU GPU host, sixteen threads
# were seen to stall the CPU backend, and more threads than cores stall it too.
CPU_THREADS = ["-t", str(min(4, os.cpu_count() or 1))]
# PoCL runs the kernels on the CPU: a perplexity chunk of the larger models
# takes minutes there.
SLOW_RUN_S = 1800


def greedy(tessera_bin, model, prompt, device):
    result = run([tessera_bin, "generate", "-m", model, "-p", prompt, "-n", "32", "--temperature", "0", "--ignore-eos",
                  "--print-ids", "--device", device] + CPU_THREADS, timeout=SLOW_RUN_S)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", MODELS)
def test_greedy_tokens_match_the_cpu_on_nine_of_ten_prompts(tessera_bin, request, name, device):
    model = request.getfixturevalue(MODELS[name])
    prompts = [c["prompt"] for c in json.loads((DATA / "generation-goldens" / f"{name}.json").read_text())["cases"]]
    same = 0
    seconds = {"cpu": 0.0, device: 0.0}
    for prompt in prompts:
        outputs = {}
        for where in ("cpu", device):
            start = time.monotonic()
            outputs[where] = greedy(tessera_bin, model, prompt, where)
            seconds[where] += time.monotonic() - start
        assert len(outputs[device]) == 32
        same += outputs["cpu"] == outputs[device]
    report({"model": name, "device": device, "greedy_identical": same, "prompts": len(prompts),
            "seconds_cpu": round(seconds["cpu"], 1), "seconds_device": round(seconds[device], 1)})
    assert same >= 9, f"{same}/{len(prompts)} prompts"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", MODELS)
def test_logits_of_a_long_prompt_are_the_cpus_bits(tessera_bin, request, tmp_path, name, device):
    # Every op follows the CPU's arithmetic, the angles of RoPE included
    # (read from the host's table): a whole prefill's logits, every
    # position, have the CPU's bits.
    model = request.getfixturevalue(MODELS[name])
    prompt = (DATA / "perplexity" / "gpl-3.0.txt").read_text()[:600]
    logits = {}
    for where in ("cpu", device):
        out = tmp_path / f"{where}.f32"
        result = run([tessera_bin, "logits", "-m", model, "-p", prompt, "-o", out, "--device", where] + CPU_THREADS,
                     timeout=SLOW_RUN_S)
        assert result.returncode == 0, result.stderr
        logits[where] = out.read_bytes()
    assert len(logits["cpu"]) > 100 * 4 * 49152
    assert logits["cpu"] == logits[device]


def perplexity(tessera_bin, model, device):
    chunks = os.environ.get("TESSERA_ACCEL_PPL_CHUNKS", "0")
    result = run([tessera_bin, "perplexity", "-m", model, "-f", DATA / "perplexity" / "gpl-3.0.txt", "--ctx", "512",
                  "--chunks", chunks, "--device", device] + CPU_THREADS, timeout=SLOW_RUN_S)
    assert result.returncode == 0, result.stderr
    return float(re.search(rb"PPL = ([0-9.]+)", result.stdout + result.stderr).group(1))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", MODELS)
def test_perplexity_within_half_a_percent_of_the_cpu(tessera_bin, request, name, device):
    wanted = os.environ.get("TESSERA_ACCEL_PPL_MODELS", "all")
    if wanted != "all" and name not in wanted.split(","):
        pytest.skip(f"TESSERA_ACCEL_PPL_MODELS={wanted}")
    model = request.getfixturevalue(MODELS[name])
    cpu, accelerated = perplexity(tessera_bin, model, "cpu"), perplexity(tessera_bin, model, device)
    report({"model": name, "device": device, "ppl_cpu": cpu, "ppl_device": accelerated, "relative": accelerated / cpu - 1,
            "chunks": os.environ.get("TESSERA_ACCEL_PPL_CHUNKS", "all")})
    assert abs(accelerated / cpu - 1) < 0.005, (cpu, accelerated)


@pytest.mark.parametrize("device", DEVICES)
def test_serves_concurrent_requests_with_the_cpus_answers(tessera_bin, smollm2, device):
    # Four greedy completions at once, batched by the scheduler on the
    # device, answer as the CPU backend serving the same requests does.
    answers = {}
    for where in ("cpu", device):
        config = f"models:\n  - name: smollm2\n    path: {smollm2}\n    device: {where}\n"
        daemon = Daemon(tessera_bin, [], config_yaml=config)
        try:
            assert f"on {where} in" in daemon.log_text()
            with ThreadPoolExecutor(4) as pool:
                replies = list(pool.map(lambda i: daemon.request("POST", "/v1/completions", {
                    "model": "smollm2", "prompt": f"Count to {i}:", "max_tokens": 16, "temperature": 0}), range(4)))
            assert all(status == 200 for status, _, _ in replies), replies
            answers[where] = [json.loads(body)["choices"][0]["text"] for _, body, _ in replies]
        finally:
            daemon.stop()
    assert answers["cpu"] == answers[device]
