#pragma once
// A product through matmul() checked output by output against the weight's
// one-row kernel, bit for bit: the batch invariance every faster path keeps.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cpu/linear/matmul.h"
#include "tests/unit/test_files.h"

namespace tessera::cpu::test_support {

// `tokens` random rows through `weight`; `what` names the case in failures.
inline void expect_one_row_bits(const LinearWeight& weight, int64_t tokens, uint32_t seed, const std::string& what) {
  const int64_t rows = weight.rows(), cols = weight.cols();
  const std::vector<float> x = test::normal_values(tokens * cols, seed);
  std::vector<float> y(static_cast<size_t>(tokens * rows));
  ThreadPool pool(2);
  MatmulScratch scratch;
  matmul(weight, x.data(), tokens, y.data(), scratch, pool);
  std::vector<uint8_t> act(weight.activation_row_bytes());
  for (int64_t m = 0; m < tokens; ++m) {
    convert_activation_row(weight.kernel().activation_type, x.data() + m * cols, act.data(), cols);
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(y[size_t(m * rows + r)], weight.kernel().fn(cols, weight.row(r), act.data()))
          << what << ": tokens " << tokens << " token " << m << " row " << r;
    }
  }
}

}  // namespace tessera::cpu::test_support
