#include "server/serving/generation_driver.h"

#include <chrono>
#include <cstdio>
#include <random>

namespace tessera {

bool drive_generations(std::vector<std::unique_ptr<TextGeneration>>& generations, const std::function<bool()>& client_gone,
                       const UpdateSink& on_update) {
  const auto wait = std::chrono::milliseconds(generations.size() == 1 ? 20 : 2);
  while (true) {
    bool all_finished = true;
    for (size_t g = 0; g < generations.size(); ++g) {
      if (generations[g]->finished()) continue;
      for (const ChoiceUpdate& u : generations[g]->poll(wait)) {
        if (!on_update(g, u)) {
          for (auto& gen : generations) gen->cancel();
          return false;
        }
      }
      all_finished &= generations[g]->finished();
    }
    if (all_finished) return true;
    if (client_gone()) {
      for (auto& gen : generations) gen->cancel();
      return false;
    }
  }
}

std::vector<std::unique_ptr<TextGeneration>> start_generations(ServedModel& model,
                                                               const std::vector<std::vector<int32_t>>& prompts,
                                                               const GenerationParams& params) {
  std::vector<std::unique_ptr<TextGeneration>> out;
  if (model.config.embeddings.only) {
    throw ApiError::invalid("model '" + model.name() + "' serves embeddings only (POST /v1/embeddings)", "model");
  }
  require_ready(model);
  for (const auto& prompt : prompts) {
    StartFailure failure;
    auto g = TextGeneration::start(model, prompt, params, &failure);
    if (!g) throw_refusal(failure, "prompt", "max_tokens");
    out.push_back(std::move(g));
  }
  return out;
}

void require_ready(const ServedModel& model) {
  switch (model.loop->state()) {
    case LoopState::kReady: return;
    case LoopState::kFaulted: throw ApiError(503, "server_error", "the engine of model '" + model.name() + "' has failed");
    default: throw ApiError(503, "server_error", "model '" + model.name() + "' is draining: the server is shutting down, or a reload took it out");
  }
}

void throw_refusal(const StartFailure& failure, const std::string& prompt_param, const std::string& length_param) {
  if (failure.admission == Admission::kQueueFull) {
    throw ApiError(429, "rate_limit_error", failure.message, "", "rate_limit_exceeded").counted();
  }
  throw ApiError::invalid(failure.message, failure.admission == Admission::kInvalid ? prompt_param : length_param).counted();
}

nlohmann::ordered_json usage_of(const std::vector<std::unique_ptr<TextGeneration>>& generations) {
  int prompt = 0, completion = 0, cached = 0;
  for (const auto& g : generations) {
    prompt += g->prompt_tokens();
    completion += g->completion_tokens();
    cached += g->cached_prompt_tokens();
  }
  return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}}};
}

std::string json_text(const nlohmann::ordered_json& payload) {
  return payload.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string sse_event(const nlohmann::ordered_json& payload) { return "data: " + json_text(payload) + "\n\n"; }

std::string new_response_id(const std::string& prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[48];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return prefix + buf;
}

}  // namespace tessera
