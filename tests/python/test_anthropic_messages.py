"""Anthropic's Messages API through the real `anthropic` client, unmodified:
whole and streamed answers, count_tokens, a tool_use round trip, stop
sequences, x-api-key, and errors in Anthropic's shape."""
import json

import anthropic
import pytest

from daemon import Daemon

WEATHER = {"name": "get_weather", "description": "Get the weather for a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture(scope="module")
def served(tessera_bin, qwen25_coder):
    config = (f"server:\n  api_keys: [secret]\n"
              f"models:\n  - name: qwen\n    path: {qwen25_coder}\n    kv_cache: {{budget_mb: 64}}\n")
    d = Daemon(tessera_bin, [], config)
    yield d, anthropic.Anthropic(base_url=d.base, api_key="secret", max_retries=0)
    assert d.stop() == 0


def text_of(message):
    return "".join(b.text for b in message.content if b.type == "text")


def test_a_message_and_its_stream_agree(served):
    _, client = served
    kwargs = dict(model="qwen", max_tokens=24, temperature=0, system="You answer in one short sentence.",
                  messages=[{"role": "user", "content": "What is the capital of France?"}])
    whole = client.messages.create(**kwargs)
    assert whole.type == "message" and whole.role == "assistant" and whole.id.startswith("msg_")
    assert whole.stop_reason in ("end_turn", "max_tokens") and "Paris" in text_of(whole)
    assert whole.usage.input_tokens > 0 and 0 < whole.usage.output_tokens <= 24 + 1
    with client.messages.stream(**kwargs) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert streamed == text_of(whole) == text_of(final)
    assert final.stop_reason == whole.stop_reason and final.usage.output_tokens == whole.usage.output_tokens
    counted = client.messages.count_tokens(model="qwen", system=kwargs["system"], messages=kwargs["messages"])
    assert counted.input_tokens == whole.usage.input_tokens


def test_stop_sequences_name_the_one_that_matched(served):
    _, client = served
    m = client.messages.create(model="qwen", max_tokens=40, temperature=0, stop_sequences=["4", "zzz"],
                               messages=[{"role": "user", "content": "Count from 1 to 9, separated by commas."}])
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == "4" and "4" not in text_of(m)


def test_a_tool_use_round_trip(served):
    _, client = served
    question = {"role": "user", "content": "What is the weather in Oslo?"}
    first = client.messages.create(model="qwen", max_tokens=120, temperature=0, tools=[WEATHER], tool_choice={"type": "any"},
                                   messages=[question])
    assert first.stop_reason == "tool_use"
    [call] = [b for b in first.content if b.type == "tool_use"]
    assert call.name == "get_weather" and call.id.startswith("toolu_") and "oslo" in call.input["city"].lower()
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                           "content": json.dumps({"temperature_c": 4})}]}
    history = [question, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]}, result]
    answer = client.messages.create(model="qwen", max_tokens=60, temperature=0, tools=[WEATHER], messages=history)
    assert answer.stop_reason in ("end_turn", "max_tokens") and text_of(answer)
    # Streamed, the call arrives as a tool_use block with its input.
    with client.messages.stream(model="qwen", max_tokens=120, temperature=0, tools=[WEATHER], tool_choice={"type": "any"},
                                messages=[question]) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert [(b.name, b.input) for b in final.content if b.type == "tool_use"] == [(call.name, call.input)]


@pytest.mark.parametrize("body, words", [
    ({"messages": [{"role": "user", "content": "Hi"}]}, "max_tokens"),
    ({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}, "image"),
    ({"max_tokens": 5, "messages": []}, "messages"),
    ({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]}, "tool_use_id"),
    ({"max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}], "temperature": 1.5}, "temperature"),
    ({"max_tokens": 5, "messages": [{"role": "user", "content": "Hi"}], "thinking": {"type": "enabled", "budget_tokens": 1024}},
     "thinking"),
])
def test_bad_requests_get_anthropic_errors(served, body, words):
    _, client = served
    with pytest.raises(anthropic.BadRequestError) as caught:
        # The client's own request path, without the SDK's argument checks.
        client.post("/v1/messages", body=dict(body, model="qwen"), cast_to=object)
    assert caught.value.status_code == 400
    assert caught.value.body["type"] == "error" and caught.value.body["error"]["type"] == "invalid_request_error"
    assert words in caught.value.body["error"]["message"]


def test_keys_are_required_and_errors_keep_the_shape(served):
    d, _ = served
    wrong = anthropic.Anthropic(base_url=d.base, api_key="wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        wrong.messages.create(model="qwen", max_tokens=5, messages=[{"role": "user", "content": "Hi"}])
    assert caught.value.body["error"]["type"] == "authentication_error"
    with pytest.raises(anthropic.NotFoundError):
        anthropic.Anthropic(base_url=d.base, api_key="secret", max_retries=0).messages.create(
            model="nope", max_tokens=5, messages=[{"role": "user", "content": "Hi"}])
