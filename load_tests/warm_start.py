"""Cold and warm starts: seconds from `tessera serve` to /health 200 and to
the first streamed token, medians of N runs each, for a GGUF file served as
stored, a model quantized at load (a16w4) with and without the artifact
cache, and a json_schema request's first token with and without it (the
grammar's position tables over the --quantize model's vocabulary).

  python load_tests/warm_start.py --binary build/tessera --runs 5 \
      --gguf ~/.cache/tessera/models/SmolLM2-135M-Instruct.Q4_1.gguf \
      --quantize ~/.cache/tessera/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf

"cold" for the quantized model has an empty cache folder each run; "warm"
reuses the folder the first cold run filled."""
import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
          "required": ["name", "age"]}


def config(model, cache_dir=None, scheme=None):
    text = "server:\n  host: 127.0.0.1\n"
    if cache_dir:
        text += f"  cache_dir: {cache_dir}\n"
    text += f"models:\n  - name: m\n    path: {model}\n    kv_cache: {{budget_mb: 64}}\n"
    if scheme:
        text += f"    quantization: {{scheme: {scheme}}}\n"
    return text


def first_token_seconds(base, t0, body):
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            if raw.startswith(b"data: {"):
                return time.monotonic() - t0
    raise RuntimeError("no token streamed")


def one_start(binary, text, work, with_schema):
    """(seconds to /health 200, seconds to the first token) from process start."""
    cfg = pathlib.Path(work) / "c.yaml"
    cfg.write_text(text)
    log = open(pathlib.Path(work) / "serve.log", "w")
    t0 = time.monotonic()
    proc = subprocess.Popen([binary, "serve", "--config", str(cfg), "--port", "18311", "--grpc-port", "18312", "--threads", "2"],
                            stdout=log, stderr=subprocess.STDOUT)
    base = "http://127.0.0.1:18311"
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(pathlib.Path(log.name).read_text())
            try:
                with urllib.request.urlopen(base + "/health", timeout=1) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.01)
        health = time.monotonic() - t0
        body = {"model": "m", "prompt": "Name: Ada, age 36. As JSON:", "max_tokens": 4, "stream": True, "temperature": 0}
        if with_schema:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMA}}
        return health, first_token_seconds(base, t0, body)
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def median_pair(results):
    return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/tessera")
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--quantize", required=True, help="a model quantized at load (a16w4)")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        cache = pathlib.Path(work) / "cache"
        for label, text, schema in [("gguf", config(args.gguf), False), ("gguf json_schema", config(args.gguf), True)]:
            rows.append((label, median_pair([one_start(args.binary, text, work, schema) for _ in range(args.runs)])))
        tables = pathlib.Path(work) / "tables"
        cold_schema = []
        for _ in range(args.runs):
            shutil.rmtree(tables, ignore_errors=True)
            cold_schema.append(one_start(args.binary, config(args.quantize, tables), work, True))
        rows.append(("json_schema, larger vocab, cold", median_pair(cold_schema)))
        warm_schema = [one_start(args.binary, config(args.quantize, tables), work, True) for _ in range(args.runs)]
        rows.append(("json_schema, larger vocab, warm", median_pair(warm_schema)))
        cold = []
        for _ in range(args.runs):
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(one_start(args.binary, config(args.quantize, cache, "a16w4"), work, False))
        rows.append(("a16w4 at load, cold cache", median_pair(cold)))
        warm = [one_start(args.binary, config(args.quantize, cache, "a16w4"), work, False) for _ in range(args.runs)]
        rows.append(("a16w4 at load, warm cache", median_pair(warm)))
    print(f"medians of {args.runs} starts (seconds from `tessera serve`)")
    print(f"{'start':32s} {'/health 200':>12s} {'first token':>12s}")
    for label, (health, token) in rows:
        print(f"{label:32s} {health:12.3f} {token:12.3f}")
    cold_h, warm_h = rows[-2][1][0], rows[-1][1][0]
    print(f"warm start {cold_h / warm_h:.1f}x faster to /health for the model quantized at load")


if __name__ == "__main__":
    main()
