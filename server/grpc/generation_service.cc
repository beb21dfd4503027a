#include "server/grpc/generation_service.h"

#include "server/grpc/grpc_chat.h"
#include "server/serving/chat_prompt.h"
#include "server/serving/tool_calls.h"
#include "server/serving/generation_driver.h"
#include "server/serving/api_keys.h"

namespace tessera {
namespace {

grpc::Status status_of(const ApiError& e) {
  switch (e.status()) {
    case 404: return {grpc::StatusCode::NOT_FOUND, e.what()};
    case 429: return {grpc::StatusCode::RESOURCE_EXHAUSTED, e.what()};
    case 503: return {grpc::StatusCode::UNAVAILABLE, e.what()};
    case 500: return {grpc::StatusCode::INTERNAL, e.what()};
    default: return {grpc::StatusCode::INVALID_ARGUMENT, e.what()};
  }
}

std::optional<StructuredOutput> structured_output_of(const v1::GenerateRequest& r) {
  if (!r.has_structured_output()) return std::nullopt;
  const v1::StructuredOutput& s = r.structured_output();
  StructuredOutput out;
  out.param = "structured_output";
  switch (s.constraint_case()) {
    case v1::StructuredOutput::kJsonSchema:
      out.kind = StructuredOutput::Kind::kJsonSchema;
      out.schema = parse_bounded_json(s.json_schema(), JsonLimits{});
      break;
    case v1::StructuredOutput::kJsonObject:
      if (!s.json_object()) return std::nullopt;
      out.kind = StructuredOutput::Kind::kJsonObject;
      break;
    case v1::StructuredOutput::kRegex:
      out.kind = StructuredOutput::Kind::kRegex;
      out.text = s.regex();
      break;
    case v1::StructuredOutput::kChoice:
      out.kind = StructuredOutput::Kind::kChoice;
      out.choices.assign(s.choice().choices().begin(), s.choice().choices().end());
      break;
    case v1::StructuredOutput::kGrammar:
      out.kind = StructuredOutput::Kind::kGrammar;
      out.text = s.grammar();
      break;
    default: return std::nullopt;
  }
  return out;
}

// The request's generation fields, its map size checked before converting.
GenerationRequest generation_request_of(const v1::GenerateRequest& r) {
  GenerationRequest g;
  if (r.has_max_tokens()) g.max_tokens = r.max_tokens();
  if (r.has_n()) g.n = r.n();
  g.stop.assign(r.stop().begin(), r.stop().end());
  g.stop_token_ids.assign(r.stop_token_ids().begin(), r.stop_token_ids().end());
  if (r.has_temperature()) g.temperature = r.temperature();
  if (r.has_top_p()) g.top_p = r.top_p();
  if (r.has_top_k()) g.top_k = r.top_k();
  if (r.has_min_p()) g.min_p = r.min_p();
  if (r.has_presence_penalty()) g.presence_penalty = r.presence_penalty();
  if (r.has_frequency_penalty()) g.frequency_penalty = r.frequency_penalty();
  if (r.has_repetition_penalty()) g.repetition_penalty = r.repetition_penalty();
  if (r.has_seed()) g.seed = r.seed();
  if (size_t(r.logit_bias_size()) > kMaxLogitBias) {
    throw ApiError::invalid("'logit_bias' has more than " + std::to_string(kMaxLogitBias) + " entries", "logit_bias");
  }
  for (const auto& [id, bias] : r.logit_bias()) g.logit_bias.emplace_back(id, bias);
  g.ignore_eos = r.ignore_eos();
  if (r.has_priority()) g.priority = r.priority();
  g.logprobs = r.logprobs();
  if (r.has_top_logprobs()) g.top_logprobs = r.top_logprobs();
  g.structured = structured_output_of(r);
  return g;
}

v1::Token token_message(const TokenLogprob& lp) {
  v1::Token t;
  t.set_id(lp.id);
  t.set_token(lp.token);
  t.set_logprob(lp.logprob);
  for (size_t i = 0; i < lp.top.size(); ++i) {
    v1::TopLogprob* top = t.add_top_logprobs();
    top->set_id(lp.top_ids[i]);
    top->set_token(lp.top[i].first);
    top->set_logprob(lp.top[i].second);
  }
  return t;
}

}  // namespace

grpc::Status GenerationService::authenticate(const grpc::ServerContext& context) const {
  if (api_keys_.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  const std::string_view value = it == metadata.end() ? std::string_view() : std::string_view(it->second.data(), it->second.size());
  if (api_key_accepted(value, api_keys_)) return grpc::Status::OK;
  return {grpc::StatusCode::UNAUTHENTICATED, "a valid API key is required (metadata authorization: Bearer KEY)"};
}

grpc::Status GenerationService::Generate(grpc::ServerContext* context, const v1::GenerateRequest* request,
                                         grpc::ServerWriter<v1::GenerateResponse>* writer) {
  ++in_flight_;
  struct Leave {
    std::atomic<int>& n;
    ~Leave() { --n; }
  } leave{in_flight_};
  if (grpc::Status auth = authenticate(*context); !auth.ok()) return auth;
  try {
    api_.registry.require_serving();
    GenerationRequest generation = generation_request_of(*request);
    ToolRequest tools;
    const ModelHandle held_model = api_.model(request->model());
    ServedModel& model = *held_model;

    std::vector<int32_t> prompt;
    int default_max_tokens = 16;
    switch (request->input_case()) {
      case v1::GenerateRequest::kPrompt:
        check_prompt_bytes(model, request->prompt().size(), "prompt");
        prompt = model.tokenizer().encode(request->prompt(), {.add_special = true, .parse_special = true});
        break;
      case v1::GenerateRequest::kPromptTokenIds: {
        const auto& ids = request->prompt_token_ids().ids();
        prompt = checked_token_ids(std::vector<int64_t>(ids.begin(), ids.end()), model, "prompt_token_ids");
        break;
      }
      case v1::GenerateRequest::kChat: {
        GrpcChat chat = read_grpc_chat(request->chat(), model);
        tools = std::move(chat.tools);
        if (tools.forced) {
          if (generation.structured) {
            throw ApiError::invalid("a tool_choice that forces a call cannot be combined with structured_output", "tool_choice");
          }
          generation.structured = tools.forced;
        }
        prompt = chat_prompt_tokens(model, chat.messages, !request->chat().no_generation_prompt(), Json(), false, tools.tools);
        default_max_tokens = model.max_model_len - int(prompt.size());
        break;
      }
      default: throw ApiError::invalid("one of 'prompt', 'prompt_token_ids' or 'chat' is required", "prompt");
    }
    if (prompt.empty()) throw ApiError::invalid("the prompt has no tokens", "prompt");
    GenerationParams params = validate_generation(generation, model, api_.limits, default_max_tokens);
    params.render_special = params.render_special || tools.parse;
    auto gens = start_generations(model, {prompt}, params);
    std::vector<ToolCallParser> parsers(size_t(params.n), ToolCallParser(tools.names, tools.parallel));
    std::string error;
    const bool completed = drive_generations(gens, [context] { return context->IsCancelled(); }, [&](size_t, const ChoiceUpdate& u) {
      if (!u.error.empty()) {
        error = u.error;
        return true;
      }
      if (u.text.empty() && u.logprobs.empty() && !u.finish_reason) return true;
      v1::GenerateResponse out;
      out.set_index(u.index);
      if (!tools.parse) {
        out.set_text(u.text);
      } else {
        // As the HTTP endpoint does: text and the calls completed with it.
        for (ToolCallPiece& p : parsers[size_t(u.index)].take(u.text, u.finish_reason.has_value())) {
          if (!p.call) {
            out.mutable_text()->append(p.text);
            continue;
          }
          v1::ToolCall* call = out.add_tool_calls();
          call->set_id(p.call->id);
          call->set_name(p.call->name);
          call->set_arguments(p.call->arguments);
        }
      }
      for (const auto& lp : u.logprobs) *out.add_tokens() = token_message(lp);
      if (out.text().empty() && out.tool_calls().empty() && out.tokens().empty() && !u.finish_reason) return true;
      if (u.finish_reason) {
        out.set_finish_reason(*u.finish_reason == "stop" && parsers[size_t(u.index)].calls() > 0 ? "tool_calls" : *u.finish_reason);
      }
      return writer->Write(out);
    });
    if (!completed) return {grpc::StatusCode::CANCELLED, "the client cancelled the request"};
    if (!error.empty()) {
      return {ApiError::is_client_generation_error(error) ? grpc::StatusCode::INVALID_ARGUMENT : grpc::StatusCode::INTERNAL, error};
    }
    v1::GenerateResponse last;
    last.mutable_usage()->set_prompt_tokens(gens[0]->prompt_tokens());
    last.mutable_usage()->set_completion_tokens(gens[0]->completion_tokens());
    last.mutable_usage()->set_total_tokens(gens[0]->prompt_tokens() + gens[0]->completion_tokens());
    writer->Write(last);
    return grpc::Status::OK;
  } catch (const ApiError& e) {
    api_.count_invalid(e, request->model());
    return status_of(e);
  }
}

grpc::Status GenerationService::Tokenize(grpc::ServerContext* context, const v1::TokenizeRequest* request,
                                         v1::TokenizeResponse* response) {
  if (grpc::Status auth = authenticate(*context); !auth.ok()) return auth;
  try {
    api_.registry.require_serving();
    const ModelHandle held_model = api_.model(request->model());
    const ServedModel& model = *held_model;
    const bool add_special = request->has_add_special_tokens() ? request->add_special_tokens() : true;
    for (int32_t id : model.tokenizer().encode(request->prompt(), {.add_special = add_special, .parse_special = true})) {
      response->add_tokens(id);
    }
    response->set_max_model_len(model.max_model_len);
    return grpc::Status::OK;
  } catch (const ApiError& e) {
    return status_of(e);
  }
}

grpc::Status GenerationService::ListModels(grpc::ServerContext* context, const v1::ListModelsRequest*,
                                           v1::ListModelsResponse* response) {
  if (grpc::Status auth = authenticate(*context); !auth.ok()) return auth;
  if (api_.registry.state() == ServingState::kLoading) return grpc::Status::OK;
  for (const ModelStatus& m : api_.registry.statuses()) {
    v1::ModelInfo* info = response->add_models();
    info->set_id(m.name);
    info->set_state(model_state_name(m.state));
    if (!m.model) continue;
    info->set_created(int64_t(m.model->created));
    info->set_max_model_len(m.model->max_model_len);
  }
  return grpc::Status::OK;
}

}  // namespace tessera
