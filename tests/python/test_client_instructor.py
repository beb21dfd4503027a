"""instructor (pinned in the test venv, unmodified) in PARALLEL_TOOLS mode on
Qwen2.5-Coder: instructor offers the tools with tool_choice auto and reads
every call the model makes into its pydantic models, as it does against
OpenAI. The model writes its own call format, which the daemon parses."""
from typing import Iterable, Literal

import instructor
import openai
import pytest
from pydantic import BaseModel

from daemon import Daemon


class Weather(BaseModel):
    """The current weather in a city."""
    city: str
    unit: Literal["celsius", "fahrenheit"]


class WebSearch(BaseModel):
    """Search the web."""
    query: str


@pytest.fixture(scope="module")
def client(tessera_bin, qwen25_coder):
    d = Daemon(tessera_bin, [], f"models:\n  - name: qwen\n    path: {qwen25_coder}\n    kv_cache: {{budget_mb: 64}}\n")
    yield instructor.from_openai(openai.OpenAI(base_url=d.base + "/v1", api_key="unused", max_retries=0), mode=instructor.Mode.PARALLEL_TOOLS)
    assert d.stop() == 0, d.log_text()


def test_parallel_tools_reads_each_call_into_its_model(client):
    calls = list(client.chat.completions.create(
        model="qwen", temperature=0, max_tokens=200, max_retries=0,
        messages=[{"role": "user", "content": "What is the weather in Paris and in Tokyo, in celsius?"}],
        response_model=Iterable[Weather | WebSearch]))
    assert calls and all(isinstance(c, (Weather, WebSearch)) for c in calls), calls
    weather = [c for c in calls if isinstance(c, Weather)]
    assert any("paris" in w.city.lower() for w in weather), calls
