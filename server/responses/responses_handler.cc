#include "server/responses/responses_handler.h"

#include <ctime>

#include "server/http/stream_client_watch.h"
#include "server/responses/response_assembler.h"
#include "server/responses/responses_request.h"
#include "server/serving/chat_answer.h"
#include "server/serving/chat_prompt.h"
#include "server/serving/generation_driver.h"
#include "server/serving/tool_request.h"

namespace tessera {
namespace {

ApiError not_found(const std::string& id) {
  return ApiError(404, "invalid_request_error", "no stored response with id '" + clip_echo(id) + "'", "", "not_found");
}

// The response object before any output: the request's settings echoed.
Json skeleton(const std::string& id, const ResponsesRequest& r, const ServedModel& model, const GenerationParams& params,
              const ToolRequest& tools) {
  return {{"id", id}, {"object", "response"}, {"created_at", int64_t(std::time(nullptr))}, {"status", "in_progress"},
          {"error", nullptr}, {"incomplete_details", nullptr},
          {"instructions", r.instructions ? Json(*r.instructions) : Json()},
          {"max_output_tokens", r.generation.max_tokens ? Json(*r.generation.max_tokens) : Json()},
          {"model", model.name()}, {"output", Json::array()}, {"parallel_tool_calls", tools.parallel},
          {"previous_response_id", r.previous_response_id ? Json(*r.previous_response_id) : Json()},
          {"store", r.store}, {"temperature", params.sampling.temperature}, {"text", {{"format", r.text_format}}},
          {"tool_choice", r.tool_choice_echo}, {"tools", r.tools_echo},
          {"top_p", params.sampling.top_p}, {"truncation", "disabled"}, {"usage", nullptr}, {"metadata", r.metadata},
          {"system_fingerprint", model.fingerprint}};
}

Json usage_json(const TextGeneration& g) {
  return {{"input_tokens", g.prompt_tokens()}, {"input_tokens_details", {{"cached_tokens", g.cached_prompt_tokens()}}},
          {"output_tokens", g.completion_tokens()}, {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", g.prompt_tokens() + g.completion_tokens()}};
}

}  // namespace

void ResponsesApi::create(const ApiContext& api, const Json& body, const std::string& owner, HttpExchange& ex) {
  RequestFields f(body, api.bodies.responses);
  ResponsesRequest request = read_responses_request(f);
  const ModelHandle held_model = api.model(request.model);
  ServedModel& model = *held_model;
  // What a follow-up continues: the stored conversation, then this input
  // (instructions are not carried over, as OpenAI does).
  Json history = Json::array();
  if (request.previous_response_id) {
    const auto previous = store_.get(*request.previous_response_id, owner);
    if (!previous) throw not_found(*request.previous_response_id);
    if (previous->model != model.name()) {
      throw ApiError::invalid("the previous response was made by model '" + previous->model + "'", "previous_response_id");
    }
    history = previous->conversation;
  }
  for (const Json& m : request.input_messages) history.push_back(m);
  Json conversation = Json::array();
  if (request.instructions) conversation.push_back({{"role", "system"}, {"content", *request.instructions}});
  for (const Json& m : history) conversation.push_back(m);

  RequestFields tool_fields(request.tool_fields, tool_fields_body());
  const ToolRequest tools = read_tool_request(tool_fields, model);
  if (tools.forced) {
    if (request.generation.structured) throw ApiError::invalid("a forced tool call cannot be combined with 'text.format'", "tool_choice");
    request.generation.structured = tools.forced;
  }
  const std::vector<int32_t> prompt = chat_prompt_tokens(model, conversation, true, Json::object(), false, tools.tools);
  if (prompt.empty()) throw ApiError::invalid("the rendered conversation has no tokens", "input");
  GenerationParams params = validate_generation(request.generation, model, api.limits, model.max_model_len - int(prompt.size()));
  params.render_special = params.render_special || tools.parse;
  auto gens = start_generations(model, {prompt}, params);

  const std::string id = new_response_id("resp_");
  ResponseAssembler answer(skeleton(id, request, model, params, tools), request.stream ? &ex : nullptr);
  std::string error;
  if (request.stream && (!ex.begin_stream("text/event-stream") || !answer.start())) return;
  StreamClientWatch watch(ex);
  const auto client_gone = [&] { return request.stream ? watch.gone() : ex.client_gone(); };
  if (!drive_chat_answer(gens, tools, client_gone, answer, error)) return;
  if (!error.empty()) {
    if (request.stream) return answer.fail(ApiError::from_generation(error).what());
    throw ApiError::from_generation(error);
  }
  const Json response = answer.finish(usage_json(*gens[0]));
  if (request.store) {
    for (const Json& m : answer.as_chat_messages()) history.push_back(m);
    store_.put(id, StoredResponse{model.name(), owner, std::move(history), response});
  }
  if (!request.stream) ex.respond(200, "application/json", json_text(response), {});
}

void ResponsesApi::get(const std::string& id, const std::string& owner, HttpExchange& ex) {
  const auto stored = store_.get(id, owner);
  if (!stored) throw not_found(id);
  ex.respond(200, "application/json", json_text(stored->response), {});
}

void ResponsesApi::remove(const std::string& id, const std::string& owner, HttpExchange& ex) {
  if (!store_.remove(id, owner)) throw not_found(id);
  ex.respond(200, "application/json", json_text({{"id", id}, {"object", "response"}, {"deleted", true}}), {});
}

}  // namespace tessera
