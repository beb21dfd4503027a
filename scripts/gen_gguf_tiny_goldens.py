#!/usr/bin/env python3
"""Writes tests/data/gguf-tiny/<name>.json: llama.cpp's greedy continuations
(32 tokens) of ten prompts for each tiny GGUF model of tests/data/gguf-tiny
(scripts/gen_gguf_tiny_models.py), with the largest logits after each
prompt.

llama.cpp is reached through llama-cpp-python (see gen_tokenizer_goldens.py
for the set-up). Run:
  /tmp/refvenv/bin/python scripts/gen_gguf_tiny_goldens.py [NAME ...]
"""
import json
import pathlib
import sys

import llama_cpp

from gen_generation_goldens import N_TOKENS, greedy  # each token from a fresh evaluation of the whole sequence

ROOT = pathlib.Path(__file__).resolve().parent.parent
DIR = ROOT / "tests" / "data" / "gguf-tiny"

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def fibonacci(n):\n",
    "Q: What is 12 times 7?\nA:",
    "The three primary colors are",
    "Write a haiku about the sea.",
    "Name three planets: Mercury,",
    "Les chats sont",
    "In 1969, the first human to walk on the moon was",
    "import numpy as np\nx = np.",
]


def main():
    names = sys.argv[1:] or sorted(p.stem for p in DIR.glob("*.gguf"))
    for name in names:
        llm = llama_cpp.Llama(str(DIR / f"{name}.gguf"), n_ctx=512, n_batch=512, n_threads=2, logits_all=True,
                              verbose=False, seed=0)
        cases = []
        for prompt in PROMPTS:
            prompt_ids, tokens, top = greedy(llm, prompt)
            cases.append({"prompt": prompt, "prompt_ids": prompt_ids, "tokens": tokens, "top_logits": top})
        (DIR / f"{name}.json").write_text(json.dumps({
            "llama_cpp_python": llama_cpp.__version__, "greedy_tokens": N_TOKENS, "cases": cases}, indent=1) + "\n")
        print(name, "written")


if __name__ == "__main__":
    main()
