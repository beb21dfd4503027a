"""Tool calling through the `openai` client on Qwen2.5-Coder-0.5B-Instruct
(its template offers tools and reads calls as Hermes <tool_call> JSON; this
model answers with the bare JSON object or one in a ```json fence, which are
read the same way): the
round trip tools -> tool_calls -> role: tool -> answer, streaming and not,
and the refusals."""
import json

import grpc
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


ADD = {"type": "function", "function": {
    "name": "add", "description": "Add two integers",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


@pytest.mark.parametrize("question, name, arguments", [
    ("What's the weather in Paris?", "get_weather", {"city": "Paris"}),
    ("Tell me the weather in Oslo and in Rome.", "get_weather", {"city": "Oslo"}),
    ("How warm is it in Tokyo right now?", "get_weather", {"city": "Tokyo"}),
])
def test_auto_mode_reads_the_calls_the_model_writes_in_a_json_fence(served, question, name, arguments):
    # With these two tools the model answers "```json\n{...}\n```" for the first two questions.
    _, client = served
    kwargs = dict(model="qwen", messages=[{"role": "user", "content": question}], tools=[WEATHER, ADD], temperature=0,
                  max_tokens=150)
    r = client.chat.completions.create(**kwargs)
    assert r.choices[0].finish_reason == "tool_calls" and r.choices[0].message.content is None
    assert [(c.function.name, json.loads(c.function.arguments)) for c in r.choices[0].message.tool_calls] == [(name, arguments)]
    streamed = [c.choices[0] for c in client.chat.completions.create(**kwargs, stream=True) if c.choices]
    assert "".join(c.delta.content or "" for c in streamed) == ""
    assert [c.finish_reason for c in streamed if c.finish_reason] == ["tool_calls"]


def test_tool_choice_none_answers_in_text(served):
    _, client = served
    r = client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS, tool_choice="none",
                                       temperature=0, max_tokens=20)
    assert r.choices[0].message.tool_calls is None and r.choices[0].finish_reason != "tool_calls"


@pytest.mark.parametrize("body,param,text", [
    ({"tools": TOOLS, "tool_choice": "sometimes"}, "tool_choice", "must be"),
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "get_time"}}}, "tool_choice",
     "not among the tools"),
    ({"tools": TOOLS, "tool_choice": {"type": "function"}}, "tool_choice", "must be"),
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


def grpc_chat(served, pb, **chat):
    d, _ = served
    gen_pb2, gen_grpc = pb
    with grpc.insecure_channel(f"127.0.0.1:{d.grpc_port}") as channel:
        request = gen_pb2.GenerateRequest(model="qwen", max_tokens=100, temperature=0, chat=gen_pb2.ChatMessages(**chat))
        return list(gen_grpc.GenerationStub(channel).Generate(request))


def test_round_trip_over_grpc_matches_http(served, pb):
    gen_pb2, _ = pb
    _, client = served
    events = grpc_chat(served, pb, messages=[gen_pb2.ChatMessage(role="user", content=QUESTION[0]["content"])],
                       tools=json.dumps(TOOLS))
    calls = [c for e in events for c in e.tool_calls]
    assert [e.finish_reason for e in events if e.finish_reason] == ["tool_calls"]
    [call] = calls
    http = client.chat.completions.create(model="qwen", messages=QUESTION, tools=TOOLS, temperature=0, max_tokens=100)
    assert call.name == http.choices[0].message.tool_calls[0].function.name
    assert json.loads(call.arguments) == json.loads(http.choices[0].message.tool_calls[0].function.arguments)
    answer = grpc_chat(served, pb, tools=json.dumps(TOOLS), messages=[
        gen_pb2.ChatMessage(role="user", content=QUESTION[0]["content"]),
        gen_pb2.ChatMessage(role="assistant", tool_calls=[call]),
        gen_pb2.ChatMessage(role="tool", tool_call_id=call.id, content=json.dumps({"temperature_c": 18}))])
    assert "".join(e.text for e in answer)
    assert not [c for e in answer for c in e.tool_calls]


def test_required_tool_choice_over_grpc(served, pb):
    gen_pb2, _ = pb
    events = grpc_chat(served, pb, messages=[gen_pb2.ChatMessage(role="user", content="Tell me a joke.")],
                       tools=json.dumps(TOOLS), tool_choice="required")
    [call] = [c for e in events for c in e.tool_calls]
    assert call.name == "get_weather" and isinstance(json.loads(call.arguments)["city"], str)
    with pytest.raises(grpc.RpcError) as refused:
        grpc_chat(served, pb, messages=[gen_pb2.ChatMessage(role="user", content="x")], tools=json.dumps(TOOLS),
                  tool_choice="no_such_function")
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "not among the tools" in refused.value.details()
