#pragma once
// An embedding's pooling over its prompt's final hidden states, fed step by
// step as the engine returns them: the mean of every position's row, or the
// last position's row. A position computed again after preemption counts
// once.
#include <cstddef>
#include <span>
#include <vector>

#include "scheduler/request.h"

namespace tessera {

class HiddenPool {
 public:
  HiddenPool(Pooling pooling, size_t prompt_len) : pooling_(pooling), prompt_len_(prompt_len) {}

  // `rows` holds the rows of prompt positions first, first + 1, ..., each
  // `width` floats; positions already counted or past the prompt are skipped.
  void add(std::span<const float> rows, size_t first, size_t width);
  // Every row the pooling needs has been added.
  bool complete() const { return next_ >= prompt_len_ && !sum_.empty(); }
  // The pooled vector (width floats); empty until complete.
  std::vector<float> result() const;

 private:
  Pooling pooling_;
  size_t prompt_len_;
  size_t next_ = 0;           // the next position whose row counts
  std::vector<double> sum_;   // (width): the mean's sum, or the last row
};

}  // namespace tessera
