"""Structured outputs through the `openai` client: outputs valid against
twenty JSON schemas (checked with the jsonschema package), regex and choice
outputs, grammars, tool_choice required / named with the tool's schema,
the same greedy output whatever else is batched, and the 400s."""
import concurrent.futures
import json
import math
import re

import jsonschema
import openai
import pytest

from daemon import Daemon
from structured_schemas import SCHEMAS


@pytest.fixture(scope="module")
def served(tessera_bin, qwen25_coder, smollm2):
    config = (f"models:\n  - name: qwen\n    path: {qwen25_coder}\n    kv_cache: {{budget_mb: 96}}\n"
              f"  - name: smollm2\n    path: {smollm2}\n    kv_cache: {{budget_mb: 96}}\n")
    d = Daemon(tessera_bin, [], config)
    yield d, openai.OpenAI(base_url=d.base + "/v1", api_key="unused", max_retries=0, timeout=300)
    assert d.stop() == 0


def ask_for(name):
    return [{"role": "user", "content": f"Write an example JSON document for a '{name}' record."}]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_sampled_outputs_are_valid_against_the_schema(served, name):
    _, client = served
    schema = SCHEMAS[name]
    r = client.chat.completions.create(
        model="smollm2", messages=ask_for(name), n=10, temperature=0.7, seed=11, max_tokens=400,
        response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}})
    assert len(r.choices) == 10
    for choice in r.choices:
        assert choice.finish_reason == "stop", choice.message.content
        jsonschema.validate(json.loads(choice.message.content), schema)


def test_guided_json_and_json_object(served):
    _, client = served
    r = client.completions.create(model="smollm2", prompt="A user record:", temperature=0.8, seed=5, max_tokens=300, n=4,
                                  extra_body={"guided_json": json.dumps(SCHEMAS["product"])})
    for c in r.choices:
        jsonschema.validate(json.loads(c.text), SCHEMAS["product"])
    r = client.chat.completions.create(model="qwen", messages=ask_for("book"), temperature=0.8, seed=5, max_tokens=300,
                                       response_format={"type": "json_object"})
    assert isinstance(json.loads(r.choices[0].message.content), dict)


@pytest.mark.parametrize("pattern", [r"\(\d{3}\) \d{3}-\d{4}", r"[a-z]{1,12}@[a-z]{1,12}\.(com|org|net)", r"(yes|no|maybe)!?",
                                     r"[A-Z][a-z]{2,8}( [A-Z][a-z]{2,8}){0,2}"])
def test_regex_outputs_match(served, pattern):
    _, client = served
    r = client.completions.create(model="smollm2", prompt="Answer:", n=5, temperature=1.0, seed=2, max_tokens=60,
                                  extra_body={"guided_regex": pattern})
    for c in r.choices:
        assert c.finish_reason == "stop"
        assert re.fullmatch(pattern, c.text), c.text


def test_choice_grammar_and_structured_outputs(served):
    _, client = served
    choices = ["positive", "negative", "neutral"]
    r = client.chat.completions.create(model="qwen", messages=[{"role": "user", "content": "Sentiment of: I love it"}],
                                       n=3, temperature=1.0, seed=1, max_tokens=10, extra_body={"guided_choice": choices})
    assert all(c.message.content in choices for c in r.choices)
    grammar = 'root ::= "(" num ( "+" num )* ")"\nnum ::= [1-9] [0-9]?\n'
    r = client.completions.create(model="smollm2", prompt="Sum:", n=4, temperature=1.0, seed=3, max_tokens=40,
                                  extra_body={"guided_grammar": grammar})
    for c in r.choices:
        assert c.finish_reason == "stop" and re.fullmatch(r"\([1-9][0-9]?(\+[1-9][0-9]?)*\)", c.text), c.text
    r = client.completions.create(model="smollm2", prompt="Code:", temperature=0.9, seed=4, max_tokens=20,
                                  extra_body={"structured_outputs": {"regex": "[0-9]{4}"}})
    assert re.fullmatch("[0-9]{4}", r.choices[0].text)


SCORED = {"type": "object", "properties": {
    "score": {"type": "number", "minimum": 0, "exclusiveMaximum": 10, "multipleOf": 0.01},
    "count": {"type": "integer", "exclusiveMinimum": 0, "maximum": 5},
    "delta": {"type": "number", "exclusiveMinimum": -1, "maximum": 1}}, "required": ["score", "count", "delta"]}
HOSTNAME = re.compile(r"[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*")


