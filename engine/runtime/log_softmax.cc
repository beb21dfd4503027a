#include "engine/runtime/log_softmax.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace tessera {
namespace {

constexpr size_t kLanes = 8;  // independent accumulators, so the loops vectorize without reassociating

// exp(x) for x <= 0, branch-free: x = n ln2 + r with |r| <= ln2/2 (ln2 in
// two parts, Cody-Waite), e^r by its degree-6 Taylor polynomial (error below
// 2e-7 relative), 2^n built in the exponent bits. Below -87 it returns
// e^-87, which no sum of 2^24 terms near 1 can notice. n is rounded by
// adding 1.5 * 2^23 (no floor: baseline x86-64 has no vector floor).
inline float exp_nonpositive(float x) {
  x = x < -87.0f ? -87.0f : x;
  constexpr float kRound = 12582912.0f;
  const float n = (x * 1.44269504089f + kRound) - kRound;
  const float r = (x - n * 0.693145751953f) - n * 1.42860682030e-6f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((int32_t(n) + 127) << 23);
}

float max_of(std::span<const float> v) {
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, -std::numeric_limits<float>::infinity());
  size_t i = 0;
  for (; i + kLanes <= v.size(); i += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) lanes[l] = v[i + l] > lanes[l] ? v[i + l] : lanes[l];
  }
  float m = *std::max_element(lanes, lanes + kLanes);
  for (; i < v.size(); ++i) m = std::max(m, v[i]);
  return m;
}

}  // namespace

float log_sum_exp(std::span<const float> logits) {
  if (logits.empty()) return -std::numeric_limits<float>::infinity();
  const float mx = max_of(logits);
  if (!std::isfinite(mx)) return mx;
  // Each block's terms (at most 1 each) are summed in float by lanes, so a
  // lane's rounding stays below 8 ulp; the blocks are summed in double.
  constexpr size_t kBlock = 8 * kLanes;
  double sum = 0.0;
  size_t i = 0;
  for (; i + kBlock <= logits.size(); i += kBlock) {
    float terms[kBlock];
    for (size_t j = 0; j < kBlock; ++j) terms[j] = exp_nonpositive(logits[i + j] - mx);
    float lanes[kLanes] = {};
    for (size_t j = 0; j < kBlock; j += kLanes) {
      for (size_t l = 0; l < kLanes; ++l) lanes[l] += terms[j + l];
    }
    for (float s : lanes) sum += double(s);
  }
  for (; i < logits.size(); ++i) sum += double(exp_nonpositive(logits[i] - mx));
  return float(std::log(sum)) + mx;
}

std::vector<std::pair<int32_t, float>> largest(std::span<const float> values, size_t k) {
  std::vector<std::pair<int32_t, float>> best;  // sorted: largest first, ties lower id first
  k = std::min(k, values.size());
  if (k == 0) return best;
  best.reserve(k + 1);
  constexpr size_t kBlock = 8 * kLanes;
  for (size_t start = 0; start < values.size(); start += kBlock) {
    const auto block = values.subspan(start, std::min(kBlock, values.size() - start));
    // Once k are held, a block whose largest does not beat the k-th is skipped whole.
    if (best.size() == k && !(max_of(block) > best.back().second)) continue;
    for (size_t j = 0; j < block.size(); ++j) {
      const float v = block[j];
      // Ids arrive in increasing order, so an equal value never displaces.
      if (!std::isfinite(v) || (best.size() == k && !(v > best.back().second))) continue;
      auto at = std::find_if(best.begin(), best.end(), [&](const auto& b) { return v > b.second; });
      best.insert(at, {int32_t(start + j), v});
      if (best.size() > k) best.pop_back();
    }
  }
  return best;
}

int64_t count_greater(std::span<const float> values, float value) {
  int64_t lanes[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= values.size(); i += kLanes) {
    for (size_t l = 0; l < kLanes; ++l) lanes[l] += values[i + l] > value ? 1 : 0;
  }
  int64_t n = 0;
  for (int64_t c : lanes) n += c;
  for (; i < values.size(); ++i) n += values[i] > value ? 1 : 0;
  return n;
}

}  // namespace tessera
