"""Output-grammar cost against xgrammar: the twenty test schemas, one valid
instance of each (tests/python/structured_schemas.py, checked with
jsonschema), tokenized by the model's tokenizer, walked token by token
(the next-token mask, then the step) by both engines over the same GGUF
vocabulary. Reports compile time, the mean cost a token on a grammar's
first walk (cold: Tessera builds its tables lazily there, xgrammar at
compile time) and on a second walk (warm), and the first use in all
(compile + the cold walk). Medians of --runs. xgrammar runs with one
thread, as Tessera compiles in one.

  python tests/bench/grammar_vs_xgrammar.py MODEL.gguf [--runs 3] [--bench build/tests/tessera_grammar_bench]

Needs xgrammar (and with it torch), gguf and jsonschema in this Python.
"""
import argparse
import importlib.metadata
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import gguf
import jsonschema
import xgrammar as xgr

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from structured_schemas import EXAMPLES, SCHEMAS  # noqa: E402

CONTROL = 3  # GGUF token type of control tokens, which no output text spells
VOCAB_TYPES = {"gpt2": xgr.VocabType.BYTE_LEVEL, "llama": xgr.VocabType.BYTE_FALLBACK}


def gguf_string(field, index):
    return bytes(field.parts[field.data[index]]).decode("utf-8")


def xgrammar_tokenizer(model):
    reader = gguf.GGUFReader(model)
    tokens = reader.fields["tokenizer.ggml.tokens"]
    types = reader.fields["tokenizer.ggml.token_type"]
    kind = gguf_string(reader.fields["tokenizer.ggml.model"], 0)
    eos = int(reader.fields["tokenizer.ggml.eos_token_id"].parts[-1][0])
    texts = []
    for i in range(len(tokens.data)):
        control = int(types.parts[types.data[i]][0]) == CONTROL
        texts.append("" if control else gguf_string(tokens, i))
    return xgr.TokenizerInfo(texts, VOCAB_TYPES[kind], vocab_size=len(texts), stop_token_ids=[eos])


def tessera_walks(bench, model):
    with tempfile.TemporaryDirectory() as tmp:
        schemas, examples = pathlib.Path(tmp) / "schemas.json", pathlib.Path(tmp) / "examples.json"
        schemas.write_text(json.dumps(SCHEMAS))
        examples.write_text(json.dumps(EXAMPLES))
        out = subprocess.run([bench, model, schemas, examples], capture_output=True, text=True, check=True)
    return {d["schema"]: d for d in map(json.loads, out.stdout.splitlines())}


def xgrammar_walk(matcher, bitmask, tokens):
    costs = []
    for token in tokens:
        t0 = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        accepted = matcher.accept_token(token)
        costs.append((time.perf_counter() - t0) * 1e6)
        allowed = bool((int(bitmask[0, token // 32]) >> (token % 32)) & 1)
        if not (accepted and allowed):
            raise RuntimeError(f"xgrammar refused token {token}")
    return costs


def xgrammar_run(info, schema, tokens):
    compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    t0 = time.perf_counter()
    compiled = compiler.compile_json_schema(schema)
    compile_ms = (time.perf_counter() - t0) * 1e3
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    cold = xgrammar_walk(xgr.GrammarMatcher(compiled), bitmask, tokens)
    warm = xgrammar_walk(xgr.GrammarMatcher(compiled), bitmask, tokens)
    return {"compile_ms": compile_ms, "cold_us": cold, "warm_us": warm}


def summary(run):
    return {"compile_ms": run["compile_ms"], "cold_us": statistics.mean(run["cold_us"]),
            "warm_us": statistics.mean(run["warm_us"]), "first_use_ms": run["compile_ms"] + sum(run["cold_us"]) / 1e3}


def median_of(runs, key):
    return statistics.median(r[key] for r in runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bench", default=str(ROOT / "build" / "tests" / "tessera_grammar_bench"))
    args = ap.parse_args()
    for name, schema in SCHEMAS.items():
        jsonschema.validate(EXAMPLES[name], schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    info = xgrammar_tokenizer(args.model)
    ours = {name: [] for name in SCHEMAS}
    theirs = {name: [] for name in SCHEMAS}
    for _ in range(args.runs):
        walks = tessera_walks(args.bench, args.model)
        for name in SCHEMAS:
            ours[name].append(summary(walks[name]))
            theirs[name].append(summary(xgrammar_run(info, SCHEMAS[name], walks[name]["tokens"])))
    tokens = {name: len(walks[name]["tokens"]) for name in SCHEMAS}
    print(f"xgrammar {importlib.metadata.version('xgrammar')}, {info.vocab_size} tokens, "
          f"medians of {args.runs} runs; columns: tessera / xgrammar")
    print(f"{'schema':16} {'tokens':>6} {'compile ms':>17} {'cold us/token':>21} {'warm us/token':>17} {'first use ms':>19}")
    keys = ("compile_ms", "cold_us", "warm_us", "first_use_ms")
    for name in SCHEMAS:
        cells = [f"{median_of(ours[name], k):8.2f} / {median_of(theirs[name], k):8.2f}" for k in keys]
        print(f"{name:16} {tokens[name]:>6} " + " ".join(cells))
    for k in keys:
        mine = statistics.median(median_of(ours[n], k) for n in SCHEMAS)
        other = statistics.median(median_of(theirs[n], k) for n in SCHEMAS)
        print(f"median over schemas, {k}: tessera {mine:.2f}, xgrammar {other:.2f}")


if __name__ == "__main__":
    main()
