"""tokenizer.json loading checked live against the `tokenizers` library: a
GPT-2 vocabulary taken from llama.cpp's vocab file is turned into a
tokenizer.json by `tokenizers` itself, and both encode the same strings."""
import json

import pytest
from gguf import GGUFReader
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from conftest import DATA, run

STRINGS_FILE = DATA / "tokenizer-vectors" / "ggml-vocab-gpt-2.gguf.inp"


def gguf_vocab(path):
    fields = GGUFReader(str(path)).fields

    def strings(key):
        f = fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    tokens = strings("tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in strings("tokenizer.ggml.merges")]
    return {t: i for i, t in enumerate(tokens)}, merges


@pytest.fixture(scope="module")
def gpt2_tokenizer_json(tmp_path_factory):
    vocab, merges = gguf_vocab(DATA / "tokenizer-vectors" / "ggml-vocab-gpt-2.gguf")
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    path = tmp_path_factory.mktemp("gpt2") / "tokenizer.json"
    tok.save(str(path))
    return path, tok


def test_gpt2_tokenizer_json_matches_tokenizers(tessera_bin, gpt2_tokenizer_json):
    path, reference = gpt2_tokenizer_json
    texts = [t for t in STRINGS_FILE.read_text().split("\n__ggml_vocab_test__\n") if t]
    texts += ["Hello world", "  multiple   spaces  ", "1234567890", "I'm don't they've", "日本語 🦙 ✅"]
    mismatches = []
    for text in texts:
        result = run([tessera_bin, "tokenize", "--model", path, "--text", text])
        assert result.returncode == 0, result.stderr
        want = reference.encode(text, add_special_tokens=False).ids
        if json.loads(result.stdout) != want:
            mismatches.append(text)
    assert not mismatches, mismatches
    assert len(texts) >= 40
