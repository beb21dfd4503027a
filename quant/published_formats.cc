#include "quant/published_formats.h"

#include <algorithm>
#include <numeric>

#include "engine/core/error.h"

namespace tessera::quant {
namespace {

// AutoAWQ puts output 8j + kAwqOrder[k] at nibble k of word j.
constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};

int nibble(int32_t word, int k) { return int((uint32_t(word) >> (4 * k)) & 15u); }


void check_shape(const std::string& name, int64_t out, int64_t in, int64_t group) {
  if (out <= 0 || in <= 0 || out % 8 != 0 || in % 32 != 0) {
    throw Error("weight '" + name + "': " + std::to_string(out) + "x" + std::to_string(in) +
                " is not a whole number of packed words (outputs a multiple of 8, inputs of 32)");
  }
  if (group <= 0 || in % group != 0) throw Error("weight '" + name + "': group size " + std::to_string(group) + " does not divide the inputs");
}

// An empty matrix of (out, in) 4-bit values with zero points, groups of `group`.
IntMatrix empty_matrix(const std::string& name, int64_t out, int64_t in, int64_t group) {
  IntMatrix m;
  m.scheme = int_scheme(name, {4, group, false, ActivationPolicy::kNone}, in);
  m.rows = out;
  m.cols = in;
  m.data.assign(size_t(out * in / 2), 0);
  m.scales.assign(size_t(out * m.n_groups()), 0.0f);
  m.zeros.assign(size_t(out * m.n_groups()), 0);
  return m;
}

void store_group(IntMatrix& m, int64_t o, int64_t g, float scale, int zero, const std::string& name) {
  if (zero < 0 || zero > 16) throw Error("weight '" + name + "': zero point " + std::to_string(zero) + " outside [0, 16]");
  m.scales[size_t(o * m.n_groups() + g)] = scale;
  m.zeros[size_t(o * m.n_groups() + g)] = int8_t(zero - 8);
}

}  // namespace

UnpackedLinear unpack_awq(const std::string& name, const PackedLinear& p, int64_t out, int64_t in, int64_t group) {
  check_shape(name, out, in, group);
  UnpackedLinear u{empty_matrix(name, out, in, group), {}};
  IntMatrix& m = u.matrix;
  const int64_t words = out / 8, groups = in / group;
  for (int64_t o = 0; o < out; ++o) {
    const int k = int(std::find(std::begin(kAwqOrder), std::end(kAwqOrder), int(o % 8)) - std::begin(kAwqOrder));
    for (int64_t g = 0; g < groups; ++g) store_group(m, o, g, p.scales[g * out + o], nibble(p.qzeros[g * words + o / 8], k), name);
    uint8_t* row = m.data.data() + o * (in / 2);
    for (int64_t i = 0; i < in; ++i) set_int4(row, i, nibble(p.qweight[i * words + o / 8], k) - 8);
  }
  return u;
}

UnpackedLinear unpack_gptq(const std::string& name, const PackedLinear& p, int64_t out, int64_t in, int64_t group,
                           bool zero_offset) {
  check_shape(name, out, in, group);
  const int64_t groups = in / group, words = out / 8;
  // Inputs regrouped by g_idx (stable), so that each group is contiguous.
  std::vector<int32_t> order(static_cast<size_t>(in));
  std::iota(order.begin(), order.end(), 0);
  if (p.g_idx) {
    for (int64_t i = 0; i < in; ++i) {
      if (p.g_idx[i] < 0 || p.g_idx[i] >= groups) throw Error("weight '" + name + "': g_idx[" + std::to_string(i) + "] outside the groups");
    }
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p.g_idx[a] < p.g_idx[b]; });
    for (int64_t c = 0; c < in; ++c) {
      if (p.g_idx[order[size_t(c)]] != c / group) throw Error("weight '" + name + "': g_idx does not give every group " + std::to_string(group) + " inputs");
    }
  }
  UnpackedLinear u{empty_matrix(name, out, in, group), {}};
  IntMatrix& m = u.matrix;
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t g = 0; g < groups; ++g) {
      store_group(m, o, g, p.scales[g * out + o], nibble(p.qzeros[g * words + o / 8], int(o % 8)) + (zero_offset ? 1 : 0), name);
    }
    uint8_t* row = m.data.data() + o * (in / 2);
    for (int64_t c = 0; c < in; ++c) {
      const int64_t i = order[size_t(c)];
      set_int4(row, c, nibble(p.qweight[(i / 8) * out + o], int(i % 8)) - 8);
    }
  }
  const bool permuted = !std::is_sorted(order.begin(), order.end());
  if (permuted) u.input_order = std::move(order);
  return u;
}

}  // namespace tessera::quant
