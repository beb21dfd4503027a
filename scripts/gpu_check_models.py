"""The GPU check's model stages (scripts/gpu_check.py): making the random
GGUFs, comparing logits and greedy tokens, serving, and timing."""
import concurrent.futures
import json
import pathlib
import re
import statistics
import subprocess
import sys
import time
import urllib.request

import numpy as np

from make_random_gguf import weight_bytes_per_token

REPO = pathlib.Path(__file__).resolve().parent.parent

# (shape, type): the quick set runs in a dry run on a 2-core machine.
QUICK = [("qwen2.5-0.5b", "q4_k_m"), ("llama-1b", "q4_0")]
FULL = QUICK + [("llama-1b", "q8_0"), ("llama-1b", "f16"), ("llama-8b", "q4_k_m")]


class StageFailed(Exception):
    """A stage's failure, with what to report."""


def make(st, directory, quick):
    """Writes the random GGUFs (in parallel), returns their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    wanted = QUICK if quick else FULL
    paths, procs = [], []
    for shape, kind in wanted:
        path = directory / f"random-{shape}-{kind}.gguf"
        paths.append(path)
        if not path.exists():
            cmd = [sys.executable, str(REPO / "scripts" / "make_random_gguf.py"), "--shape", shape, "--type", kind,
                   "--out", str(directory)]
            st.log.write("$ " + " ".join(cmd) + "\n")
            procs.append(subprocess.Popen(cmd, stdout=st.log, stderr=subprocess.STDOUT))
    for proc in procs:
        try:
            proc.wait(timeout=st.remaining())
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise StageFailed(f"over its limit of {st.limit_s} s writing the models")
        if proc.returncode != 0:
            raise StageFailed(f"make_random_gguf.py exited {proc.returncode} (see models.log)")
    return paths


def relative_logit_error(cpu_file, device_file):
    """max |device - cpu| / max |cpu| over every logit of every position."""
    cpu = np.fromfile(cpu_file, dtype=np.float32)
    dev = np.fromfile(device_file, dtype=np.float32)
    if cpu.size != dev.size or cpu.size == 0:
        return float("inf")
    if not np.isfinite(dev).all() or not np.isfinite(cpu).all():
        return float("inf")
    return float(np.max(np.abs(dev.astype(np.float64) - cpu)) / max(np.max(np.abs(cpu)), 1e-30))


def generated_ids(st, tessera, model, prompt, device_args, tokens=32):
    done = st.run([tessera, "generate", "-m", model, "-p", prompt, "-n", tokens, "--temperature", "0", "--ignore-eos",
                   "--print-ids", *device_args])
    return json.loads(done.stdout.strip().splitlines()[-1])


def greedy_agreement(st, tessera, model, prompt, cpu_threads, other):
    """32 greedy tokens on both sides; where they part, whether the CPU's
    logits there make it a near tie (the two choices within 1e-3 of the
    largest logit)."""
    cpu = generated_ids(st, tessera, model, prompt, ["--device", "cpu", "-t", cpu_threads])
    dev = generated_ids(st, tessera, model, prompt, other)
    result = {"cpu": cpu, "device": dev, "distinct_tokens": len(set(cpu))}
    if cpu == dev:
        return {**result, "verdict": "equal"}
    k = next(i for i, (a, b) in enumerate(zip(cpu, dev)) if a != b)
    prompt_ids = json.loads(st.run([tessera, "tokenize", "-m", model, "-t", prompt, "--add-special"]).stdout)
    out = pathlib.Path(st.log.name).with_suffix(".tie.f32")
    st.run([tessera, "logits", "-m", model, "--token-ids", *(prompt_ids + cpu[:k]), "--no-special", "-o", out,
            "--device", "cpu", "-t", cpu_threads])
    logits = np.fromfile(out, dtype=np.float32).reshape(len(prompt_ids) + k, -1)[-1]
    gap = float(logits[cpu[k]] - logits[dev[k]]) / float(np.max(np.abs(logits)))
    return {**result, "first_difference": k, "relative_gap": gap, "verdict": "near tie" if gap < 1e-3 else "differs"}


def completion(url, prompt, max_tokens=16):
    body = {"model": "m", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True,
            "logprobs": 1}
    request = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        choice = json.loads(response.read())["choices"][0]
    return choice["text"], choice["logprobs"]["token_logprobs"]


def serve_batch_invariance(st, tessera, model, device_args, out, quick=False):
    """32 concurrent requests, then each alone: every answer the same, to
    the last bit of each log-probability."""
    from serve_process import start_serve
    device = device_args[device_args.index("--device") + 1]
    config = (f"server: {{host: 127.0.0.1}}\nmodels:\n  - name: m\n    path: {model}\n    device: {device}\n"
              f"    kv_cache: {{budget_mb: 1024}}\n")
    proc, url = start_serve(str(tessera), config, out, "serve-daemon", timeout=min(60, st.remaining()))
    try:
        count, tokens = (8, 4) if quick else (32, 16)
        prompts = [f"Request {i}: tell me about item {i}" + ", please" * (i % 7) for i in range(count)]
        began = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(count) as pool:
            together = list(pool.map(lambda p: completion(url, p, tokens), prompts))
        concurrent_s = time.monotonic() - began
        alone = [completion(url, p, tokens) for p in prompts]
        st.remaining()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    differing = [i for i, (a, b) in enumerate(zip(together, alone)) if a != b]
    details = {"requests": len(prompts), "differing": differing, "concurrent_s": round(concurrent_s, 2)}
    if differing:
        raise StageFailed(f"{len(differing)} of {len(prompts)} answers changed with the batch: requests {differing[:8]}")
    return details


def timed_generate(st, tessera, model, device_args, prompt, tokens):
    done = st.run([tessera, "generate", "-m", model, "-p", prompt, "-n", tokens, "--temperature", "0", "--ignore-eos",
                   "--warmup", *device_args])
    text = done.stdout + done.stderr
    m = re.search(r"prompt: (\d+) tokens in [0-9.]+ s \(([0-9.]+) tok/s\); generated: (\d+) tokens in [0-9.]+ s "
                  r"\(([0-9.]+) tok/s\)", text)
    if not m:
        raise StageFailed("no timing line in tessera generate's output")
    return int(m.group(1)), float(m.group(2)), float(m.group(4))


def device_peak_gbs():
    """A large device-to-device copy through PyTorch, bytes read + written."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    a = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        b.copy_(a)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return round(2 * a.numel() / statistics.median(times) / 1e9, 1)


