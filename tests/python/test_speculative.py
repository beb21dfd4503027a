"""Speculative decoding through the daemon: configured with
`speculative: {method: ngram}` (prompt lookup) or `{method: draft_model}`,
the same requests give the same answers as without it (greedy, seeded
sampling, streaming, stop strings, logprobs), and /metrics counts the
proposals and acceptances. A draft whose tokenizer is not the served
model's stops the daemon with an error that says so."""
import re
import subprocess
import urllib.request

import openai
import pytest

from daemon import Daemon

CODE = """def area(width, height):
    return width * height


def perimeter(width, height):
    return 2 * (width + height)
"""
PROMPT = "Here is some code:\n" + CODE + "\nThe same code again, unchanged:\n"


def config(model, speculative):
    """`speculative`: None, "ngram", or the path of a draft model."""
    text = f"models:\n  - name: smollm2\n    path: {model}\n    kv_cache:\n      budget_mb: 64\n"
    if speculative == "ngram":
        text += "    speculative: {method: ngram, num_speculative_tokens: 7}\n"
    elif speculative:
        text += f"    speculative: {{method: draft_model, model: {speculative}, num_speculative_tokens: 4}}\n"
    return text


def answers(d):
    c = openai.OpenAI(base_url=d.base + "/v1", api_key="unused", max_retries=0, timeout=300)
    out = []
    greedy = c.completions.create(model="smollm2", prompt=PROMPT, max_tokens=60, temperature=0, logprobs=2)
    out.append((greedy.choices[0].text, greedy.usage.completion_tokens, greedy.choices[0].logprobs.token_logprobs))
    seeded = c.completions.create(model="smollm2", prompt=PROMPT, max_tokens=60, temperature=0.7, seed=11, n=2)
    out.append(sorted(ch.text for ch in seeded.choices))
    chunks = c.completions.create(model="smollm2", prompt=PROMPT, max_tokens=60, temperature=0, stream=True,
                                  stop=["perimeter"])
    out.append("".join(ch.choices[0].text for ch in chunks if ch.choices))
    chat = c.chat.completions.create(model="smollm2", temperature=0, max_tokens=60,
                                     messages=[{"role": "user", "content": "Repeat exactly:\n" + CODE}])
    out.append(chat.choices[0].message.content)
    return out


def metric(d, name):
    text = urllib.request.urlopen(d.base + "/metrics").read().decode()
    m = re.search(rf"^tessera:{name}\{{[^}}]*\}} (\S+)$", text, re.M)
    return float(m.group(1))


@pytest.fixture(scope="module")
def plain_answers(tessera_bin, smollm2):
    d = Daemon(tessera_bin, [], config(smollm2, None))
    try:
        yield answers(d)
        assert metric(d, "spec_decode_num_draft_tokens_total") == 0
    finally:
        assert d.stop() == 0


@pytest.mark.parametrize("method", ["ngram", "draft_model"])
def test_speculation_gives_the_same_answers(tessera_bin, smollm2, plain_answers, method):
    # The only draft of SmolLM2's family here is SmolLM2 itself.
    d = Daemon(tessera_bin, [], config(smollm2, "ngram" if method == "ngram" else smollm2))
    try:
        assert answers(d) == plain_answers
        drafted = metric(d, "spec_decode_num_draft_tokens_total")
        accepted = metric(d, "spec_decode_num_accepted_tokens_total")
        assert drafted > 0 and 0 < accepted <= drafted
    finally:
        assert d.stop() == 0


def test_draft_with_another_tokenizer_stops_the_daemon(tessera_bin, smollm2, gemma3, tmp_path):
    path = tmp_path / "draft.yaml"
    path.write_text(config(smollm2, gemma3))
    result = subprocess.run([str(tessera_bin), "serve", "--config", str(path), "--host", "127.0.0.1", "--port", "0",
                             "--grpc-port", "0"], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "draft model: its tokenizer is of another kind than the served model's" in result.stdout + result.stderr
