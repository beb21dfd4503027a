"""LangChain's ChatOpenAI (langchain-openai, unmodified) against the daemon
on Qwen2.5-Coder: bind_tools in auto mode, the model writing its own call
format, through Chat Completions and through the Responses API
(use_responses_api=True); the tool result fed back gives an answer."""
import pytest
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from daemon import Daemon


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"It is 18 degrees and sunny in {city}."


@pytest.fixture(scope="module")
def served(tessera_bin, qwen25_coder):
    d = Daemon(tessera_bin, [], f"models:\n  - name: qwen\n    path: {qwen25_coder}\n    kv_cache: {{budget_mb: 64}}\n")
    yield d
    assert d.stop() == 0, d.log_text()


@pytest.mark.parametrize("responses_api", [False, True], ids=["chat-completions", "responses"])
def test_bind_tools_in_auto_mode_round_trip(served, responses_api):
    llm = ChatOpenAI(base_url=served.base + "/v1", api_key="unused", model="qwen", temperature=0, max_tokens=120,
                     max_retries=0, use_responses_api=responses_api)
    with_tools = llm.bind_tools([get_weather])
    question = HumanMessage("What is the weather like in Paris today?")
    asked = with_tools.invoke([question])
    [call] = asked.tool_calls
    assert call["name"] == "get_weather" and "paris" in call["args"]["city"].lower()
    result = ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])
    answer = with_tools.invoke([question, asked, result])
    assert not answer.tool_calls and answer.text.strip()