def test_number_bounds_whitespace_patterns_and_hostnames(served):
    _, client = served
    # jsonschema checks multipleOf by float division (0.07 / 0.01 is not whole), so the step is checked on the text.
    bounds_only = json.loads(json.dumps(SCORED))
    del bounds_only["properties"]["score"]["multipleOf"]
    r = client.completions.create(model="smollm2", prompt="A server review as JSON:", n=6, temperature=1.0, seed=7,
                                  max_tokens=200, extra_body={"guided_json": SCORED, "guided_whitespace_pattern": " ?"})
    for c in r.choices:
        assert c.finish_reason == "stop", c.text
        data = json.loads(c.text)
        jsonschema.validate(data, bounds_only)
        assert re.fullmatch(r"\d+(\.\d{1,2})?", re.search(r'"score" ?: ?([^ ,}]*)', c.text).group(1)), c.text
        outside_strings = re.sub(r'"(\\.|[^"\\])*"', '""', c.text)
        assert not re.search(r"[\t\n]|  ", outside_strings), c.text
    r = client.chat.completions.create(model="qwen", messages=[{"role": "user", "content": "Name the host of a public website."}],
                                       n=4, temperature=0.7, seed=3, max_tokens=80,
                                       extra_body={"guided_json": {"type": "string", "format": "hostname"}})
    for c in r.choices:
        assert c.finish_reason == "stop", c.message.content
        assert HOSTNAME.fullmatch(json.loads(c.message.content)), c.message.content
    r = client.completions.create(model="smollm2", prompt="A server review as JSON:", n=4, temperature=1.0, seed=8,
                                  max_tokens=200, extra_body={"structured_outputs": {"json": SCORED, "disable_any_whitespace": True}})
    for c in r.choices:
        assert c.finish_reason == "stop", c.text
        jsonschema.validate(json.loads(c.text), bounds_only)
        assert not re.search(r"\s", re.sub(r'"(\\.|[^"\\])*"', '""', c.text)), c.text


def test_streamed_output_equals_the_whole_one(served):
    _, client = served
    kwargs = dict(model="qwen", messages=ask_for("person"), temperature=0, max_tokens=120,
                  response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMAS["person"]}})
    whole = client.chat.completions.create(**kwargs).choices[0].message.content
    streamed = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(stream=True, **kwargs)
                       if c.choices)
    assert streamed == whole
    jsonschema.validate(json.loads(whole), SCHEMAS["person"])


def test_greedy_output_is_the_same_whatever_is_batched_beside_it(served):
    _, client = served

    def run(name):
        return client.chat.completions.create(
            model="qwen", messages=ask_for(name), temperature=0, max_tokens=150,
            response_format={"type": "json_schema", "json_schema": {"name": name, "schema": SCHEMAS[name]}}
        ).choices[0].message.content

    alone = run("product")
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(run, n) for n in ("product", "tags", "nested", "product")]
        batched = [f.result() for f in futures]
    assert batched[0] == alone and batched[3] == alone
    jsonschema.validate(json.loads(alone), SCHEMAS["product"])


WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "maxLength": 40}, "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"]}}}
ADD = {"type": "function", "function": {"name": "add", "parameters": {
    "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
SCHEMA_OF = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER, ADD)}


def test_tool_choice_required_always_gives_calls_valid_against_their_schema(served):
    _, client = served
    prompts = ["Tell me a joke.", "What is 2 plus 40?", "Weather in Oslo?", "Hello!", "Write a poem about rain."]
    calls = 0
    for i, prompt in enumerate(prompts):
        r = client.chat.completions.create(model="qwen", messages=[{"role": "user", "content": prompt}], tools=[WEATHER, ADD],
                                           tool_choice="required", parallel_tool_calls=False, n=6, temperature=0.8, seed=i,
                                           max_tokens=120)
        for c in r.choices:
            assert c.finish_reason == "tool_calls", c.message
            assert len(c.message.tool_calls) == 1
            for call in c.message.tool_calls:
                jsonschema.validate(json.loads(call.function.arguments), SCHEMA_OF[call.function.name])
                calls += 1
    assert calls >= 30


def test_named_tool_choice_calls_that_function(served):
    _, client = served
    r = client.chat.completions.create(model="qwen", messages=[{"role": "user", "content": "Weather in Oslo?"}],
                                       tools=[WEATHER, ADD], tool_choice={"type": "function", "function": {"name": "add"}},
                                       n=3, temperature=0.8, seed=9, max_tokens=80)
    for c in r.choices:
        [call] = c.message.tool_calls
        assert call.function.name == "add"
        jsonschema.validate(json.loads(call.function.arguments), ADD["function"]["parameters"])


@pytest.mark.parametrize("extra, field, words", [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "array", "uniqueItems": True}}}},
     "response_format", "uniqueItems"),
    ({"guided_regex": "(a)\\1"}, "guided_regex", "back-references"),
    ({"guided_grammar": "root ::= item\n"}, "guided_grammar", "never defined"),
    ({"guided_grammar": "root ::= root \"a\" | \"b\"\n"}, "guided_grammar", "left recursion"),
    ({"guided_json": {"type": "string", "format": "ipv6"}}, "guided_json", "ipv6"),
    ({"guided_json": {"type": "number", "maximum": 2.5}}, "guided_json", "whole number"),
    ({"guided_json": {"type": "object"}, "guided_whitespace_pattern": "(?= )"}, "guided_whitespace_pattern", "look"),
    ({"guided_choice": []}, "guided_choice", "at least one"),
    ({"guided_regex": "a", "guided_choice": ["a"]}, "guided_choice", "both"),
    ({"response_format": {"type": "xml"}}, "response_format", "type"),
    ({"guided_json": {"type": "array", "maxItems": 100000}}, "guided_json", "maxItems"),
])
def test_unsupported_constraints_get_a_400_naming_the_field(served, extra, field, words):
    d, _ = served
    status, body = d.post("/v1/completions", {"model": "smollm2", "prompt": "x", "max_tokens": 4, **extra})
    assert status == 400, body
    assert body["error"]["param"] == field and words in body["error"]["message"], body


