"""Decode speed with a JSON schema against unconstrained decoding, same
model and prompt, through `tessera serve` (streamed, so the time from the
first token to the last counts). Runs interleaved; medians of --runs.

  TESSERA_BIN=build/tessera python tests/bench/structured_output_bench.py MODEL.gguf [--runs 3]
"""
import argparse
import json
import pathlib
import statistics
import sys
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from daemon import Daemon  # noqa: E402
from structured_schemas import SCHEMAS  # noqa: E402

PROMPT = [{"role": "user", "content": "Describe three products of a small bookshop as JSON, with name, price, stock and category."}]


def decode_rate(base, body):
    """Tokens after the first, per second after the first arrived."""
    req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps({**body, "stream": True}).encode(),
                                 headers={"content-type": "application/json"})
    first = last = None
    tokens = 0
    with urllib.request.urlopen(req, timeout=600) as r:
        for line in r:
            if not line.startswith(b"data: {"):
                continue
            chunk = json.loads(line[6:])
            if chunk["choices"] and chunk["choices"][0]["delta"].get("content"):
                now = time.perf_counter()
                first = first or now
                last = now
                tokens += 1
    return (tokens - 1) / (last - first), tokens


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=128)
    args = ap.parse_args()
    binary = pathlib.Path(__import__("os").environ.get("TESSERA_BIN", "build/tessera"))
    d = Daemon(binary, ["--model", args.model, "--served-model-name", "m"])
    schema = {"type": "array", "items": SCHEMAS["product"], "minItems": 3, "maxItems": 3}
    cases = {"unconstrained": {}, "json_schema": {"response_format": {"type": "json_schema", "json_schema": {"name": "p", "schema": schema}}}}
    try:
        for temperature in (0.0, 0.8):
            rates = {name: [] for name in cases}
            for run in range(args.runs + 1):  # the first run warms the grammar's tables and is not counted
                for name, extra in cases.items():
                    body = {"model": "m", "messages": PROMPT, "max_tokens": args.max_tokens, "temperature": temperature,
                            "seed": 7, "ignore_eos": False, **extra}
                    rate, n = decode_rate(d.base, body)
                    if run > 0:
                        rates[name].append(rate)
            base, constrained = statistics.median(rates["unconstrained"]), statistics.median(rates["json_schema"])
            print(f"temperature {temperature}: unconstrained {base:.1f} tok/s, json_schema {constrained:.1f} tok/s, "
                  f"ratio {constrained / base:.3f}  (runs: {[round(r, 1) for r in rates['unconstrained']]} / "
                  f"{[round(r, 1) for r in rates['json_schema']]})")
    finally:
        d.stop()


if __name__ == "__main__":
    main()
