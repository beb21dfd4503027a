#pragma once
// The embeddings of one request's inputs, as every front end asks for them:
// each input's prompt computed once by the model's loop (no output tokens)
// and its final hidden states pooled as the model is configured (last token
// or mean, normalized to unit length unless configured off).
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "server/serving/served_model.h"

namespace tessera {

struct EmbeddingResult {
  std::vector<std::vector<float>> vectors;  // one per input, in order, d_model floats each
  int prompt_tokens = 0;
};

// Submits the inputs, at most `max_in_flight` at a time (429 when the
// model's queue is full, 400 for a prompt that cannot fit, 503 when the
// engine cannot serve), and waits for all. Returns nothing when
// `client_gone` turns true first (everything is then cancelled); an engine
// error is an ApiError.
std::optional<EmbeddingResult> run_embeddings(ServedModel& model, const std::vector<std::vector<int32_t>>& inputs,
                                              int max_in_flight, const std::function<bool()>& client_gone);

// Unit length, in place (a zero vector stays zero).
void normalize(std::vector<float>& v);

}  // namespace tessera
