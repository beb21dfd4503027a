"""`tessera serve` on mixture-of-experts models (the tiny Qwen3-MoE and
Mixtral of tests/data): eight concurrent streams, each identical to the
same request made alone, whichever other tokens share its experts."""
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest

from conftest import DATA
from daemon import Daemon

PROMPTS = ["The capital of France is", "def fibonacci(n):", "Once upon a time", "1, 2, 3, 4,", "Les chats sont",
           "import numpy as np", "Q: What is 12 times 7?", "The three primary colors are"]


def streamed(client, prompt):
    text, finish = "", None
    for chunk in client.completions.create(model="moe", prompt=prompt, max_tokens=24, temperature=0, stream=True,
                                           extra_body={"ignore_eos": True}):
        if chunk.choices:
            text += chunk.choices[0].text
            finish = chunk.choices[0].finish_reason or finish
    return text, finish


@pytest.mark.parametrize("model", [DATA / "gguf-tiny" / "qwen3moe.gguf", DATA / "hf-tiny" / "mixtral"],
                         ids=["qwen3moe-gguf", "mixtral-hf"])
def test_eight_concurrent_streams_each_equal_the_request_alone(tessera_bin, model):
    daemon = Daemon(tessera_bin, ["--model", model, "--served-model-name", "moe"])
    try:
        daemon.wait_healthy()
        client = openai.OpenAI(base_url=daemon.base + "/v1", api_key="none", max_retries=0, timeout=60)
        alone = [streamed(client, p) for p in PROMPTS]
        assert all(finish == "length" and text for text, finish in alone), alone
        assert len({text for text, _ in alone}) > 1  # the prompts lead somewhere different
        with ThreadPoolExecutor(len(PROMPTS)) as pool:
            together = list(pool.map(lambda p: streamed(client, p), PROMPTS))
        assert together == alone
    finally:
        assert daemon.stop() == 0
