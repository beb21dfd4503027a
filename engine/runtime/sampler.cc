#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "engine/core/token_ids.h"
#include "engine/runtime/log_softmax.h"

namespace tessera {
namespace {

void apply_penalties(std::span<float> logits, const SamplingParams& p, std::span<const int32_t> history, size_t prompt_len) {
  const int32_t vocab = int32_t(logits.size());
  if (p.repetition_penalty != 1.0f) {
    std::vector<bool> seen(logits.size(), false);
    for (int32_t id : history) {
      if (!token_in_vocabulary(id, vocab) || seen[size_t(id)]) continue;
      seen[size_t(id)] = true;
      float& l = logits[size_t(id)];
      l = l > 0.0f ? l / p.repetition_penalty : l * p.repetition_penalty;
    }
  }
  if (p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f) {
    std::unordered_map<int32_t, int> counts;
    for (size_t i = std::min(prompt_len, history.size()); i < history.size(); ++i) ++counts[history[i]];
    for (const auto& [id, count] : counts) {
      if (!token_in_vocabulary(id, vocab)) continue;
      logits[size_t(id)] -= p.frequency_penalty * float(count) + p.presence_penalty;
    }
  }
}

// The `k` most likely tokens as log-probabilities, best first (ties: lower
// id first). Tokens a filter ruled out have no probability and are left out.
std::vector<std::pair<int32_t, float>> most_likely(std::span<const float> logits, float log_sum, size_t k) {
  std::vector<std::pair<int32_t, float>> out = largest(logits, k);
  for (auto& [id, value] : out) value -= log_sum;
  return out;
}

int32_t argmax(std::span<const float> v) { return int32_t(std::max_element(v.begin(), v.end()) - v.begin()); }

// The first `k` ids of `order` sorted best first (ties: lower id first).
void sort_best(std::vector<int32_t>& order, size_t k, std::span<const float> logits) {
  auto better = [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b); };
  std::partial_sort(order.begin(), order.begin() + long(k), order.end(), better);
}

// A draw after temperature, top-k, top-p and min-p. Only as much of the
// vocabulary is sorted as the filters look at: none for plain temperature
// sampling, the top-k, or a growing prefix until it holds top_p of the mass.
int32_t draw(std::span<float> logits, const SamplingParams& p, std::mt19937_64& rng) {
  const size_t n = logits.size();
  const float inv_t = 1.0f / p.temperature;
  const float mx = *std::max_element(logits.begin(), logits.end()) * inv_t;
  std::vector<double> weight(n);  // by id, relative to the most likely token
  for (size_t i = 0; i < n; ++i) weight[i] = std::exp(double(logits[i] * inv_t - mx));
  if (p.top_k <= 0 && p.top_p >= 1.0f && p.min_p <= 0.0f) {
    std::discrete_distribution<size_t> pick(weight.begin(), weight.end());
    return int32_t(pick(rng));
  }
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  size_t keep = p.top_k > 0 ? std::min(n, size_t(p.top_k)) : n;
  size_t sorted = std::min<size_t>(keep, 256);
  sort_best(order, sorted, logits);
  double total = 0.0;
  if (keep < n) {
    sort_best(order, keep, logits);
    sorted = keep;
    for (size_t i = 0; i < keep; ++i) total += weight[size_t(order[i])];
  } else {
    for (double w : weight) total += w;
  }
  size_t cut = keep;
  if (p.top_p < 1.0f) {
    double cumulative = 0.0;
    for (size_t i = 0; i < keep; ++i) {
      if (i == sorted) sort_best(order, sorted = std::min(keep, sorted * 4), logits);
      cumulative += weight[size_t(order[i])] / total;
      if (cumulative >= double(p.top_p)) {
        cut = i + 1;
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    const double floor = double(p.min_p) * weight[size_t(order[0])];
    size_t i = 1;
    for (; i < cut; ++i) {
      if (i == sorted) sort_best(order, sorted = std::min(keep, sorted * 4), logits);
      if (weight[size_t(order[i])] < floor) break;
    }
    cut = i;
  }
  if (cut > sorted) sort_best(order, cut, logits);
  std::vector<double> probs(cut);
  for (size_t i = 0; i < cut; ++i) probs[i] = weight[size_t(order[i])];
  std::discrete_distribution<size_t> pick(probs.begin(), probs.end());
  return order[pick(rng)];
}

}  // namespace

SampledToken sample_token(std::span<float> logits, const SamplingParams& params, std::span<const int32_t> history,
                          size_t prompt_len, std::mt19937_64& rng, TokenFilter* filter) {
  const int32_t vocab = int32_t(logits.size());
  for (const auto& [id, bias] : params.logit_bias) {
    if (token_in_vocabulary(id, vocab)) logits[size_t(id)] += bias;
  }
  apply_penalties(logits, params, history, prompt_len);
  const size_t generated = history.size() > prompt_len ? history.size() - prompt_len : 0;
  if (generated < size_t(std::max(params.min_tokens, 0))) {
    for (int32_t id : params.held_back) {
      if (token_in_vocabulary(id, vocab)) logits[size_t(id)] = -std::numeric_limits<float>::infinity();
    }
  }
  SampledToken out;
  const bool reports = params.logprobs || params.top_logprobs > 0;
  if (filter && params.greedy() && !reports) {
    // The most likely allowed token is the most likely token whenever that
    // one is allowed: mask only when it is not.
    out.id = argmax(logits);
    if (!filter->allows(out.id)) {
      filter->mask_logits(logits);
      out.id = argmax(logits);
    }
    return out;
  }
  if (filter) filter->mask_logits(logits);
  out.id = params.greedy() ? argmax(logits) : draw(logits, params, rng);
  if (params.logprobs || params.top_logprobs > 0) {
    const float log_sum = log_sum_exp(logits);
    out.logprob = logits[size_t(out.id)] - log_sum;
    if (params.top_logprobs > 0) out.top = most_likely(logits, log_sum, size_t(params.top_logprobs));
  }
  return out;
}

SampledToken score_token(std::span<const float> logits, int32_t token, int top) {
  const float log_sum = log_sum_exp(logits);
  SampledToken out;
  out.id = token;
  out.logprob = logits[size_t(token)] - log_sum;
  out.rank = 1 + int32_t(count_greater(logits, logits[size_t(token)]));
  if (top > 0) out.top = most_likely(logits, log_sum, size_t(top));
  return out;
}

}  // namespace tessera