def test_tool_choice_errors(served):
    d, _ = served
    base = {"model": "qwen", "messages": [{"role": "user", "content": "x"}], "max_tokens": 4}
    status, body = d.post("/v1/chat/completions", {**base, "tool_choice": "required"})
    assert status == 400 and "needs 'tools'" in body["error"]["message"]
    status, body = d.post("/v1/chat/completions", {**base, "tools": [ADD], "tool_choice": {"type": "function", "function": {"name": "nope"}}})
    assert status == 400 and "not among the tools" in body["error"]["message"]
    status, body = d.post("/v1/chat/completions", {**base, "tools": [ADD], "tool_choice": "required", "guided_regex": "a"})
    assert status == 400 and body["error"]["param"] == "tool_choice"


def test_preempted_constrained_sequences_resume_on_their_grammar(tessera_bin, smollm2):
    # 6 MiB of KV holds about 270 tokens of SmolLM2: four constrained
    # outputs of ~100 tokens are preempted and recomputed, and each must come
    # out as it does alone (its matcher rebuilt from the output so far).
    d = Daemon(tessera_bin, [], f"models:\n  - name: smollm2\n    path: {smollm2}\n    kv_cache: {{budget_mb: 6}}\n")
    try:
        client = openai.OpenAI(base_url=d.base + "/v1", api_key="unused", max_retries=0, timeout=300)
        schema = {"type": "array", "items": SCHEMAS["product"], "minItems": 2, "maxItems": 2}

        def run(i):
            r = client.completions.create(model="smollm2", prompt=f"Shop {i} sells these two products as JSON:", temperature=0,
                                          max_tokens=200, extra_body={"guided_json": schema})
            return r.choices[0].text, r.choices[0].finish_reason

        solo = [run(i) for i in range(2)]
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            together = list(pool.map(run, range(4)))
        assert together[:2] == solo
        for text, finish in together:
            assert finish == "stop"
            jsonschema.validate(json.loads(text), schema)
        assert d.metric("tessera:num_preemptions_total", model_name="smollm2") > 0
    finally:
        assert d.stop() == 0


def test_logprobs_come_from_the_constrained_distribution(served):
    _, client = served
    r = client.chat.completions.create(model="qwen", messages=[{"role": "user", "content": "Is water wet?"}], temperature=0,
                                       max_tokens=5, logprobs=True, top_logprobs=5,
                                       extra_body={"guided_choice": ["Yes", "No"]})
    assert r.choices[0].message.content in ("Yes", "No")
    first = r.choices[0].logprobs.content[0]
    # Only tokens that start an allowed answer have probability; the rest are masked to -inf.
    alternatives = first.top_logprobs
    assert alternatives and all("Yes".startswith(t.token) or "No".startswith(t.token) for t in alternatives), first
    assert abs(sum(math.exp(t.logprob) for t in alternatives) - 1.0) < 1e-3
    # With one allowed answer, only the tokens that start it are alternatives (no -inf entries).
    one = client.chat.completions.create(model="qwen", messages=[{"role": "user", "content": "Say OK"}], temperature=0,
                                         max_tokens=3, logprobs=True, top_logprobs=5,
                                         extra_body={"guided_choice": ["OK"]}).choices[0].logprobs.content[0]
    assert one.top_logprobs and {t.token for t in one.top_logprobs} <= {"OK", "O"}
    assert abs(sum(math.exp(t.logprob) for t in one.top_logprobs) - 1.0) < 1e-3
