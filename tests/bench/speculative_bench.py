#!/usr/bin/env python3
"""Speculative decoding on code-editing requests: the same greedy chat
requests against `tessera serve` without speculation, with
`speculative: {method: ngram}` and, given --draft, with
`speculative: {method: draft_model}`, in the same run. Each request asks for an
edit of a piece of code given in the prompt, so most of the answer is in
the prompt.

Reported per configuration: decode tok/s (tokens after the first over the
time from the first streamed token to the last, summed over the prompt set;
median of --repeats runs), mean time to first token, the share of proposed
draft tokens accepted (from /metrics), and whether every answer is identical
to the one without speculation (it must be: the run fails otherwise).

Usage:
  python tests/bench/speculative_bench.py \\
      --model ~/.cache/tessera/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf [--repeats 3] [--draft-tokens 7]
      [--draft DRAFT.gguf --draft-model-tokens 4]
"""
import argparse
import pathlib
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import openai

ROOT = pathlib.Path(__file__).resolve().parents[2]

PYTHON_CART = '''def total_price(items, tax_rate):
    subtotal = 0
    for item in items:
        subtotal += item.price * item.quantity
    tax = subtotal * tax_rate
    return subtotal + tax


def apply_discount(price, discount):
    if discount < 0 or discount > 1:
        raise ValueError("discount must be between 0 and 1")
    return price * (1 - discount)
'''

PYTHON_STATS = '''import math


def mean(values):
    return sum(values) / len(values)


def variance(values):
    m = mean(values)
    return sum((v - m) ** 2 for v in values) / len(values)


def stddev(values):
    return math.sqrt(variance(values))


def zscores(values):
    m = mean(values)
    s = stddev(values)
    return [(v - m) / s for v in values]
'''

JS_USERS = '''function findUser(users, id) {
  for (let i = 0; i < users.length; i++) {
    if (users[i].id === id) {
      return users[i];
    }
  }
  return null;
}

function activeUsers(users) {
  const result = [];
  for (let i = 0; i < users.length; i++) {
    if (users[i].active) {
      result.push(users[i]);
    }
  }
  return result;
}
'''

C_BUFFER = '''#include <stdlib.h>
#include <string.h>

struct buffer {
  char *data;
  size_t size;
  size_t capacity;
};

int buffer_append(struct buffer *b, const char *bytes, size_t n) {
  if (b->size + n > b->capacity) {
    size_t capacity = b->capacity * 2;
    char *data = realloc(b->data, capacity);
    if (data == NULL) return -1;
    b->data = data;
    b->capacity = capacity;
  }
  memcpy(b->data + b->size, bytes, n);
  b->size += n;
  return 0;
}
'''

PROMPTS = [
    "Rename the function total_price to compute_total. Reply with the full code only.\n\n```python\n" + PYTHON_CART + "```",
    "Add a one-line docstring to every function. Reply with the full code only.\n\n```python\n" + PYTHON_STATS + "```",
    "Rename the variable `users` to `people` everywhere. Reply with the full code only.\n\n```javascript\n" + JS_USERS + "```",
    "Fix the bug: when capacity * 2 is still smaller than size + n the buffer overflows. Reply with the full code only.\n\n```c\n"
    + C_BUFFER + "```",
    "Replace `let i = 0` loops with `for...of` loops. Reply with the full code only.\n\n```javascript\n" + JS_USERS + "```",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, tessera, model, threads, speculative):
        """`speculative`: None or the YAML mapping of the model's `speculative` key."""
        self.port = free_port()
        lines = ["models:", "  - name: m", f"    path: {model}", f"    threads: {threads}"]
        if speculative:
            lines.append(f"    speculative: {speculative}")
        self.config = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        self.config.write("\n".join(lines) + "\n")
        self.config.flush()
        argv = [tessera, "serve", "--config", self.config.name, "--host", "127.0.0.1", "--port", str(self.port), "--grpc-port", "0"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("tessera serve exited")
            try:
                with urllib.request.urlopen(self.base + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.2)
        self.client = openai.OpenAI(base_url=self.base + "/v1", api_key="none")

    def metric(self, name):
        text = urllib.request.urlopen(self.base + "/metrics").read().decode()
        m = re.search(rf"^tessera:{name}\{{[^}}]*\}} (\S+)$", text, re.M)
        return float(m.group(1)) if m else 0.0

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def run_prompt(server, prompt, max_tokens):
    """(text, streamed tokens, seconds to the first token, seconds from the first to the last)."""
    t0 = time.perf_counter()
    first = last = None
    parts, tokens = [], 0
    stream = server.client.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}], temperature=0,
                                                   max_tokens=max_tokens, stream=True, stream_options={"include_usage": True})
    for chunk in stream:
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
        if chunk.choices and chunk.choices[0].delta.content:
            now = time.perf_counter()
            first = first or now
            last = now
            parts.append(chunk.choices[0].delta.content)
    return "".join(parts), tokens, first - t0, last - first


def run_set(server, max_tokens):
    answers, decode_tokens, decode_s, ttft = [], 0, 0.0, []
    for prompt in PROMPTS:
        text, tokens, first_s, rest_s = run_prompt(server, prompt, max_tokens)
        answers.append(text)
        decode_tokens += tokens - 1
        decode_s += rest_s
        ttft.append(first_s)
    return answers, decode_tokens / decode_s, statistics.mean(ttft)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tessera", default=str(ROOT / "build" / "tessera"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=320)
    ap.add_argument("--draft-tokens", type=int, default=7, help="proposals per step, prompt lookup")
    ap.add_argument("--draft", help="a draft model sharing the model's tokenizer")
    ap.add_argument("--draft-model-tokens", type=int, default=4, help="proposals per step, draft model")
    a = ap.parse_args()

    configs = [("plain", None), ("ngram", f"{{method: ngram, num_speculative_tokens: {a.draft_tokens}}}")]
    if a.draft:
        configs.append(("draft", f"{{method: draft_model, model: {a.draft}, num_speculative_tokens: {a.draft_model_tokens}}}"))
    results = {}
    for name, spec in configs:
        server = Server(a.tessera, a.model, a.threads, spec)
        try:
            runs = [run_set(server, a.max_tokens) for _ in range(a.repeats)]
            drafted = server.metric("spec_decode_num_draft_tokens_total")
            accepted = server.metric("spec_decode_num_accepted_tokens_total")
        finally:
            server.stop()
        results[name] = (runs, accepted / drafted if drafted else 0.0)

    reference = results["plain"][0][0][0]
    identical = all(run[0] == reference for runs, _ in results.values() for run in runs)
    print(f"{len(PROMPTS)} code-editing prompts, greedy, max_tokens {a.max_tokens}, {a.threads} threads, medians of {a.repeats}")
    print(f"{'config':8} {'decode tok/s':>12} {'TTFT ms':>8} {'accepted':>9}")
    rates = {}
    for name, (runs, acceptance) in results.items():
        rates[name] = statistics.median(r[1] for r in runs)
        ttft = statistics.median(r[2] for r in runs) * 1e3
        print(f"{name:8} {rates[name]:12.1f} {ttft:8.0f} {acceptance:9.0%}")
    for name in rates:
        if name != "plain":
            print(f"speed-up {name}: {rates[name] / rates['plain']:.2f}x")
    print(f"answers identical: {'yes' if identical else 'NO'}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
