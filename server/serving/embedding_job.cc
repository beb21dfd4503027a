#include "server/serving/embedding_job.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "server/serving/api_error.h"

namespace tessera {
namespace {

Pooling pooling_of(const ServedModel& model) { return model.config.embeddings.pooling == "mean" ? Pooling::kMean : Pooling::kLast; }

[[noreturn]] void refuse(ServedModel& model, const Submission& s, size_t prompt_tokens) {
  switch (s.admission) {
    case Admission::kQueueFull:
      model.metrics->count_rejected("queue_full");
      throw ApiError(429, "rate_limit_error", "the server is at capacity for model '" + model.name() + "'; retry later", "",
                     "rate_limit_exceeded").counted();
    case Admission::kInvalid:
      model.metrics->count_rejected("invalid");
      throw ApiError::invalid(s.reason, "input").counted();
    default:
      model.metrics->count_rejected("too_long");
      throw ApiError::invalid("an input of " + std::to_string(prompt_tokens) + " tokens does not fit: the model's maximum length is " +
                              std::to_string(model.max_model_len) + " tokens and must also fit the KV cache", "input").counted();
  }
}

}  // namespace

void normalize(std::vector<float>& v) {
  double sum = 0.0;
  for (float x : v) sum += double(x) * double(x);
  if (sum <= 0.0) return;
  const double scale = 1.0 / std::sqrt(sum);
  for (float& x : v) x = float(double(x) * scale);
}

std::optional<EmbeddingResult> run_embeddings(ServedModel& model, const std::vector<std::vector<int32_t>>& inputs,
                                              int max_in_flight, const std::function<bool()>& client_gone) {
  switch (model.loop->state()) {
    case LoopState::kReady: break;
    case LoopState::kFaulted: throw ApiError(503, "server_error", "the engine of model '" + model.name() + "' has failed");
    default: throw ApiError(503, "server_error", "the server is shutting down");
  }
  auto stream = std::make_shared<RequestStream>();
  std::vector<uint64_t> ids;  // request id of each input submitted so far
  auto cancel_all = [&] {
    for (uint64_t id : ids) model.loop->cancel(id);
  };
  EmbeddingResult result;
  result.vectors.resize(inputs.size());
  size_t done = 0;
  while (done < inputs.size()) {
    // A window of the inputs at a time: one request never holds more of the
    // model's queue than a generation request with the largest n.
    while (ids.size() < inputs.size() && ids.size() - done < size_t(std::max(max_in_flight, 1))) {
      const std::vector<int32_t>& prompt = inputs[ids.size()];
      Request r;
      r.prompt = prompt;
      r.max_new_tokens = 0;
      r.pooling = pooling_of(model);
      const Submission s = model.loop->submit(std::move(r), stream);
      if (s.admission != Admission::kAccepted) {
        cancel_all();
        refuse(model, s, prompt.size());
      }
      model.metrics->count_accepted();
      ids.push_back(s.request_id);
      result.prompt_tokens += int(prompt.size());
    }
    if (client_gone()) {
      cancel_all();
      return std::nullopt;
    }
    const std::optional<RequestEvent> e = stream->pop(std::chrono::milliseconds(20));
    if (!e || e->finish == FinishReason::kNone) continue;
    const size_t index = size_t(std::find(ids.begin(), ids.end(), e->request_id) - ids.begin());
    if (index == ids.size()) continue;
    if (e->finish != FinishReason::kLength || e->embedding.empty()) {
      cancel_all();
      throw ApiError::from_generation(e->error.empty() ? "the embedding could not be computed" : e->error);
    }
    result.vectors[index] = e->embedding;
    if (model.config.embeddings.normalize) normalize(result.vectors[index]);
    ++done;
  }
  return result;
}

}  // namespace tessera
