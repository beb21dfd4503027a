"""Output-grammar cost against xgrammar and llguidance: the twenty test
schemas, one valid instance of each (tests/python/structured_schemas.py,
checked with jsonschema), tokenized by the model's tokenizer, walked token
by token (the next-token mask, then the step) by each engine over the same
GGUF vocabulary. Reports compile time, the mean cost a token on a grammar's
first walk (cold: Tessera builds its tables lazily there, xgrammar at
compile time, llguidance computes every mask on demand) and on a second walk
of the same compiled grammar (warm), and the first use in all (compile + the
cold walk). Medians of --runs. The peers run with one thread, as Tessera
compiles in one.

  python tests/bench/grammar_vs_peers.py MODEL.gguf [--runs 3] [--bench build/tests/tessera_grammar_bench]

Needs xgrammar (and with it torch), llguidance, gguf and jsonschema in this Python.
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
import llguidance
import xgrammar as xgr

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from structured_schemas import EXAMPLES, SCHEMAS  # noqa: E402

CONTROL = 3  # GGUF token type of control tokens, which no output text spells
VOCAB_TYPES = {"gpt2": xgr.VocabType.BYTE_LEVEL, "llama": xgr.VocabType.BYTE_FALLBACK}


def gguf_string(field, index):
    return bytes(field.parts[field.data[index]]).decode("utf-8")


def gguf_vocabulary(model):
    """(texts, kind, eos, control) as the GGUF file stores them."""
    reader = gguf.GGUFReader(model)
    tokens = reader.fields["tokenizer.ggml.tokens"]
    types = reader.fields["tokenizer.ggml.token_type"]
    kind = gguf_string(reader.fields["tokenizer.ggml.model"], 0)
    eos = int(reader.fields["tokenizer.ggml.eos_token_id"].parts[-1][0])
    texts = [gguf_string(tokens, i) for i in range(len(tokens.data))]
    control = [int(types.parts[types.data[i]][0]) == CONTROL for i in range(len(texts))]
    return texts, kind, eos, control


def xgrammar_tokenizer(vocabulary):
    texts, kind, eos, control = vocabulary
    texts = ["" if c else t for t, c in zip(texts, control)]
    return xgr.TokenizerInfo(texts, VOCAB_TYPES[kind], vocab_size=len(texts), stop_token_ids=[eos])


def byte_level_decoder():
    """GPT-2 byte-level BPE writes byte b as a printable character: the
    printable Latin-1 bytes as themselves, the others as 256, 257, ... in
    byte order. Returns character -> byte."""
    printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    others = [b for b in range(256) if b not in printable]
    chars = {chr(b): b for b in printable}
    chars.update({chr(256 + i): b for i, b in enumerate(others)})
    return chars


def token_bytes(text, kind, decoder):
    if kind == "gpt2":
        return bytes(decoder[c] for c in text)
    if len(text) == 6 and text.startswith("<0x") and text.endswith(">"):
        return bytes([int(text[3:5], 16)])
    return text.replace("\u2581", " ").encode("utf-8")


class GgufTokenizer:
    """What llguidance's TokenizerWrapper reads: token bytes (control tokens
    marked special, as its Hugging Face adapter does), the end token, and an
    encoder (greedy longest match; only forced text goes through it)."""

    def __init__(self, vocabulary):
        texts, kind, eos, control = vocabulary
        decoder = byte_level_decoder()
        self.tokens = [b"\xff" + t.encode("utf-8") if c else token_bytes(t, kind, decoder) for t, c in zip(texts, control)]
        self.special_token_ids = [i for i, c in enumerate(control) if c]
        self.eos_token_id = eos
        self.bos_token_id = None
        self._ids = {t: i for i, (t, c) in enumerate(zip(self.tokens, control)) if not c}
        self._longest = max(len(t) for t in self.tokens)

    def __call__(self, data):
        ids, pos = [], 0
        while pos < len(data):
            for n in range(min(self._longest, len(data) - pos), 0, -1):
                if data[pos:pos + n] in self._ids:
                    ids.append(self._ids[data[pos:pos + n]])
                    pos += n
                    break
            else:
                raise ValueError(f"no token for byte {data[pos]}")
        return ids


def llguidance_tokenizer(vocabulary):
    wrapper = llguidance.TokenizerWrapper(GgufTokenizer(vocabulary))
    return llguidance.LLTokenizer(wrapper, n_vocab=len(vocabulary[0]))


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


def llguidance_walk(matcher, tokens):
    costs = []
    for token in tokens:
        t0 = time.perf_counter()
        mask = matcher.compute_bitmask()
        accepted = matcher.consume_token(token)
        costs.append((time.perf_counter() - t0) * 1e6)
        allowed = bool((mask[token // 8] >> (token % 8)) & 1)
        if not (accepted and allowed) or matcher.is_error():
            raise RuntimeError(f"llguidance refused token {token}: {matcher.get_error()}")
    return costs


def llguidance_run(tokenizer, schema, tokens):
    t0 = time.perf_counter()
    # oneOf as anyOf, as Tessera and xgrammar lower it
    grammar = llguidance.LLMatcher.grammar_from_json_schema(schema, defaults={"coerce_one_of": True})
    matcher = llguidance.LLMatcher(tokenizer, grammar, log_level=0)
    compile_ms = (time.perf_counter() - t0) * 1e3
    if matcher.is_error():
        raise RuntimeError(f"llguidance refused the schema: {matcher.get_error()}")
    cold = llguidance_walk(matcher, tokens)
    matcher.reset()  # the same matcher again: what its lexer learnt stays
    warm = llguidance_walk(matcher, tokens)
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
    vocabulary = gguf_vocabulary(args.model)
    xgr_info = xgrammar_tokenizer(vocabulary)
    llg_tokenizer = llguidance_tokenizer(vocabulary)
    engines = ("tessera", "xgrammar", "llguidance")
    results = {e: {name: [] for name in SCHEMAS} for e in engines}
    for _ in range(args.runs):
        walks = tessera_walks(args.bench, args.model)
        for name in SCHEMAS:
            tokens = walks[name]["tokens"]
            results["tessera"][name].append(summary(walks[name]))
            results["xgrammar"][name].append(summary(xgrammar_run(xgr_info, SCHEMAS[name], tokens)))
            results["llguidance"][name].append(summary(llguidance_run(llg_tokenizer, SCHEMAS[name], tokens)))
    tokens = {name: len(walks[name]["tokens"]) for name in SCHEMAS}
    print(f"xgrammar {importlib.metadata.version('xgrammar')}, llguidance {importlib.metadata.version('llguidance')}, "
          f"{len(vocabulary[0])} tokens, medians of {args.runs} runs; columns: " + " / ".join(engines))
    keys = ("compile_ms", "cold_us", "warm_us", "first_use_ms")
    print(f"{'schema':16} {'tokens':>6} " + " ".join(f"{k:>28}" for k in keys))
    for name in SCHEMAS:
        cells = [" / ".join(f"{median_of(results[e][name], k):8.2f}" for e in engines) for k in keys]
        print(f"{name:16} {tokens[name]:>6} " + " ".join(f"{c:>28}" for c in cells))
    for k in keys:
        line = []
        for e in engines:
            per_schema = {n: median_of(results[e][n], k) for n in SCHEMAS}
            worst = max(per_schema, key=per_schema.get)
            line.append(f"{e} {statistics.median(per_schema.values()):.2f} (worst {per_schema[worst]:.2f}, {worst})")
        print(f"median over schemas, {k}: " + "; ".join(line))


if __name__ == "__main__":
    main()
