"""Reasoning output: a model served with a thinking template (DeepSeek-R1's,
whose generation prompt opens <think>) gives its thoughts as
message.reasoning_content and `reasoning`, streamed as delta.reasoning_content,
and its answer as content. The output is forced by a regex so that the test
does not depend on what a small model would think."""
import re

import openai
import pytest

from conftest import DATA
from daemon import Daemon

TEMPLATE = DATA / "chat-templates" / "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
FORCED = r"[a-z ]{8,40}</think>(Yes|No)\."


@pytest.fixture(scope="module")
def served(tessera_bin, smollm2):
    config = (f"models:\n  - name: thinker\n    path: {smollm2}\n    chat_template: {TEMPLATE}\n"
              f"  - name: plain\n    path: {smollm2}\n    chat_template: {TEMPLATE}\n    reasoning_parser: none\n")
    d = Daemon(tessera_bin, [], config)
    yield d, openai.OpenAI(base_url=d.base + "/v1", api_key="unused", max_retries=0)
    assert d.stop() == 0


def ask(client, model, **kwargs):
    return client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Is 7 a prime number?"}],
                                          temperature=0, max_tokens=60, extra_body={"guided_regex": FORCED}, **kwargs)


def test_reasoning_comes_apart_from_the_answer(served):
    _, client = served
    message = ask(client, "thinker").choices[0].message
    extra = message.model_extra
    assert re.fullmatch(r"[a-z ]{8,40}", extra["reasoning_content"]), extra
    assert extra["reasoning"] == extra["reasoning_content"]
    assert message.content in ("Yes.", "No.")
    # The same output, unparsed, is one text.
    raw = ask(client, "plain").choices[0].message
    assert raw.content == extra["reasoning_content"] + "</think>" + message.content
    assert "reasoning_content" not in (raw.model_extra or {})


def test_reasoning_streams_as_reasoning_content_deltas(served):
    _, client = served
    whole = ask(client, "thinker").choices[0].message
    thought, content = "", ""
    for chunk in ask(client, "thinker", stream=True):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        thought += (delta.model_extra or {}).get("reasoning_content") or ""
        content += delta.content or ""
    assert thought == whole.model_extra["reasoning_content"] and content == whole.content
