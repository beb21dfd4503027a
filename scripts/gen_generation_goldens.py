#!/usr/bin/env python3
"""Writes tests/data/generation-goldens/<model>.json: llama.cpp's greedy
continuations (32 tokens, end-of-generation tokens included) of ten prompts
for each real model with the largest logits after each prompt, and
llama.cpp-style perplexity of a text.

llama.cpp is reached through llama-cpp-python (see gen_tokenizer_goldens.py
for the set-up). Run: /tmp/refvenv/bin/python scripts/gen_generation_goldens.py [MODEL_DIR [NAME ...]]
(NAME: the models to write, default all).
"""
import json
import math
import os
import pathlib
import sys

# llama.cpp's CPU backend multiplies K-quant weights by batches of eight or
# more rows with a tiled kernel that sums in another order than its per-row
# kernels. The references use the per-row kernels throughout (read once, at
# the first multiply), so a prompt and a one-token step round alike and the
# goldens do not depend on which kernel a batch size selects.
os.environ["GGML_CPU_TILED_MM"] = "0"

import llama_cpp  # noqa: E402  (after the environment is set)
import llama_cpp.llama_cpp as llama_cpp_c  # noqa: E402
import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "generation-goldens"
MODELS = {"smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf", "gemma3": "gemma-3-270m-q4_k_m.gguf",
          "qwen2.5-coder": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"}
N_TOKENS = 32
TOP_LOGITS = 8  # largest logits recorded at the last prompt position
PPL_CTX = 128
PPL_CHUNKS = 8

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village,",
    "def fibonacci(n):\n",
    "Q: What is 12 times 7?\nA:",
    "The three primary colors are",
    "<|im_start|>user\nWrite a haiku about the sea.<|im_end|>\n<|im_start|>assistant\n",
    "<start_of_turn>user\nName three planets.<end_of_turn>\n<start_of_turn>model\n",
    "Les chats sont",
    "In 1969, the first human to walk on the moon was",
    "import numpy as np\nx = np.",
]


def without_weight_repacking():
    """llama.cpp repacks Q4_0/Q4_K weights into interleaved layouts on x86 and
    multiplies them with kernels that sum in another order. The references
    use its plain kernels (use_extra_bufts = false), so they do not depend on
    which repacking a given llama.cpp build and CPU choose."""
    default = llama_cpp_c.llama_model_default_params

    def patched():
        params = default()
        params.use_extra_bufts = False
        return params

    llama_cpp_c.llama_model_default_params = patched


def greedy(llm, prompt):
    """Each next token is the argmax of llama.cpp's batched evaluation of the
    whole sequence so far. llama.cpp's one-token decode path rounds
    differently from its batched path, so its own incremental greedy output
    depends on how the sequence was batched; re-evaluating every step gives a
    reference that does not."""
    tokens = llm.tokenize(prompt.encode(), add_bos=True, special=True)
    out = []
    top = None
    for _ in range(N_TOKENS):
        llm.reset()
        llm.eval(tokens + out)
        logits = np.asarray(llm.scores[len(tokens) + len(out) - 1])
        if top is None:
            ids = np.argsort(-logits, kind="stable")[:TOP_LOGITS]
            top = {"ids": [int(i) for i in ids], "logits": [float(logits[i]) for i in ids]}
        out.append(int(np.argmax(logits)))
    return tokens, out, top


def greedy_one_token_at_a_time(llm, prompt_ids):
    """The same continuation from llama.cpp fed one token per evaluation.
    Where llama.cpp's batched and one-token paths round differently, the two
    continuations part; the point where they do is recorded."""
    llm.reset()
    llm.eval(prompt_ids)
    out = []
    for _ in range(N_TOKENS):
        out.append(int(np.argmax(np.asarray(llm.scores[llm.n_tokens - 1]))))
        llm.eval([out[-1]])
    return out


def perplexity(llm, text):
    tokens = llm.tokenize(text.encode(), add_bos=True, special=False)
    # Like llama-perplexity: chunks start with BOS only when the model adds one.
    adds_bos = len(llm.tokenize(b"x", add_bos=True)) > len(llm.tokenize(b"x", add_bos=False))
    n_chunks = min(PPL_CHUNKS, len(tokens) // PPL_CTX)
    first = PPL_CTX // 2
    nll, count = 0.0, 0
    for c in range(n_chunks):
        chunk = list(tokens[c * PPL_CTX:(c + 1) * PPL_CTX])
        if adds_bos:
            chunk[0] = llm.token_bos()
        llm.reset()
        llm.eval(chunk)
        for j in range(first, PPL_CTX - 1):
            logits = np.asarray(llm.scores[j], dtype=np.float64)
            m = logits.max()
            log_z = m + math.log(np.exp(logits - m).sum())
            nll += log_z - logits[chunk[j + 1]]
            count += 1
    return math.exp(nll / count), n_chunks


def main():
    model_dir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                             os.environ.get("TESSERA_MODEL_DIR", pathlib.Path.home() / ".cache/tessera/models"))
    OUT.mkdir(parents=True, exist_ok=True)
    without_weight_repacking()
    text = (ROOT / "tests" / "data" / "perplexity" / "gpl-3.0.txt").read_text()
    names = sys.argv[2:] or list(MODELS)
    for name, file in MODELS.items():
        if name not in names:
            continue
        llm = llama_cpp.Llama(str(model_dir / file), n_ctx=2048, n_batch=512, n_threads=2, logits_all=True,
                              verbose=False, seed=0)
        single = llama_cpp.Llama(str(model_dir / file), n_ctx=2048, n_batch=1, n_ubatch=1, n_threads=2,
                                 logits_all=True, verbose=False, seed=0)
        cases = []
        for prompt in PROMPTS:
            prompt_ids, tokens, top = greedy(llm, prompt)
            one_by_one = greedy_one_token_at_a_time(single, prompt_ids)
            agree = next((i for i, (a, b) in enumerate(zip(tokens, one_by_one)) if a != b), N_TOKENS)
            cases.append({"prompt": prompt, "prompt_ids": prompt_ids, "tokens": tokens, "top_logits": top,
                          "tokens_one_at_a_time": one_by_one, "llama_cpp_paths_agree_for": agree})
        ppl, chunks = perplexity(llm, text)
        (OUT / f"{name}.json").write_text(json.dumps({
            "llama_cpp_python": llama_cpp.__version__, "llama_cpp_kernels": "per-row (no repacking, GGML_CPU_TILED_MM=0)",
            "greedy_tokens": N_TOKENS, "cases": cases,
            "perplexity": {"file": "perplexity/gpl-3.0.txt", "ctx": PPL_CTX, "chunks": chunks, "value": ppl}}, indent=1))
        print(name, "perplexity", ppl)


if __name__ == "__main__":
    main()
