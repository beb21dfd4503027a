"""The daemon's gRPC API with a grpcio client: Generate, Tokenize, ListModels,
health, reflection, cancellation, and parity with HTTP and the CLI."""
import json
import time

import grpc
import openai
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from conftest import run


@pytest.fixture(scope="module")
def channel(daemon):
    with grpc.insecure_channel(f"127.0.0.1:{daemon.grpc_port}") as ch:
        yield ch


def test_health_and_reflection(channel):
    health = health_pb2_grpc.HealthStub(channel)
    status = None
    for _ in range(40):  # /health is 200 already; gRPC health follows within one publish
        status = health.Check(health_pb2.HealthCheckRequest(service="")).status
        if status == health_pb2.HealthCheckResponse.SERVING:
            break
        time.sleep(0.05)
    assert status == health_pb2.HealthCheckResponse.SERVING
    refl = reflection_pb2_grpc.ServerReflectionStub(channel)
    responses = refl.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    names = {s.name for r in responses for s in r.list_services_response.service}
    assert {"tessera.v1.Generation", "grpc.health.v1.Health"} <= names


def reflect_v1(channel, *requests):
    """grpc.reflection.v1 has v1alpha's messages under another package: the
    same bytes on the wire, so v1alpha's classes encode and decode them."""
    call = channel.stream_stream("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                                 request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                                 response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
    return list(call(iter(requests)))


def call_health_check_resolved_by(pool, channel, service=""):
    """What grpcurl does: the method's messages come from reflected descriptors only."""
    method = pool.FindServiceByName("grpc.health.v1.Health").FindMethodByName("Check")
    request_class = message_factory.GetMessageClass(method.input_type)
    response_class = message_factory.GetMessageClass(method.output_type)
    check = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=request_class.SerializeToString,
                                response_deserializer=response_class.FromString)
    response = check(request_class(service=service))
    return method.output_type.fields_by_name["status"].enum_type.values_by_number[response.status].name


