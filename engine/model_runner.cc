#include "engine/model_runner.h"

#include <thread>

#include "engine/error.h"

namespace tessera {
namespace {

int default_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : int(hw);
}

// The flattened arrays behind a ForwardBatch.
struct BatchArrays {
  std::vector<int32_t> token_ids, positions, query_start{0}, kv_len, page_indptr{0}, page_indices, logit_rows;
  std::vector<int64_t> slots;

  ForwardBatch view() const {
    ForwardBatch b;
    b.n_tokens = int(token_ids.size());
    b.token_ids = token_ids.data();
    b.positions = positions.data();
    b.slots = slots.data();
    b.attention = {int(kv_len.size()), query_start.data(), positions.data(), kv_len.data(), page_indptr.data(), page_indices.data()};
    b.n_logit_rows = int(logit_rows.size());
    b.logit_rows = logit_rows.data();
    return b;
  }
};

BatchArrays build_batch(const StepPlan& plan, int page_size) {
  BatchArrays a;
  for (const SequenceStep& s : plan.sequences) {
    const int32_t first_row = int32_t(a.token_ids.size());
    for (size_t i = 0; i < s.tokens.size(); ++i) {
      const int32_t pos = s.start_position + int32_t(i);
      a.token_ids.push_back(s.tokens[i]);
      a.positions.push_back(pos);
      a.slots.push_back(int64_t(s.block_table[size_t(pos / page_size)]) * page_size + pos % page_size);
      if (s.all_logits) a.logit_rows.push_back(first_row + int32_t(i));
    }
    if (s.sample && !s.all_logits) a.logit_rows.push_back(int32_t(a.token_ids.size()) - 1);
    a.query_start.push_back(int32_t(a.token_ids.size()));
    a.kv_len.push_back(s.start_position + int32_t(s.tokens.size()));
    const size_t pages_used = size_t((a.kv_len.back() + page_size - 1) / page_size);
    a.page_indices.insert(a.page_indices.end(), s.block_table.begin(), s.block_table.begin() + long(pages_used));
    a.page_indptr.push_back(int32_t(a.page_indices.size()));
  }
  return a;
}

}  // namespace

ModelRunner::ModelRunner(std::unique_ptr<Model> model, const RunnerConfig& config)
    : model_(std::move(model)),
      pool_(default_threads(config.n_threads)),
      decoder_(model_->spec(), model_->weights(), cpu::detect_isa()) {
  const DecoderSpec& spec = model_->spec();
  const KvLayout layout{config.kv_dtype, config.page_size, spec.n_kv_heads, spec.head_dim};
  const int64_t pages = PagedKvCache::pages_for_budget(layout, spec.n_layers, config.kv_budget_bytes);
  if (pages < 1) {
    throw Error("KV cache budget of " + std::to_string(config.kv_budget_bytes) + " bytes holds no page (one page needs " +
                std::to_string(PagedKvCache::bytes_per_page(layout, spec.n_layers)) + " bytes)");
  }
  kv_ = std::make_unique<PagedKvCache>(layout, spec.n_layers, pages);
}

void ModelRunner::validate(const StepPlan& plan) const {
  const int vocab = model_->spec().vocab_size;
  const int ps = page_size();
  for (const SequenceStep& s : plan.sequences) {
    const std::string who = "sequence " + std::to_string(s.seq_id);
    if (s.tokens.empty()) throw Error(who + ": no tokens in the step");
    if (s.start_position < 0) throw Error(who + ": negative start position");
    for (int32_t t : s.tokens) {
      if (t < 0 || t >= vocab) throw Error(who + ": token id " + std::to_string(t) + " outside the vocabulary of " + std::to_string(vocab));
    }
    const int64_t end = int64_t(s.start_position) + int64_t(s.tokens.size());
    if (int64_t(s.block_table.size()) * ps < end) throw Error(who + ": block table too short for position " + std::to_string(end - 1));
    for (int32_t page : s.block_table) {
      if (page < 0 || page >= kv_->n_pages()) throw Error(who + ": page " + std::to_string(page) + " outside the cache");
    }
    if (s.sample && (!s.sampling || !s.rng)) throw Error(who + ": sampling requested without parameters");
  }
}

StepResult ModelRunner::step(const StepPlan& plan) {
  validate(plan);
  const BatchArrays arrays = build_batch(plan, page_size());
  const ForwardBatch batch = arrays.view();
  const size_t vocab = size_t(model_->spec().vocab_size);
  logits_.resize(arrays.logit_rows.size() * vocab);
  decoder_.forward(batch, kv_->layout(), kv_->layers(), logits_.data(), pool_);

  StepResult result;
  size_t row = 0;
  for (const SequenceStep& s : plan.sequences) {
    SequenceResult& r = result.sequences.emplace_back();
    r.seq_id = s.seq_id;
    size_t last_row = row;
    if (s.all_logits) {
      r.logits.assign(logits_.begin() + long(row * vocab), logits_.begin() + long((row + s.tokens.size()) * vocab));
      row += s.tokens.size();
      last_row = row - 1;
    } else if (s.sample) {
      last_row = row++;
    }
    if (s.sample) {
      std::vector<float> scratch(logits_.begin() + long(last_row * vocab), logits_.begin() + long((last_row + 1) * vocab));
      r.token = sample_token(scratch, *s.sampling, s.history, s.prompt_len, *s.rng);
      r.sampled = true;
    }
  }
  return result;
}

}  // namespace tessera
