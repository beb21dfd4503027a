#include "server/serving/embedding_job.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "server/serving/api_error.h"
#include "server/serving/generation_driver.h"

namespace tessera {
namespace {

Pooling pooling_of(const ServedModel& model) { return model.config.embeddings.pooling == "mean" ? Pooling::kMean : Pooling::kLast; }

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
  require_ready(model);
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
        throw_refusal(refusal_of(model, s, prompt.size(), 0), "input", "input");
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
