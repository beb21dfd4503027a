"""Prompt log-probabilities on /v1/completions: OpenAI's `echo` with
`logprobs` (and `max_tokens: 0`, lm-evaluation-harness's loglikelihood
request) and vLLM's `prompt_logprobs`, held to `tessera logits` at every
position and, summed the way llama.cpp's perplexity tool does, to its
perplexity on the same text (tests/data/generation-goldens)."""
import json
import math

import numpy as np
import pytest

from conftest import DATA, run


PROMPT = ("The old lighthouse keeper climbed the spiral stairs every evening, counting each step aloud. "
          "At the top he lit the great lamp, wiped the salt from the glass, and watched the ships pass. ") * 4


def log_softmax(rows):
    rows = rows.astype(np.float64)
    top = rows.max(axis=1, keepdims=True)
    return rows - top - np.log(np.exp(rows - top).sum(axis=1, keepdims=True))


@pytest.fixture(scope="module")
def reference(tessera_bin, smollm2, tmp_path_factory):
    """`tessera logits` on PROMPT: its token ids and log-softmax rows."""
    out = tmp_path_factory.mktemp("logits") / "logits.f32"
    result = run([tessera_bin, "logits", "-m", smollm2, "-p", PROMPT, "-o", out, "-t", "2"])
    assert result.returncode == 0, result.stderr
    ids = json.loads(result.stdout)
    rows = np.fromfile(out, dtype="<f4").reshape(len(ids), -1)
    return ids, log_softmax(rows)


def test_echo_with_logprobs_gives_every_prompt_token_the_logits_commands_value(daemon, reference):
    ids, lp = reference
    assert len(ids) > 128  # more rows than one engine step returns: the prompt is scored over several
    status, body = daemon.post("/v1/completions", {"model": "smollm2", "prompt": PROMPT, "echo": True, "logprobs": 3,
                                                   "max_tokens": 0})
    assert status == 200, body
    [choice] = body["choices"]
    assert choice["text"] == PROMPT and choice["finish_reason"] == "length"
    got = choice["logprobs"]
    assert len(got["tokens"]) == len(ids) and got["token_logprobs"][0] is None and got["top_logprobs"][0] is None
    expected = [lp[i - 1, ids[i]] for i in range(1, len(ids))]
    assert np.abs(np.array(got["token_logprobs"][1:]) - expected).max() < 1e-5
    for i in range(1, len(ids)):
        top = got["top_logprobs"][i]
        best = np.sort(lp[i - 1])[::-1][:3]
        assert len(top) <= 3 and np.abs(np.array(sorted(top.values(), reverse=True)) - best[:len(top)]).max() < 1e-5
    assert got["text_offset"] == sorted(got["text_offset"])
    assert body["usage"] == {"prompt_tokens": len(ids), "completion_tokens": 0, "total_tokens": len(ids),
                             "prompt_tokens_details": {"cached_tokens": 0}}