def test_reflection_v1_lists_every_service_and_resolves_health(channel):
    [listed] = reflect_v1(channel, reflection_pb2.ServerReflectionRequest(list_services=""))
    assert {s.name for s in listed.list_services_response.service} == {
        "tessera.v1.Generation", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection"}
    # Every listed service resolves to its file, with the files it imports.
    pool = descriptor_pool.DescriptorPool()
    for service in listed.list_services_response.service:
        [found] = reflect_v1(channel, reflection_pb2.ServerReflectionRequest(file_containing_symbol=service.name))
        assert found.WhichOneof("message_response") == "file_descriptor_response", (service.name, found)
        for raw in found.file_descriptor_response.file_descriptor_proto:
            proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
            try:
                pool.Add(proto)
            except TypeError:  # already added from an earlier service's answer
                pass
        assert pool.FindServiceByName(service.name).full_name == service.name
    assert call_health_check_resolved_by(pool, channel) == "SERVING"


def test_reflection_v1_errors_name_what_was_not_found(channel):
    answers = reflect_v1(channel, reflection_pb2.ServerReflectionRequest(file_containing_symbol="no.such.Service"),
                         reflection_pb2.ServerReflectionRequest(file_by_filename="no/such.proto"),
                         reflection_pb2.ServerReflectionRequest(host="x"))
    assert [a.error_response.error_code for a in answers] == [grpc.StatusCode.NOT_FOUND.value[0]] * 2 + [
        grpc.StatusCode.INVALID_ARGUMENT.value[0]]
    assert "no.such.Service" in answers[0].error_response.error_message
    assert answers[2].valid_host == "x"


def test_health_resolves_through_v1alpha_reflection_too(channel):
    pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
    assert call_health_check_resolved_by(pool, channel, "tessera.v1.Generation") == "SERVING"


def test_health_watch_streams_the_status_and_unknown_services_are_named(channel):
    health = health_pb2_grpc.HealthStub(channel)
    watch = health.Watch(health_pb2.HealthCheckRequest(service=""))
    assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    watch.cancel()
    unknown = health.Watch(health_pb2.HealthCheckRequest(service="no.such.Service"))
    assert next(unknown).status == health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
    unknown.cancel()
    with pytest.raises(grpc.RpcError) as e:
        health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"))
    assert e.value.code() == grpc.StatusCode.NOT_FOUND and "no.such.Service" in e.value.details()


def test_list_models_and_tokenize(pb, channel, daemon):
    gen_pb2, gen_grpc = pb
    stub = gen_grpc.GenerationStub(channel)
    models = stub.ListModels(gen_pb2.ListModelsRequest()).models
    assert [(m.id, m.state) for m in models] == [("smollm2", "loaded")]
    assert models[0].max_model_len > 0
    tokens = stub.Tokenize(gen_pb2.TokenizeRequest(model="smollm2", prompt="Hello world")).tokens
    _, http = daemon.post("/tokenize", {"model": "smollm2", "prompt": "Hello world"})
    assert list(tokens) == http["tokens"]


def test_grpc_http_and_cli_agree_on_greedy_text(pb, channel, daemon, tessera_bin, smollm2):
    gen_pb2, gen_grpc = pb
    prompt = "Here is a short story about a robot:"
    events = list(gen_grpc.GenerationStub(channel).Generate(
        gen_pb2.GenerateRequest(model="smollm2", prompt=prompt, max_tokens=24, temperature=0, ignore_eos=True,
                                logprobs=True, top_logprobs=2)))
    text = "".join(e.text for e in events)
    assert events[-1].usage.completion_tokens == 24
    assert sum(len(e.tokens) for e in events) == 24
    assert [e.finish_reason for e in events if e.finish_reason] == ["length"]
    client = openai.OpenAI(base_url=daemon.base + "/v1", api_key="unused", max_retries=0)
    http = client.completions.create(model="smollm2", prompt=prompt, max_tokens=24, temperature=0,
                                     extra_body={"ignore_eos": True})
    assert text == http.choices[0].text
    cli = run([tessera_bin, "generate", "--model", smollm2, "--prompt", prompt, "--max-tokens", "24", "--temperature", "0",
               "--ignore-eos"])
    assert text == cli.stdout.decode()[:-1]


def test_model_may_be_omitted_when_one_is_served(pb, channel):
    gen_pb2, gen_grpc = pb
    stub = gen_grpc.GenerationStub(channel)
    named = list(stub.Generate(gen_pb2.GenerateRequest(model="smollm2", prompt="Hello", max_tokens=6, temperature=0)))
    unnamed = list(stub.Generate(gen_pb2.GenerateRequest(prompt="Hello", max_tokens=6, temperature=0)))
    assert "".join(e.text for e in unnamed) == "".join(e.text for e in named)


def test_chat_over_grpc_matches_http(pb, channel, daemon):
    gen_pb2, gen_grpc = pb
    msg = gen_pb2.ChatMessage(role="user", content="What is the capital of Italy?")
    events = list(gen_grpc.GenerationStub(channel).Generate(
        gen_pb2.GenerateRequest(model="smollm2", chat=gen_pb2.ChatMessages(messages=[msg]), max_tokens=20, temperature=0)))
    client = openai.OpenAI(base_url=daemon.base + "/v1", api_key="unused", max_retries=0)
    http = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": msg.content}],
                                          max_tokens=20, temperature=0)
    assert "".join(e.text for e in events) == http.choices[0].message.content


def test_invalid_requests_map_to_grpc_codes(pb, channel):
    gen_pb2, gen_grpc = pb
    stub = gen_grpc.GenerationStub(channel)
    cases = [
        (gen_pb2.GenerateRequest(model="nope", prompt="x"), grpc.StatusCode.NOT_FOUND),
        (gen_pb2.GenerateRequest(model="smollm2", prompt="x", temperature=9), grpc.StatusCode.INVALID_ARGUMENT),
        (gen_pb2.GenerateRequest(model="smollm2"), grpc.StatusCode.INVALID_ARGUMENT),
        (gen_pb2.GenerateRequest(model="smollm2", prompt="x", max_tokens=10**8), grpc.StatusCode.INVALID_ARGUMENT),
    ]
    for request, code in cases:
        with pytest.raises(grpc.RpcError) as e:
            list(stub.Generate(request))
        assert e.value.code() == code, request


