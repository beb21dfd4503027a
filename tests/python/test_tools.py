"""Tool calling through the `openai` client on Qwen2.5-Coder-0.5B-Instruct
(its template offers tools and reads calls as Hermes <tool_call> JSON; this
model answers with the bare JSON object, which is read the same way): the
round trip tools -> tool_calls -> role: tool -> answer, streaming and not,
and the refusals."""
import json

import openai
import pytest

from conftest import DATA
from daemon import Daemon

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
QUESTION = [{"role": "user", "content": "What is the weather like in Paris today?"}]


@pytest.fixture(scope="module")
def served(tessera_bin, qwen25_coder, smollm2):
    config = (f"models:\n  - name: qwen\n    path: {qwen25_coder}\n    kv_cache: {{budget_mb: 64}}\n"
              f"  - name: smollm2\n    path: {smollm2}\n    kv_cache: {{budget_mb: 32}}\n")
    d = Daemon(tessera_bin, [], config)
    yield d, openai.OpenAI(base_url=d.base + "/v1", api_key="unused", max_retries=0)
    assert d.stop() == 0


def test_round_trip_through_a_tool(served):
    _, client = served
    r = client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS, temperature=0, max_tokens=100)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    [call] = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "get_weather" and call.id.startswith("call_")
    arguments = json.loads(call.function.arguments)
    assert isinstance(arguments["city"], str) and "paris" in arguments["city"].lower()
    history = QUESTION + [choice.message.model_dump(exclude_none=True),
                          {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temperature_c": 18})}]
    answer = client.chat.completions.create(model="qwen", messages=history, tools=TOOLS, temperature=0, max_tokens=60)
    assert answer.choices[0].finish_reason in ("stop", "length")
    assert answer.choices[0].message.content


def test_streamed_calls_match_the_whole_response(served):
    _, client = served
    whole = client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS, temperature=0, max_tokens=100)
    calls, reasons, content = {}, [], ""
    for chunk in client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS, temperature=0,
                                                max_tokens=100, stream=True):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for tc in delta.tool_calls or []:
            entry = calls.setdefault(tc.index, {"id": tc.id, "name": "", "arguments": ""})
            entry["name"] += tc.function.name or ""
            entry["arguments"] += tc.function.arguments or ""
        if chunk.choices[0].finish_reason:
            reasons.append(chunk.choices[0].finish_reason)
    assert reasons == ["tool_calls"] and content == ""
    [want] = whole.choices[0].message.tool_calls
    assert [(c["name"], json.loads(c["arguments"])) for c in calls.values()] == \
        [(want.function.name, json.loads(want.function.arguments))]
    assert calls[0]["id"].startswith("call_")


def test_tool_choice_none_answers_in_text(served):
    _, client = served
    r = client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS, tool_choice="none",
                                       temperature=0, max_tokens=20)
    assert r.choices[0].message.tool_calls is None and r.choices[0].finish_reason != "tool_calls"


@pytest.mark.parametrize("body,param,text", [
    ({"tools": TOOLS, "tool_choice": "required"}, "tool_choice", "constrained decoding"),
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "get_weather"}}}, "tool_choice",
     "constrained decoding"),
    ({"tools": [{"type": "function", "function": {"name": "bad name"}}]}, "tools", "name"),
    ({"functions": [{"name": "f"}]}, "functions", "tools"),
])
def test_refusals_name_the_field(served, body, param, text):
    d, _ = served
    status, reply = d.post("/v1/chat/completions", {"model": "qwen", "messages": QUESTION, **body})
    assert status == 400 and reply["error"]["param"] == param and text in reply["error"]["message"]


def test_a_template_without_a_call_format_is_refused(served):
    d, _ = served
    status, reply = d.post("/v1/chat/completions", {"model": "smollm2", "messages": QUESTION, "tools": TOOLS})
    assert status == 400 and reply["error"]["param"] == "tools" and "tool-call format" in reply["error"]["message"]


def test_history_as_the_openai_client_sends_it_renders_as_transformers_does(served):
    # The golden (Python jinja2, scripts/gen_chat_template_goldens.py) has the
    # call's arguments as an object, as transformers takes them; clients send
    # them as a JSON string.
    d, _ = served
    goldens = json.loads((DATA / "chat-templates" / "goldens.json").read_text())["cases"]
    [case] = [c for c in goldens if c["template"] == "Qwen-Qwen2.5-Coder-0.5B-Instruct.jinja"
              and c["conversation"] == "tool_call" and c["add_generation_prompt"] and c["tools"]]
    messages = json.loads(json.dumps(case["messages"]))
    for message in messages:
        for call in message.get("tool_calls", []):
            call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
    _, ours = d.post("/tokenize", {"model": "qwen", "messages": messages, "tools": case["tools"]})
    _, reference = d.post("/tokenize", {"model": "qwen", "prompt": case["output"], "add_special_tokens": False})
    assert ours["tokens"] == reference["tokens"]