def test_a_scored_prompt_is_computed_whole_each_time_and_then_generates(daemon, reference):
    ids, lp = reference
    request = {"model": "smollm2", "prompt": PROMPT, "echo": True, "logprobs": 1, "max_tokens": 4, "temperature": 0}
    first = daemon.post("/v1/completions", request)[1]
    again = daemon.post("/v1/completions", request)[1]  # its pages are in the prefix cache now
    assert again["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    assert first["choices"][0]["logprobs"] == again["choices"][0]["logprobs"]
    got = first["choices"][0]["logprobs"]
    assert len(got["tokens"]) == len(ids) + 4
    # The output is the greedy continuation: the same as without scoring.
    plain = daemon.post("/v1/completions", {"model": "smollm2", "prompt": PROMPT, "max_tokens": 4, "temperature": 0})[1]
    assert first["choices"][0]["text"] == PROMPT + plain["choices"][0]["text"]
    assert got["token_logprobs"][len(ids)] == pytest.approx(lp[-1].max(), abs=1e-5)


def test_vllm_prompt_logprobs_name_each_prompt_token_with_its_rank(daemon, reference):
    ids, lp = reference
    status, body = daemon.post("/v1/completions", {"model": "smollm2", "prompt": ids, "prompt_logprobs": 2, "max_tokens": 1})
    assert status == 200, body
    [choice] = body["choices"]
    assert choice["logprobs"] is None
    scores = choice["prompt_logprobs"]
    assert len(scores) == len(ids) and scores[0] is None
    for i in range(1, len(ids)):
        entry = scores[i][str(ids[i])]
        assert entry["logprob"] == pytest.approx(lp[i - 1, ids[i]], abs=1e-5)
        assert entry["rank"] == 1 + int((lp[i - 1] > lp[i - 1, ids[i]] + 1e-6).sum())
        assert 1 <= len(scores[i]) <= 3 and all(v["rank"] <= max(2, entry["rank"]) for v in scores[i].values())


def test_streamed_echo_sends_the_scored_prompt_first(daemon, reference):
    ids, lp = reference
    chunks = daemon.stream("/v1/completions", {"model": "smollm2", "prompt": PROMPT, "echo": True, "logprobs": 0,
                                               "max_tokens": 2, "temperature": 0})
    texts = [c["choices"][0] for c in chunks if c["choices"]]
    assert texts[0]["text"] == PROMPT
    assert len(texts[0]["logprobs"]["tokens"]) == len(ids)
    assert np.abs(np.array(texts[0]["logprobs"]["token_logprobs"][1:]) - [lp[i - 1, ids[i]] for i in range(1, len(ids))]).max() < 1e-5
    assert sum(len(t["logprobs"]["tokens"]) for t in texts[1:]) == 2


def test_perplexity_from_prompt_logprobs_matches_llama_cpp(daemon):
    ref = json.loads((DATA / "generation-goldens" / "smollm2.json").read_text())["perplexity"]
    ctx = ref["ctx"]
    text = (DATA / ref["file"]).read_text()
    tokens = daemon.post("/tokenize", {"model": "smollm2", "prompt": text})[1]["tokens"]
    bare = daemon.post("/tokenize", {"model": "smollm2", "prompt": text, "add_special_tokens": False})[1]["tokens"]
    # As llama.cpp's perplexity tool: chunks of ctx tokens, each opened by
    # BOS where the model has one, scoring the second half of each.
    chunks = [tokens[c * ctx:(c + 1) * ctx] for c in range(ref["chunks"])]
    if tokens[0] != bare[0]:
        chunks = [[tokens[0]] + chunk[1:] for chunk in chunks]
    status, body = daemon.post("/v1/completions", {"model": "smollm2", "prompt": chunks, "echo": True, "logprobs": 0,
                                                   "max_tokens": 0})
    assert status == 200, body
    nll = []
    for choice in sorted(body["choices"], key=lambda c: c["index"]):
        nll += [-v for v in choice["logprobs"]["token_logprobs"][ctx // 2 + 1:]]
    ppl = math.exp(sum(nll) / len(nll))
    assert abs(ppl - ref["value"]) / ref["value"] < 0.001, (ppl, ref["value"])


@pytest.mark.parametrize("extra, field", [
    ({"max_tokens": 0}, "max_tokens"),                                # nothing to score: no output either
    ({"echo": True, "logprobs": 1, "max_tokens": -1}, "max_tokens"),
    ({"prompt_logprobs": 21}, "prompt_logprobs"),
    ({"prompt_logprobs": -1}, "prompt_logprobs"),
    ({"echo": True, "logprobs": 99}, "logprobs"),
])
def test_bad_prompt_scoring_requests_get_a_400_naming_the_field(daemon, extra, field):
    status, body = daemon.post("/v1/completions", {"model": "smollm2", "prompt": "Hello", **extra})
    assert status == 400, body
    assert body["error"]["param"] == field, body


def test_chat_prompt_logprobs_score_the_rendered_conversation(daemon):
    messages = [{"role": "system", "content": "You answer briefly."},
                {"role": "user", "content": "Name three colours of the sea."}]
    status, rendered = daemon.post("/tokenize", {"model": "smollm2", "messages": messages})
    assert status == 200, rendered
    status, chat = daemon.post("/v1/chat/completions", {"model": "smollm2", "messages": messages, "prompt_logprobs": 2,
                                                        "max_tokens": 4, "temperature": 0})
    assert status == 200, chat
    status, plain = daemon.post("/v1/completions", {"model": "smollm2", "prompt": rendered["tokens"], "prompt_logprobs": 2,
                                                    "max_tokens": 0})
    assert status == 200, plain
    scores = chat["prompt_logprobs"]
    assert len(scores) == len(rendered["tokens"]) and scores[0] is None
    assert chat["choices"][0]["message"]["content"]
    expected = plain["choices"][0]["prompt_logprobs"]
    for got, want, token in zip(scores[1:], expected[1:], rendered["tokens"][1:]):
        assert str(token) in got and got.keys() == want.keys()
        for key in got:
            assert got[key]["rank"] == want[key]["rank"]
            assert got[key]["logprob"] == pytest.approx(want[key]["logprob"], abs=1e-5)


@pytest.mark.parametrize("extra", [{"stream": True}, {"prompt_logprobs": 21}])
def test_bad_chat_prompt_logprobs_get_a_400_naming_the_field(daemon, extra):
    status, body = daemon.post("/v1/chat/completions", {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}],
                                                        "prompt_logprobs": 1, **extra})
    assert status == 400, body
    assert body["error"]["param"] == "prompt_logprobs", body
