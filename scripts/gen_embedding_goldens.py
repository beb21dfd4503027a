#!/usr/bin/env python3
"""Writes tests/data/hf-tiny/<name>/embeddings.json: the final hidden states
of transformers (the base model's last_hidden_state, after the final norm)
for the token sequences of expected.json, pooled as /v1/embeddings pools
them: the last token's row and the mean of every row (not normalized).

The hidden states are recovered from the logits transformers computed for
those sequences (logits_*.f32, written by scripts/gen_hf_tiny_models.py
with the versions expected.json records): logits = h · Wᵀ with W the head's
weight (vocabulary × width, full column rank), solved for h by least
squares. The script checks that the solution reproduces the logits, so a
head with anything after the product (a softcap) is refused.

  .venv/bin/python scripts/gen_embedding_goldens.py
"""
import json
import pathlib

import numpy as np
from safetensors.numpy import load_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = ("llama", "qwen3", "gemma3")


def head_weight(d):
    tensors = load_file(d / "model.safetensors")
    config = json.loads((d / "config.json").read_text())
    if config.get("final_logit_softcapping"):
        raise SystemExit(f"{d.name}: a softcapped head is not a linear map")
    name = "lm_head.weight" if "lm_head.weight" in tensors else "model.embed_tokens.weight"
    return tensors[name].astype(np.float64)


def main():
    for name in MODELS:
        d = ROOT / "tests" / "data" / "hf-tiny" / name
        w = head_weight(d)
        expected = json.loads((d / "expected.json").read_text())
        cases = []
        for case in expected["cases"]:
            logits = np.fromfile(d / case["logits"], dtype="<f4").reshape(len(case["ids"]), -1).astype(np.float64)
            hidden, *_ = np.linalg.lstsq(w, logits.T, rcond=None)  # (width, tokens)
            hidden = hidden.T
            residual = np.abs(hidden @ w.T - logits).max()
            if residual > 1e-4:
                raise SystemExit(f"{name}: the head does not reproduce the logits (residual {residual})")
            cases.append({"ids": case["ids"], "last": hidden[-1].tolist(), "mean": hidden.mean(axis=0).tolist(),
                          "residual": float(residual)})
        (d / "embeddings.json").write_text(json.dumps({
            "from": "transformers " + expected["transformers"] + ", torch " + expected["torch"] + " logits, solved for the hidden states",
            "cases": cases}))
        print(name, "written, largest residual", max(c["residual"] for c in cases))


if __name__ == "__main__":
    main()
