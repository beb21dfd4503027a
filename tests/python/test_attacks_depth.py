"""The daemon meets the deepest input each size limit allows, on every
route (HTTP and gRPC, completions and chat, /tokenize): every request is
answered with a 4xx naming the limit, the process stays up and serving, and
no answer echoes more than a little of the input. Each input here took a
release build down (SIGSEGV) before the recursion bounds."""
import json

import grpc
import pytest

from daemon import Daemon
from test_attacks import post_raw

BODY_LIMIT = 8 << 20  # server.max_body_bytes
DEPTH_LIMIT = 64      # server.max_json_depth


def deepest_arguments(budget):
    """A tool-call arguments string as deep as `budget` bytes of body allow."""
    depth = (budget - 16) // 2
    return '{"a":' + "[" * depth + "]" * depth + "}"


def chat_with_arguments(arguments):
    return [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": arguments}}]}]


def ref_chain(length):
    defs = {f"d{i}": ({"$ref": f"#/$defs/d{i + 1}"} if i + 1 < length else {"type": "string"}) for i in range(length)}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


MEMBER_LIMIT = 4096   # server.max_json_object_members: the most $defs one object holds


def nested_input(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return {"a": value}


def anthropic_tool_use(tool_input):
    """An Anthropic conversation whose assistant turn called a tool with `tool_input`."""
    return [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": tool_input}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}]


def body_nested_at_the_limit(depth):
    """A body whose 'x' field nests `depth` levels in all (the body object counting one)."""
    return '{"model":"smollm2","prompt":"hi","x":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def assert_alive(d, model="smollm2"):
    assert d.proc.poll() is None, d.log_text()[-2000:]
    assert d.get("/health")[0] == 200
    status, body = d.post("/v1/completions", {"model": model, "prompt": "The sky is", "max_tokens": 2})
    assert status == 200, body


HTTP_CASES = {
    "chat, arguments filling the body": ("/v1/chat/completions", lambda: {
        "model": "smollm2", "max_tokens": 1, "messages": chat_with_arguments(deepest_arguments(BODY_LIMIT - 4096))}),
    "tokenize, arguments filling the body": ("/tokenize", lambda: {
        "model": "smollm2", "messages": chat_with_arguments(deepest_arguments(BODY_LIMIT - 4096))}),
    "chat, the 20,000-level arguments first seen": ("/v1/chat/completions", lambda: {
        "model": "smollm2", "max_tokens": 1, "messages": chat_with_arguments('{"a":' + "[" * 20000 + "]" * 20000 + "}")}),
    "json_schema, the longest $ref chain the body holds": ("/v1/chat/completions", lambda: {
        "model": "smollm2", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": ref_chain(MEMBER_LIMIT)}}}),
    "completions guided_json, a 3,000 $ref chain": ("/v1/completions", lambda: {
        "model": "smollm2", "max_tokens": 1, "prompt": "hi", "guided_json": ref_chain(3000)}),
    "messages, a tool_use input as deep as the body allows": ("/v1/messages", lambda: {
        "model": "smollm2", "max_tokens": 1, "messages": anthropic_tool_use(nested_input(DEPTH_LIMIT - 6))}),
    "count_tokens, a tool_use input as deep as the body allows": ("/v1/messages/count_tokens", lambda: {
        "model": "smollm2", "messages": anthropic_tool_use(nested_input(DEPTH_LIMIT - 6))}),
    "responses, function_call arguments filling the body": ("/v1/responses", lambda: {
        "model": "smollm2", "max_output_tokens": 1, "input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": deepest_arguments(BODY_LIMIT - 4096)}]}),
    "responses, text.format a 3,000 $ref chain": ("/v1/responses", lambda: {
        "model": "smollm2", "max_output_tokens": 1, "input": "hi",
        "text": {"format": {"type": "json_schema", "name": "x", "schema": ref_chain(3000)}}}),
}

# Tools are only offered to a model whose template has a tool-call format.
TOOL_CASES = {
    "tool parameters, a 3,000 $ref chain, tool_choice required": ("/v1/chat/completions", lambda: {
        "model": "qwen", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}], "tool_choice": "required",
        "tools": [{"type": "function", "function": {"name": "f", "parameters": ref_chain(3000)}}]}),
    "anthropic input_schema, a 3,000 $ref chain, tool_choice any": ("/v1/messages", lambda: {
        "model": "qwen", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}], "tool_choice": {"type": "any"},
        "tools": [{"name": "f", "input_schema": ref_chain(3000)}]}),
}


