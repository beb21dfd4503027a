#include "engine/runtime/batch_buffers.h"

#include "engine/core/error.h"

namespace tessera {

void BatchBuffers::Arrays::clear() {
  for (auto* v : {&token_ids, &positions, &query_start, &kv_len, &page_indptr, &page_indices, &logit_rows, &hidden_rows}) v->clear();
  slots.clear();
}

BatchBuffers::BatchBuffers(Backend& backend, const DecoderCapacity& capacity, int max_pages_per_seq)
    : backend_(backend), capacity_(capacity), max_page_indices_(size_t(capacity.max_seqs) * size_t(max_pages_per_seq)) {
  const size_t tokens = size_t(capacity.max_tokens), seqs = size_t(capacity.max_seqs);
  token_ids_ = device_.reserve<int32_t>(tokens);
  positions_ = device_.reserve<int32_t>(tokens);
  slots_ = device_.reserve<int64_t>(tokens);
  query_start_ = device_.reserve<int32_t>(seqs + 1);
  kv_len_ = device_.reserve<int32_t>(seqs);
  page_indptr_ = device_.reserve<int32_t>(seqs + 1);
  page_indices_ = device_.reserve<int32_t>(max_page_indices_);
  logit_rows_ = device_.reserve<int32_t>(tokens);
  hidden_rows_ = device_.reserve<int32_t>(tokens);
  device_.commit(backend);
  for (auto* v : {&host_.token_ids, &host_.positions, &host_.logit_rows, &host_.hidden_rows}) v->reserve(tokens);
  host_.slots.reserve(tokens);
  for (auto* v : {&host_.query_start, &host_.kv_len, &host_.page_indptr}) v->reserve(seqs + 1);
  host_.page_indices.reserve(max_page_indices_);
}

ForwardBatch BatchBuffers::fill(const std::vector<BatchSequence>& seqs, int page_size, Stream& stream) {
  int64_t total = 0, pages = 0;
  for (const BatchSequence& s : seqs) {
    total += s.ranges.empty() ? s.n_tokens : 0;
    for (const TokenRange& r : s.ranges) total += r.size();
    pages += (int64_t(s.start_position) + s.n_tokens + page_size - 1) / page_size;
  }
  if (total > capacity_.max_tokens || int64_t(seqs.size()) > capacity_.max_seqs || pages > int64_t(max_page_indices_)) {
    throw Error("step of " + std::to_string(total) + " tokens in " + std::to_string(seqs.size()) +
                " sequences exceeds the engine's batch capacity (" + std::to_string(capacity_.max_tokens) + " tokens, " +
                std::to_string(capacity_.max_seqs) + " sequences)");
  }
  Arrays& a = host_;
  a.clear();
  a.query_start.push_back(0);
  a.page_indptr.push_back(0);
  for (const BatchSequence& s : seqs) {
    const TokenRange whole{0, s.n_tokens};
    const std::span<const TokenRange> ranges = s.ranges.empty() ? std::span<const TokenRange>(&whole, 1) : s.ranges;
    for (const TokenRange& range : ranges) {
      for (int32_t i = range.begin; i < range.end; ++i) {
        const int32_t pos = s.start_position + i;
        if (s.all_logits) a.logit_rows.push_back(int32_t(a.token_ids.size()));
        if (s.all_hidden) a.hidden_rows.push_back(int32_t(a.token_ids.size()));
        a.token_ids.push_back(s.tokens[i]);
        a.positions.push_back(pos);
        a.slots.push_back(int64_t(s.pages[pos / page_size]) * page_size + pos % page_size);
      }
    }
    if (s.last_logits && !s.all_logits) a.logit_rows.push_back(int32_t(a.token_ids.size()) - 1);
    if (s.last_hidden && !s.all_hidden) a.hidden_rows.push_back(int32_t(a.token_ids.size()) - 1);
    a.query_start.push_back(int32_t(a.token_ids.size()));
    // The keys up to the last token in the share; the mask hides the
    // later ones from earlier queries.
    a.kv_len.push_back(s.start_position + ranges.back().end);
    const int32_t pages_used = (a.kv_len.back() + page_size - 1) / page_size;
    a.page_indices.insert(a.page_indices.end(), s.pages, s.pages + pages_used);
    a.page_indptr.push_back(int32_t(a.page_indices.size()));
  }
  auto upload = [&](const Workspace::Region& region, const auto& values) {
    backend_.copy_host_to_device(device_.get<void>(region), values.data(), values.size() * sizeof(values[0]), stream);
  };
  upload(token_ids_, a.token_ids);
  upload(positions_, a.positions);
  upload(slots_, a.slots);
  upload(query_start_, a.query_start);
  upload(kv_len_, a.kv_len);
  upload(page_indptr_, a.page_indptr);
  upload(page_indices_, a.page_indices);
  upload(logit_rows_, a.logit_rows);
  upload(hidden_rows_, a.hidden_rows);

  ForwardBatch b;
  b.n_tokens = int(a.token_ids.size());
  b.token_ids = device_.get<int32_t>(token_ids_);
  b.positions = device_.get<int32_t>(positions_);
  b.slots = device_.get<int64_t>(slots_);
  b.attention = {int(seqs.size()), device_.get<int32_t>(query_start_), b.positions, device_.get<int32_t>(kv_len_),
                 device_.get<int32_t>(page_indptr_), device_.get<int32_t>(page_indices_)};
  b.n_logit_rows = int(a.logit_rows.size());
  b.logit_rows = device_.get<int32_t>(logit_rows_);
  b.n_hidden_rows = int(a.hidden_rows.size());
  b.hidden_rows = device_.get<int32_t>(hidden_rows_);
  return b;
}

}  // namespace tessera
