#include "engine/runtime/parallel/context_steps.h"

#include <algorithm>

#include "engine/core/error.h"

namespace tessera {

ContextSteps::ContextSteps(Backend& backend, Communicator& comm, int min_tokens)
    : backend_(backend), comm_(comm), min_tokens_(min_tokens) {}

std::vector<BatchSequence> ContextSteps::divide(const StepPlan& plan, const std::vector<const int32_t*>& pages, int page_size,
                                                Stream& stream) {
  const int world = comm_.world(), rank = comm_.rank();
  const ContextSplit split(plan, world, min_tokens_);
  ranges_.assign(plan.steps.size(), {});
  own_rows_.clear();
  std::vector<BatchSequence> seqs;
  seqs.reserve(plan.steps.size());
  int32_t row = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const SequenceStep& s = plan.steps[i];
    BatchSequence b{s.tokens.data(), int32_t(s.tokens.size()), s.start_position, pages[i], false, false};
    if (split.split(i)) {
      ranges_[i] = split.ranges(i, rank);
      b.ranges = ranges_[i];
      b.all_logits = s.all_logits;
      b.last_logits = s.sample && rank == 0;  // rank 0 holds the last chunk
      for (const TokenRange& r : ranges_[i]) {
        for (int32_t t = r.begin; t < r.end; ++t) own_rows_.push_back(row++);
      }
    } else {
      b.all_logits = rank == 0 && (s.all_logits || s.draft > 0);
      b.last_logits = rank == 0 && s.sample;
      row += b.n_tokens;
    }
    seqs.push_back(b);
  }
  // Every rank's slots, in the order that rank packs its keys and values.
  share_ = ContextShare{};
  slots_.clear();
  if (split.any()) {
    share_.counts.assign(size_t(world), 0);
    for (int q = 0; q < world; ++q) {
      share_.counts[size_t(q)] = split.split_tokens(q);
      for (size_t i = 0; i < plan.steps.size(); ++i) {
        if (!split.split(i)) continue;
        for (const TokenRange& r : split.ranges(i, q)) {
          for (int32_t t = r.begin; t < r.end; ++t) {
            const int64_t pos = int64_t(plan.steps[i].start_position) + t;
            slots_.push_back(int64_t(pages[i][pos / page_size]) * page_size + pos % page_size);
          }
        }
      }
    }
    upload(stream);
  }
  number_logit_rows(plan, split);
  return seqs;
}

void ContextSteps::upload(Stream& stream) {
  const size_t row_bytes = own_rows_.size() * sizeof(int32_t), slot_bytes = slots_.size() * sizeof(int64_t);
  if (own_rows_device_.size() < row_bytes) own_rows_device_ = DeviceBuffer(backend_, row_bytes);
  if (slots_device_.size() < slot_bytes) slots_device_ = DeviceBuffer(backend_, slot_bytes);
  backend_.copy_host_to_device(own_rows_device_.data(), own_rows_.data(), row_bytes, stream);
  backend_.copy_host_to_device(slots_device_.data(), slots_.data(), slot_bytes, stream);
  share_.n_own = int64_t(own_rows_.size());
  share_.own_rows = own_rows_device_.data_as<int32_t>();
  const int64_t* slots = slots_device_.data_as<int64_t>();
  for (int64_t count : share_.counts) {
    share_.slots.push_back(slots);
    slots += count;
  }
}

// Numbers rows as ModelRunner::sample reads them: every token of an
// all-logits or draft step, one row for a sampled step.
void ContextSteps::number_logit_rows(const StepPlan& plan, const ContextSplit& split) {
  const int world = comm_.world();
  plan_rows_.assign(size_t(world), {});
  int64_t base = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const SequenceStep& s = plan.steps[i];
    const int64_t rows = (s.all_logits || s.draft > 0) ? int64_t(s.tokens.size()) : (s.sample ? 1 : 0);
    if (split.split(i) && s.all_logits) {
      for (int q = 0; q < world; ++q) {
        for (const TokenRange& r : split.ranges(i, q)) {
          for (int32_t t = r.begin; t < r.end; ++t) plan_rows_[size_t(q)].push_back(int32_t(base + t));
        }
      }
    } else {
      for (int64_t j = 0; j < rows; ++j) plan_rows_[0].push_back(int32_t(base + j));
    }
    base += rows;
  }
  plan_rows_total_ = base;
}

void ContextSteps::collect_logits(const float* device_logits, int64_t vocab, std::vector<float>& host, Stream& stream) {
  const int rank = comm_.rank();
  const size_t row_bytes = size_t(vocab) * sizeof(float);
  if (rank != 0) {
    const size_t n = plan_rows_[size_t(rank)].size();
    if (n > 0) comm_.send(device_logits, n * row_bytes, 0, stream);
    return;
  }
  host.resize(size_t(plan_rows_total_) * size_t(vocab));
  auto place = [&](const float* rows, const std::vector<int32_t>& to) {
    for (size_t j = 0; j < to.size(); ++j) std::copy_n(rows + j * size_t(vocab), size_t(vocab), host.data() + size_t(to[j]) * size_t(vocab));
  };
  const std::vector<int32_t>& own = plan_rows_[0];
  bool in_order = int64_t(own.size()) == plan_rows_total_;
  for (size_t j = 0; in_order && j < own.size(); ++j) in_order = own[j] == int32_t(j);
  if (in_order) {
    backend_.copy_device_to_host(host.data(), device_logits, own.size() * row_bytes, stream);
    stream.synchronize();
  } else {
    staging_.resize(own.size() * size_t(vocab));
    backend_.copy_device_to_host(staging_.data(), device_logits, own.size() * row_bytes, stream);
    stream.synchronize();
    place(staging_.data(), own);
  }
  for (int q = 1; q < comm_.world(); ++q) {
    const std::vector<int32_t>& theirs = plan_rows_[size_t(q)];
    if (theirs.empty()) continue;
    const size_t bytes = theirs.size() * row_bytes;
    if (peer_logits_.size() < bytes) peer_logits_ = DeviceBuffer(backend_, bytes);
    comm_.recv(peer_logits_.data(), bytes, q, stream);
    staging_.resize(theirs.size() * size_t(vocab));
    backend_.copy_device_to_host(staging_.data(), peer_logits_.data(), bytes, stream);
    stream.synchronize();
    place(staging_.data(), theirs);
  }
}

}  // namespace tessera