def nested_schema(levels):
    schema = {"type": "string"}
    for _ in range(levels // 2):
        schema = {"type": "array", "items": schema}
    return schema


@pytest.fixture(scope="module")
def qwen(tessera_bin, qwen25_coder):
    d = Daemon(tessera_bin, ["--model", qwen25_coder, "--served-model-name", "qwen"])
    yield d
    assert d.stop() == 0, d.log_text()


@pytest.mark.parametrize("case", sorted(HTTP_CASES))
def test_the_deepest_http_input_fails_the_request_not_the_daemon(daemon, case):
    path, make = HTTP_CASES[case]
    body = json.dumps(make()).encode()
    assert len(body) <= BODY_LIMIT, len(body)
    status, text = post_raw(daemon, path, body)
    assert 400 <= status < 500, (status, text[:300])
    assert len(text) < 4096, "the error echoed the input"
    assert "nests deeper than" in text or "levels" in text, text[:300]
    assert_alive(daemon)


@pytest.mark.parametrize("case", sorted(TOOL_CASES))
def test_the_deepest_tool_schemas_fail_the_request_not_the_daemon(qwen, case):
    path, make = TOOL_CASES[case]
    status, text = post_raw(qwen, path, json.dumps(make()).encode())
    assert 400 <= status < 500, (status, text[:300])
    assert "nests deeper than" in text, text[:300]
    assert_alive(qwen, "qwen")


def test_a_tool_schema_as_deep_as_the_body_allows_is_served(qwen):
    # Parameters at the deepest the body's nesting limit leaves them.
    status, body = qwen.post("/v1/chat/completions", {
        "model": "qwen", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}], "tool_choice": "required",
        "tools": [{"type": "function", "function": {"name": "f", "parameters": nested_schema(DEPTH_LIMIT - 5)}}]})
    assert status == 200, body


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions", "/v1/responses", "/v1/messages",
                                  "/v1/messages/count_tokens",
                                  "/tokenize", "/detokenize"])
def test_bodies_at_and_past_the_depth_limit(daemon, path):
    status, text = post_raw(daemon, path, body_nested_at_the_limit(DEPTH_LIMIT + 1).encode())
    assert status == 400 and f"deeper than {DEPTH_LIMIT} levels" in text, text[:300]
    # At the limit the body parses, and is refused for what it says.
    status, text = post_raw(daemon, path, body_nested_at_the_limit(DEPTH_LIMIT).encode())
    assert status == 400 and "deeper than" not in text, text[:300]
    assert_alive(daemon)


def test_the_deepest_grpc_inputs_fail_the_call_not_the_daemon(pb, daemon):
    generation_pb2, generation_pb2_grpc = pb
    with grpc.insecure_channel(f"127.0.0.1:{daemon.grpc_port}",
                               options=[("grpc.max_send_message_length", 16 << 20)]) as ch:
        stub = generation_pb2_grpc.GenerationStub(ch)
        chat = generation_pb2.GenerateRequest(model="smollm2", max_tokens=1)
        chat.chat.messages.add(role="user", content="hi")
        call = chat.chat.messages.add(role="assistant").tool_calls.add(id="c", name="f")
        call.arguments = deepest_arguments(BODY_LIMIT - 4096)
        with pytest.raises(grpc.RpcError) as e:
            list(stub.Generate(chat, timeout=60))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
        assert "nests deeper than" in e.value.details()
        schema = generation_pb2.GenerateRequest(model="smollm2", prompt="hi", max_tokens=1)
        schema.structured_output.json_schema = json.dumps(ref_chain(3000))
        with pytest.raises(grpc.RpcError) as e:
            list(stub.Generate(schema, timeout=60))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
    assert_alive(daemon)


def test_the_deepest_grpc_tool_schema_fails_the_call_not_the_daemon(pb, qwen):
    generation_pb2, generation_pb2_grpc = pb
    with grpc.insecure_channel(f"127.0.0.1:{qwen.grpc_port}") as ch:
        tools = generation_pb2.GenerateRequest(model="qwen", max_tokens=1)
        tools.chat.messages.add(role="user", content="hi")
        tools.chat.tools = json.dumps([{"type": "function", "function": {"name": "f", "parameters": ref_chain(3000)}}])
        tools.chat.tool_choice = "required"
        with pytest.raises(grpc.RpcError) as e:
            list(generation_pb2_grpc.GenerationStub(ch).Generate(tools, timeout=60))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
        assert "nests deeper than" in e.value.details()
    assert_alive(qwen, "qwen")
