#pragma once
// Decode steps replayed from recordings (CUDA graphs) where the backend
// records: one recording per step shape, made the second time the shape is
// seen (the first run lets every buffer reach its size), then replayed for
// every later step of that shape. The step's inputs sit in the fixed batch
// buffers, so a replay reads the new step's tokens, positions and pages.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <tuple>

#include "kernels/backend.h"

namespace tessera {

// What a recorded pass depends on beyond the contents of its buffers.
struct StepShape {
  int n_tokens = 0;
  int n_seqs = 0;
  int n_logit_rows = 0;
  bool operator<(const StepShape& o) const {
    return std::tie(n_tokens, n_seqs, n_logit_rows) < std::tie(o.n_tokens, o.n_seqs, o.n_logit_rows);
  }
};

class StepRecordings {
 public:
  // Decode steps (one token per sequence) of at most this many sequences are recorded.
  static constexpr int kMaxRecordedSeqs = 64;

  static bool recordable(const StepShape& shape) {
    return shape.n_tokens == shape.n_seqs && shape.n_tokens <= kMaxRecordedSeqs;
  }

  // Queues the pass `enqueue` queues, from a recording where there is one.
  void run(const StepShape& shape, Backend& backend, Stream& stream, const std::function<void()>& enqueue);

  // Forgets every recording (their buffers moved).
  void clear() { entries_.clear(); }
  size_t recorded() const;

 private:
  struct Entry {
    bool seen = false;
    bool unsupported = false;
    std::unique_ptr<Recording> recording;
  };
  std::map<StepShape, Entry> entries_;
};

}  // namespace tessera
