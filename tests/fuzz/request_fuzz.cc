// libFuzzer target: any bytes as a request target's query give a model name
// (or none); as an HTTP request body they go through the JSON parse with its
// caps, the typed field reads of a chat request through its schema, the reading
// of an Anthropic Messages request and of an OpenAI Responses request into
// chat messages, and the chat template
// over the messages of each; each either succeeds or gives the client-facing
// ApiError / TemplateError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/anthropic/messages_request.h"
#include "server/chat/chat_template.h"
#include "server/responses/responses_request.h"
#include "server/openai/generation_fields.h"
#include "server/serving/request_fields.h"
#include "server/serving/route_bodies.h"
#include "server/tokenizer_files.h"

namespace {

const char kTemplate[] =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\n"
    "You are helpful<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// The body as an Anthropic Messages request, its conversation rendered.
void read_as_anthropic(const tessera::Json& body, const tessera::ChatTemplate& tmpl, const tessera::RouteBodies& bodies) {
  try {
    const bool counting = body.is_object() && !body.contains("max_tokens");
    tessera::RequestFields f(body, counting ? bodies.count_tokens : bodies.messages);
    const tessera::MessagesRequest r = tessera::read_messages_request(f, counting);
    tessera::ChatTemplateInput in;
    in.messages = tessera::normalize_messages(r.messages);
    (void)tmpl.render(in);
  } catch (const tessera::ApiError&) {
  } catch (const tessera::jinja::TemplateError&) {
  }
}

// The body as an OpenAI Responses request, its input rendered.
void read_as_responses(const tessera::Json& body, const tessera::ChatTemplate& tmpl, const tessera::RouteBodies& bodies) {
  try {
    tessera::RequestFields f(body, bodies.responses);
    const tessera::ResponsesRequest r = tessera::read_responses_request(f);
    tessera::ChatTemplateInput in;
    in.messages = tessera::normalize_messages(r.input_messages);
    (void)tmpl.render(in);
  } catch (const tessera::ApiError&) {
  } catch (const tessera::jinja::TemplateError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tessera::ChatTemplate tmpl(kTemplate);
  static const tessera::RouteBodies bodies{tessera::ApiLimits{}};
  const std::string body(reinterpret_cast<const char*>(data), size);
  const std::string name = tessera::query_parameter(body, "model");
  if (name.size() > size) __builtin_trap();  // decoding never grows a query
  try {
    const tessera::Json j = tessera::parse_bounded_json(body, tessera::JsonLimits{});
    read_as_anthropic(j, tmpl, bodies);
    read_as_responses(j, tmpl, bodies);
    // A chat completion's fields (those a model is not needed for).
    tessera::RequestFields f(j, bodies.chat_completions);
    (void)f.string("model");
    (void)tessera::read_generation_request(f);
    (void)f.integer("max_tokens");
    (void)f.boolean("stream");
    if (const tessera::Json* messages = f.raw("messages"); messages && messages->is_array()) {
      tessera::ChatTemplateInput in;
      in.messages = tessera::normalize_messages(*messages);
      (void)tmpl.render(in);
    }
  } catch (const tessera::ApiError&) {
  } catch (const tessera::jinja::TemplateError&) {
  }
  return 0;
}
