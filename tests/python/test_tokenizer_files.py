"""GET /tokenizer_info (vLLM's) and GET /tokenizer.json: a served model's
tokenizer as Hugging Face files. Saved side by side, the Hugging Face
`tokenizers` library encodes with them as the server's own /tokenize does."""
import json

import pytest
from tokenizers import Tokenizer

from daemon import Daemon

TEXTS = ["Hello world", "  leading spaces and\ttabs\n\nnew lines", "naïve café – 東京 🚀", "def f(x):\n    return x**2 # ok",
         "<|im_start|>user\nHi<|im_end|>", "1234567890 3.14159 -42"]


@pytest.fixture(scope="module")
def served(tessera_bin, smollm2, gemma3):
    config = (f"models:\n  - name: smol-lm2\n    path: {smollm2}\n    kv_cache: {{budget_mb: 32}}\n"
              f"  - name: gemma\n    path: {gemma3}\n    kv_cache: {{budget_mb: 32}}\n")
    d = Daemon(tessera_bin, [], config)
    yield d
    assert d.stop() == 0


def test_tokenizer_info_gives_the_special_tokens_template_and_length(served):
    status, text = served.get("/tokenizer_info?model=smol-lm2")
    assert status == 200, text
    info = json.loads(text)
    assert info["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert info["eos_token"] == "<|im_end|>" and "<|im_start|>" in info["chat_template"]
    _, models = served.get("/v1/models/smol-lm2")
    assert info["model_max_length"] == json.loads(models)["max_model_len"]


def test_the_tokenizer_json_encodes_as_the_server_does(served):
    # The name percent-encoded, as a client's URL library may send it.
    status, text = served.get("/tokenizer.json?model=smol%2Dlm2")
    assert status == 200, text
    tokenizer = Tokenizer.from_str(text)
    for t in TEXTS:
        _, ours = served.post("/tokenize", {"model": "smol-lm2", "prompt": t, "add_special_tokens": False})
        assert tokenizer.encode(t, add_special_tokens=False).ids == ours["tokens"], t
    again = served.get("/tokenizer.json?model=smol-lm2")[1]
    assert again == text


@pytest.mark.parametrize("target, status, words", [
    ("/tokenizer.json?model=gemma", 400, "no tokenizer.json form"),   # a SentencePiece vocabulary
    ("/tokenizer_info?model=nope", 404, "does not exist"),
    ("/tokenizer_info", 400, "'model' is required"),                   # two models are served
    ("/tokenizer_info?model=%zz", 400, "'model' is required"),         # a malformed escape reads as no name
])
def test_what_cannot_be_given_is_refused_clearly(served, target, status, words):
    got, text = served.get(target)
    assert got == status, text
    assert words in json.loads(text)["error"]["message"], text


def test_only_get_and_head(served):
    status, _, headers = served.request("POST", "/tokenizer_info?model=smol-lm2", {})
    assert status == 405 and headers["Allow"] == "GET, HEAD"
    status, body, headers = served.request("HEAD", "/tokenizer_info?model=gemma")
    assert status == 200 and body == "" and int(headers["Content-Length"]) > 100
