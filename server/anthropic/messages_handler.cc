#include "server/anthropic/messages_handler.h"

#include "server/anthropic/message_assembler.h"
#include "server/anthropic/messages_request.h"
#include "server/http/stream_client_watch.h"
#include "server/serving/chat_answer.h"
#include "server/serving/chat_prompt.h"
#include "server/serving/generation_driver.h"
#include "server/serving/tool_request.h"

namespace tessera {
namespace {

struct PreparedChat {
  std::vector<int32_t> prompt;
  ToolRequest tools;
};

PreparedChat prepare(const ServedModel& model, MessagesRequest& request) {
  PreparedChat out;
  RequestFields tool_fields(request.tool_fields, tool_fields_body());
  out.tools = read_tool_request(tool_fields, model);
  if (out.tools.forced) request.generation.structured = out.tools.forced;
  out.prompt = chat_prompt_tokens(model, request.messages, true, Json::object(), false, out.tools.tools);
  if (out.prompt.empty()) throw ApiError::invalid("the rendered conversation has no tokens", "messages");
  return out;
}

}  // namespace

bool is_anthropic_route(const std::string& path) { return path == "/v1/messages" || path == "/v1/messages/count_tokens"; }

Json anthropic_error_json(const ApiError& e) {
  std::string type = "api_error";
  switch (e.status()) {
    case 400: case 405: case 422: type = "invalid_request_error"; break;
    case 401: type = "authentication_error"; break;
    case 403: type = "permission_error"; break;
    case 404: type = "not_found_error"; break;
    case 413: type = "request_too_large"; break;
    case 429: type = "rate_limit_error"; break;
    case 503: type = "overloaded_error"; break;
    default: break;
  }
  return {{"type", "error"}, {"error", {{"type", type}, {"message", e.what()}}}};
}

void handle_count_tokens(const ApiContext& api, const Json& body, HttpExchange& ex) {
  RequestFields f(body, api.bodies.count_tokens);
  MessagesRequest request = read_messages_request(f, true);
  const ModelHandle held_model = api.model(request.model);
  const ServedModel& model = *held_model;
  const PreparedChat chat = prepare(model, request);
  ex.respond(200, "application/json", json_text({{"input_tokens", chat.prompt.size()}}), {});
}

void handle_messages(const ApiContext& api, const Json& body, HttpExchange& ex) {
  RequestFields f(body, api.bodies.messages);
  MessagesRequest request = read_messages_request(f, false);
  const ModelHandle held_model = api.model(request.model);
  ServedModel& model = *held_model;
  const PreparedChat chat = prepare(model, request);
  GenerationParams params = validate_generation(request.generation, model, api.limits, 1);
  if (params.n != 1) throw ApiError::invalid("one answer per request", "n");
  params.render_special = params.render_special || chat.tools.parse;
  auto gens = start_generations(model, {chat.prompt}, params);

  MessageAssembler message(new_response_id("msg_"), model.name(), request.stream ? &ex : nullptr);
  std::string error;
  if (request.stream) {
    if (!ex.begin_stream("text/event-stream")) return;
    if (!message.start(int(chat.prompt.size()))) return;
  }
  StreamClientWatch watch(ex);
  const auto client_gone = [&] { return request.stream ? watch.gone() : ex.client_gone(); };
  if (!drive_chat_answer(gens, chat.tools, client_gone, message, error)) return;
  const int output_tokens = gens[0]->completion_tokens();
  if (request.stream) {
    if (!error.empty()) return message.fail(anthropic_error_json(ApiError::from_generation(error)));
    return message.finish_stream(output_tokens);
  }
  if (!error.empty()) throw ApiError::from_generation(error);
  ex.respond(200, "application/json",
             json_text(message.whole(int(chat.prompt.size()), output_tokens, gens[0]->cached_prompt_tokens())), {});
}

}  // namespace tessera