def test_grpc_and_http_refuse_alike(pb, channel, daemon):
    """Both front ends fill one typed request validated in one place: the
    same bad value gets the same message, and an oversized logit_bias map is
    refused before it is converted."""
    gen_pb2, gen_grpc = pb
    stub = gen_grpc.GenerationStub(channel)
    cases = [
        ({"temperature": 9}, dict(temperature=9)),
        ({"top_k": -5}, dict(top_k=-5)),
        ({"logit_bias": {"999999": 1.0}}, dict(logit_bias={999999: 1.0})),
        ({"logit_bias": {str(i): 1.0 for i in range(1025)}}, dict(logit_bias={i: 1.0 for i in range(1025)})),
        ({"stop_token_ids": [-3]}, dict(stop_token_ids=[-3])),
        ({"n": 1000}, dict(n=1000)),
    ]
    for http_fields, grpc_fields in cases:
        status, body = daemon.post("/v1/completions", {"model": "smollm2", "prompt": "x", **http_fields})
        assert status == 400, http_fields
        with pytest.raises(grpc.RpcError) as e:
            list(stub.Generate(gen_pb2.GenerateRequest(model="smollm2", prompt="x", **grpc_fields)))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert e.value.details() == body["error"]["message"], http_fields


def test_cancelled_call_frees_its_pages(pb, channel, daemon):
    gen_pb2, gen_grpc = pb
    before = daemon.metric("tessera:requests_cancelled_total", model_name="smollm2")
    call = gen_grpc.GenerationStub(channel).Generate(
        gen_pb2.GenerateRequest(model="smollm2", prompt="Write a long essay.", max_tokens=3000, ignore_eos=True))
    for i, _ in enumerate(call):
        if i == 3:
            break
    assert daemon.metric("tessera:kv_cache_usage_perc", model_name="smollm2") > 0
    call.cancel()
    assert daemon.wait_for_metric("tessera:kv_cache_usage_perc", lambda v: v == 0, model_name="smollm2") == 0
    assert daemon.metric("tessera:num_requests_running", model_name="smollm2") == 0
    assert daemon.metric("tessera:requests_cancelled_total", model_name="smollm2") == before + 1


def test_structured_output_matches_http_and_is_checked(pb, channel, daemon):
    gen_pb2, gen_grpc = pb
    stub = gen_grpc.GenerationStub(channel)
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
                                               "size": {"enum": ["S", "M", "L"]}}, "required": ["name", "size"]}
    events = list(stub.Generate(gen_pb2.GenerateRequest(
        model="smollm2", prompt="A shirt as JSON:", max_tokens=60, temperature=0,
        structured_output=gen_pb2.StructuredOutput(json_schema=json.dumps(schema)))))
    text = "".join(e.text for e in events)
    value = json.loads(text)
    assert set(value) == {"name", "size"} and value["size"] in ("S", "M", "L")
    _, http = daemon.post("/v1/completions", {"model": "smollm2", "prompt": "A shirt as JSON:", "max_tokens": 60,
                                              "temperature": 0, "guided_json": schema})
    assert http["choices"][0]["text"] == text
    choice = list(stub.Generate(gen_pb2.GenerateRequest(
        model="smollm2", prompt="Pick:", max_tokens=8, temperature=1.0, seed=4,
        structured_output=gen_pb2.StructuredOutput(choice=gen_pb2.ChoiceList(choices=["left", "right"])))))
    assert "".join(e.text for e in choice) in ("left", "right")
    with pytest.raises(grpc.RpcError) as refused:
        list(stub.Generate(gen_pb2.GenerateRequest(model="smollm2", prompt="x", max_tokens=4,
                                                   structured_output=gen_pb2.StructuredOutput(regex="(?=a)"))))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "look-around" in refused.value.details()