def llama_bench(st, binary, model, prompt_tokens, gen_tokens):
    done = st.run([binary, "-m", model, "-p", prompt_tokens, "-n", gen_tokens, "-ngl", "99", "-r", "3", "-o", "json"])
    rows = json.loads(done.stdout)
    prefill = next(r["avg_ts"] for r in rows if r["n_prompt"] > 0)
    decode = next(r["avg_ts"] for r in rows if r["n_gen"] > 0)
    return prefill, decode


def bench(st, tessera, models, device_args, llama, accelerator, quick=False):
    """Prefill of a ~512-token prompt and 64 decoded tokens (quick: ~130
    and 8), each timed by tessera generate after a warm-up run, medians of
    three; llama-bench's means of three on the same token counts."""
    long_prompt = " ".join(["The history of printing begins with movable type and oil-based inks."] * (10 if quick else 40))
    gen_tokens = 8 if quick else 64
    peak = device_peak_gbs() if accelerator else None
    rows = []
    for model in models:
        weights = weight_bytes_per_token(model)
        repeats = 1 if quick else 3  # medians of three, each after its own warm-up
        prefills = [timed_generate(st, tessera, model, device_args, long_prompt, 1) for _ in range(repeats)]
        prompt_tokens, prefill = prefills[0][0], statistics.median(p[1] for p in prefills)
        decode = statistics.median(timed_generate(st, tessera, model, device_args, "Hello", gen_tokens)[2]
                                   for _ in range(repeats))
        row = {"model": model.name, "weights_mb": round(weights / 1e6, 1), "prompt_tokens": prompt_tokens,
               "prefill_tok_s": prefill, "decode_tok_s": decode, "decode_gbs": round(weights * decode / 1e9, 1)}
        if peak:
            row["decode_fraction_of_peak"] = round(weights * decode / 1e9 / peak, 3)
        if llama:
            peer_prefill, peer_decode = llama_bench(st, llama, model, prompt_tokens, gen_tokens)
            row.update(llama_prefill_tok_s=round(peer_prefill, 1), llama_decode_tok_s=round(peer_decode, 1),
                       prefill_ratio=round(prefill / peer_prefill, 3), decode_ratio=round(decode / peer_decode, 3))
        rows.append(row)
        st.log.write(json.dumps(row) + "\n")
    return {"peak_gbs": peak, "rows": rows}
