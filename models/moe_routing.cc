#include "models/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tessera {
namespace {

// One token's top_k experts, best first, and their weights.
void choose(const float* scores, const MoeSpec& moe, std::vector<int32_t>& order, int32_t* chosen, float* weights) {
  const int n = moe.n_experts, k = moe.top_k;
  const float top = *std::max_element(scores, scores + n);
  float total = 0.0f;
  for (int e = 0; e < n; ++e) total += std::exp(scores[e] - top);
  std::iota(order.begin(), order.end(), 0);
  // Higher score first; equal scores keep the lower expert first. A NaN
  // (a broken model) ranks below every number, keeping the order strict.
  const auto rank = [&](int32_t e) { return std::isnan(scores[e]) ? -INFINITY : scores[e]; };
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
    return rank(a) > rank(b) || (rank(a) == rank(b) && a < b);
  });
  float chosen_total = 0.0f;
  for (int i = 0; i < k; ++i) {
    chosen[i] = order[size_t(i)];
    weights[i] = std::exp(scores[order[size_t(i)]] - top) / total;
    chosen_total += weights[i];
  }
  if (moe.normalize_weights) {
    for (int i = 0; i < k; ++i) weights[i] /= chosen_total;
  }
}

}  // namespace

void route_tokens(const float* scores, int n_tokens, const MoeSpec& moe, ExpertRoutes* routes) {
  const int n = moe.n_experts, k = moe.top_k;
  const size_t assignments = size_t(n_tokens) * size_t(k);
  std::vector<int32_t>& order = routes->order;
  std::vector<int32_t>& chosen = routes->chosen;
  std::vector<float>& weights = routes->chosen_weights;
  order.resize(size_t(n));
  chosen.resize(assignments);
  weights.resize(assignments);
  for (int t = 0; t < n_tokens; ++t) {
    choose(scores + size_t(t) * size_t(n), moe, order, &chosen[size_t(t) * size_t(k)], &weights[size_t(t) * size_t(k)]);
  }
  // Counting sort by expert; tokens stay in ascending order within each.
  routes->offsets.assign(size_t(n) + 1, 0);
  for (int32_t e : chosen) ++routes->offsets[size_t(e) + 1];
  std::partial_sum(routes->offsets.begin(), routes->offsets.end(), routes->offsets.begin());
  routes->rows.resize(assignments);
  routes->weights.resize(assignments);
  std::vector<int32_t>& next = routes->next;
  next.assign(routes->offsets.begin(), routes->offsets.end() - 1);
  for (size_t a = 0; a < assignments; ++a) {
    const int32_t at = next[size_t(chosen[a])]++;
    routes->rows[size_t(at)] = int32_t(a / size_t(k));
    routes->weights[size_t(at)] = weights[a];
  }
}

}  // namespace tessera
