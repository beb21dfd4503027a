#pragma once
// Log-probabilities of one logit row, in passes the compiler vectorizes:
// sampling with logprobs and prompt scoring read a whole vocabulary row
// (150k entries) per token, on the model loop.
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tessera {

// log(sum(exp(logits))), accumulated in double. -inf entries (tokens a
// filter ruled out) add nothing measurable. Relative error of each exp
// below 3e-7, so the result is within about 1e-6 of the exact value.
float log_sum_exp(std::span<const float> logits);

// The `k` largest finite values with their ids, largest first (ties: lower
// id first), in one pass.
std::vector<std::pair<int32_t, float>> largest(std::span<const float> values, size_t k);

// How many values are greater than `value`.
int64_t count_greater(std::span<const float> values, float value);

}  // namespace tessera
