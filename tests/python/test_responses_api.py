"""OpenAI's Responses API through the real `openai` client, unmodified: plain
and streamed answers, function tools with function_call_output, follow-ups by
previous_response_id, text.format, and the store (GET, DELETE, owners)."""
import json

import jsonschema
import openai
import pytest

from daemon import Daemon

WEATHER = {"type": "function", "name": "get_weather", "description": "Get the weather for a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture(scope="module")
def served(tessera_bin, qwen25_coder, smollm2):
    config = (f"server:\n  api_keys: [key-a, key-b]\n  response_store: {{max_responses: 8, ttl_s: 600}}\n"
              f"models:\n  - name: qwen\n    path: {qwen25_coder}\n    kv_cache: {{budget_mb: 64}}\n"
              f"  - name: smollm2\n    path: {smollm2}\n    kv_cache: {{budget_mb: 32}}\n")
    d = Daemon(tessera_bin, [], config)
    yield d, openai.OpenAI(base_url=d.base + "/v1", api_key="key-a", max_retries=0)
    assert d.stop() == 0


def test_a_response_and_its_stream_agree(served):
    _, client = served
    kwargs = dict(model="smollm2", input="Write one sentence about the sea.", instructions="Be brief.",
                  max_output_tokens=20, temperature=0)
    whole = client.responses.create(**kwargs)
    assert whole.id.startswith("resp_") and whole.object == "response" and whole.model == "smollm2"
    assert whole.status in ("completed", "incomplete") and whole.output_text
    assert whole.usage.output_tokens <= 21 and whole.usage.total_tokens == whole.usage.input_tokens + whole.usage.output_tokens
    if whole.status == "incomplete":
        assert whole.incomplete_details.reason == "max_output_tokens"
    events = list(client.responses.create(**kwargs, stream=True))
    types = [e.type for e in events]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == ("response.incomplete" if whole.status == "incomplete" else "response.completed")
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == whole.output_text == events[-1].response.output_text
    # The SDK's stream helper accumulates the same answer (its last event
    # carries it: response.incomplete when max_output_tokens ends it).
    with client.responses.stream(**kwargs) as stream:
        helper_events = list(stream)
    assert helper_events[-1].response.output_text == whole.output_text


def test_a_function_call_round_trip_by_previous_response_id(served):
    _, client = served
    first = client.responses.create(model="qwen", input="What is the weather in Oslo?", tools=[WEATHER],
                                    tool_choice="required", temperature=0, max_output_tokens=100)
    [call] = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather" and "oslo" in json.loads(call.arguments)["city"].lower()
    second = client.responses.create(model="qwen", previous_response_id=first.id, tools=[WEATHER], temperature=0,
                                     max_output_tokens=60,
                                     input=[{"type": "function_call_output", "call_id": call.call_id,
                                             "output": json.dumps({"temperature_c": 4})}])
    assert second.previous_response_id == first.id and second.output_text
    # The follow-up's prompt holds the whole first exchange.
    assert second.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens
    with client.responses.stream(model="qwen", input="Weather in Rome?", tools=[WEATHER], tool_choice="required",
                                 temperature=0, max_output_tokens=100) as stream:
        streamed = list(stream)
        final = stream.get_final_response()
    assert [(item.name, json.loads(item.arguments)) for item in final.output if item.type == "function_call"] == \
        [("get_weather", json.loads([e for e in streamed if e.type == "response.function_call_arguments.done"][0].arguments))]
    done = [e.item for e in streamed if e.type == "response.output_item.done" and e.item.type == "function_call"]
    assert [item.name for item in done] == ["get_weather"]
    assert json.loads([e for e in streamed if e.type == "response.function_call_arguments.done"][0].arguments) == \
        json.loads(done[0].arguments)


def test_text_format_json_schema_is_followed(served):
    _, client = served
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "sunny": {"type": "boolean"}},
              "required": ["city", "sunny"], "additionalProperties": False}
    r = client.responses.create(model="smollm2", input="Describe the weather in Paris as JSON.", temperature=0,
                                max_output_tokens=60, text={"format": {"type": "json_schema", "name": "w", "schema": schema}})
    jsonschema.validate(json.loads(r.output_text), schema)
    assert r.text.format.type == "json_schema"


def test_the_store_keeps_answers_for_their_owner_only(served):
    d, client = served
    r = client.responses.create(model="smollm2", input="Hello", max_output_tokens=4)
    assert client.responses.retrieve(r.id).output_text == r.output_text
    other = openai.OpenAI(base_url=d.base + "/v1", api_key="key-b", max_retries=0)
    with pytest.raises(openai.NotFoundError):
        other.responses.retrieve(r.id)
    with pytest.raises(openai.NotFoundError):
        other.responses.create(model="smollm2", input="Hi", previous_response_id=r.id, max_output_tokens=4)
    client.responses.delete(r.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(r.id)
    unstored = client.responses.create(model="smollm2", input="Hello", max_output_tokens=4, store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unstored.id)
    # At most max_responses per model: the oldest go first.
    ids = [client.responses.create(model="smollm2", input="Hi", max_output_tokens=1).id for _ in range(9)]
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(ids[0])
    assert client.responses.retrieve(ids[-1]).id == ids[-1]


@pytest.mark.parametrize("extra, words", [
    ({"tools": [{"type": "web_search"}]}, "function tools"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, "input_image"),
    ({"background": True}, "background"),
    ({"text": {"format": {"type": "xml"}}}, "text.format"),
])
def test_what_is_not_available_is_refused_by_name(served, extra, words):
    _, client = served
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(**{"model": "smollm2", "input": "Hi", "max_output_tokens": 4, **extra})
    assert words in caught.value.message


def test_an_unknown_previous_response_is_not_found(served):
    _, client = served
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="smollm2", input="Hi", previous_response_id="resp_nope", max_output_tokens=4)
