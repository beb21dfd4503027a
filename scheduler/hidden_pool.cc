#include "scheduler/hidden_pool.h"

namespace tessera {

void HiddenPool::add(std::span<const float> rows, size_t first, size_t width) {
  if (width == 0 || rows.size() % width != 0) return;
  if (sum_.empty()) sum_.assign(width, 0.0);
  if (sum_.size() != width) return;
  const size_t n = rows.size() / width;
  for (size_t i = 0; i < n; ++i) {
    const size_t position = first + i;
    // The mean needs every position in order; the last pooling only the last.
    const bool wanted = pooling_ == Pooling::kMean ? position == next_ : position + 1 == prompt_len_;
    if (!wanted) continue;
    const std::span<const float> row = rows.subspan(i * width, width);
    for (size_t j = 0; j < width; ++j) sum_[j] = pooling_ == Pooling::kMean ? sum_[j] + double(row[j]) : double(row[j]);
    next_ = position + 1;
  }
}

std::vector<float> HiddenPool::result() const {
  if (!complete()) return {};
  const double divisor = pooling_ == Pooling::kMean ? double(prompt_len_) : 1.0;
  std::vector<float> out(sum_.size());
  for (size_t j = 0; j < sum_.size(); ++j) out[j] = float(sum_[j] / divisor);
  return out;
}

}  // namespace tessera
