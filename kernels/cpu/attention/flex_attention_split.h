#pragma once
// Decode attention with each item's keys split among the threads. A decode
// step of one sequence has one work item per KV head: three for SmolLM2, one
// for Gemma 3, too few to keep every thread busy, and at a long context each
// item is long. Here the items' keys are cut into chunks of whole 16-key
// groups and the passes run as four loops over the pool:
//   1. scores of each chunk, and each chunk's row maxima;
//   2. the exponentials against the row maxima, each group's lane sum, and
//      the chunk's values gathered into their lanes;
//   3. the groups' sums added in double in key order, and the chunk's
//      probabilities;
//   4. the weighted values, split by heads and by elements of d.
// Each score, exponential, group sum and output element is computed as
// the whole-item kernel computes it, and the sums that cross chunks (row
// maxima, the double sum over groups) are taken in the same order, so the
// bits are those of the unsplit kernel whatever the chunks. Compiled once
// per instruction set with the kernel body.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/attention/flex_attention_passes.h"
#include "kernels/cpu/attention/flex_attention_score_pass.h"
#include "kernels/query_groups.h"

// Internal linkage, as in flex_attention_impl.h: each build its own copy.
namespace tessera::cpu {
namespace {

// Splitting costs three more hand-overs between threads a layer; a chunk
// of fewer keys than this does not earn them back.
constexpr int kMinKeysPerChunk = 128;

// Whether run_split serves the step: every item one query token (decode),
// fewer query heads in all than threads (so that even one head a thread
// would leave threads waiting), and an item long enough for two chunks.
// Where the heads go round, splitting them among threads is as fast: on two
// threads the key split measured 0.93-1.03 times the speed of the head split
// at 512 to 8,192 keys (BM_Attention, Gemma 3's one KV head of four queries).
template <class Mask>
bool split_pays(const std::vector<WorkItem>& items, const AttentionBatch& batch, const Mask& mask, int query_group,
                int threads) {
  if (items.empty() || items.size() * size_t(query_group) >= size_t(threads)) return false;
  int longest = 0;
  for (const WorkItem& item : items) {
    if (item.token_end - item.token_begin != 1) return false;
    const int pos = batch.positions[item.token_begin];
    const int prefix = batch.prefix_len ? batch.prefix_len[item.seq] : 0;
    const int last = std::min(batch.kv_len[item.seq] - 1, mask.last(pos, prefix));
    longest = std::max(longest, last - mask.first(pos) + 1);
  }
  return longest >= 2 * kMinKeysPerChunk;
}

// fn(part, scratch) for parts [0, n), claimed one at a time by the pool's
// threads; scratch is the claiming thread's.
template <class Fn>
void for_each_part(ThreadPool& pool, int64_t n, AttentionScratch* scratch, const Fn& fn) {
  std::atomic<int64_t> next{0};
  pool.parallel_for(std::min<int64_t>(n, pool.size()), 1, [&](int chunk, int64_t, int64_t) {
    for (int64_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(size_t(i), scratch[chunk]);
  });
}

// The length of each of `parts` runs that cover `count` units, the last
// run perhaps shorter: count / parts, rounded up.
inline int run_length(int count, int parts) { return (count + parts - 1) / std::max(parts, 1); }

// Plans the split into s: each item's chunks, value parts and buffer places.
template <class Mask>
void plan_split(const std::vector<WorkItem>& items, const PagedKv& kv, const AttentionBatch& batch, const Mask& mask,
                const ops::QueryGroups& groups, int threads, SplitKeysScratch& s) {
  s.items.clear(), s.chunks.clear(), s.value_parts.clear();
  // Two parts a thread in each loop, so that a late thread finds work.
  const int wanted = run_length(2 * threads, int(items.size()));
  const int dim = kv.head_dim, d_units = dim % kLanes == 0 ? dim / kLanes : 1;
  size_t weights = 0, maxima = 0, sums = 0, values = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const int head0 = groups.first(items[i].kv_head), head_count = groups.end(items[i].kv_head) - head0;
    const ItemView<Mask> view(items[i], head0, head_count, kv, batch, mask);
    const int base = view.span.first - view.span.first % kLanes;
    const int n_groups = view.span.size() > 0 ? (view.span.last - base) / kLanes + 1 : 1;
    const int n_chunks = std::clamp(wanted, 1, std::max(1, view.span.size() / kMinKeysPerChunk));
    const int group_step = run_length(n_groups, n_chunks);
    const int item = int(s.items.size()), first_chunk = int(s.chunks.size());
    for (int g = 0; g < n_groups; g += group_step) {
      const int from = std::max(view.span.first, base + g * kLanes);
      const int to = std::min(view.span.last, base + (g + group_step) * kLanes - 1);
      s.chunks.push_back({item, int(s.chunks.size()) - first_chunk, from, to});
    }
    const int chunks = int(s.chunks.size()) - first_chunk;
    s.items.push_back({int(i), head0, head_count, chunks, weights, maxima, sums, values});
    weights += kLanes + size_t(view.n_rows) * size_t(std::max(view.span.size(), 0));
    maxima += size_t(view.n_rows) * size_t(chunks);
    sums += size_t(view.n_rows) * size_t(n_groups);
    values += LaneValues::floats(view.span.first, view.span.last, dim);
    const int head_runs = (head_count + kValueRows - 1) / kValueRows;
    const int d_parts = std::clamp(run_length(wanted * chunks, head_runs), 1, d_units);
    const int d_step = run_length(d_units, d_parts) * (dim % kLanes == 0 ? kLanes : dim);
    for (int h = 0; h < head_count; h += kValueRows) {
      for (int d = 0; d < dim; d += d_step) {
        s.value_parts.push_back({item, h, std::min(head_count, h + kValueRows), d, std::min(dim, d + d_step)});
      }
    }
  }
  if (s.weights.size() < weights) s.weights.resize(weights);
  if (s.maxima.size() < maxima) s.maxima.resize(maxima);
  if (s.sums.size() < sums) s.sums.resize(sums);
  if (s.values.size() < values) s.values.resize(values);
}

// One planned item's view and its places in the shared buffers.
template <class Mask>
struct SplitItemView {
  ItemView<Mask> view;
  float* weights;        // [n_rows][span], the slack before it
  float* maxima;         // [chunk][n_rows]
  float* sums;           // [n_rows][n_groups], group g holding keys base + 16 g ..
  LaneValues values;
  int base, n_groups, n_chunks;

  SplitItemView(const SplitKeysScratch::Item& it, const std::vector<WorkItem>& items, const PagedKv& kv,
                const AttentionBatch& batch, const Mask& mask, SplitKeysScratch& s)
      : view(items[size_t(it.item)], it.head0, it.head_count, kv, batch, mask),
        weights(s.weights.data() + it.weights + kLanes),
        maxima(s.maxima.data() + it.maxima),
        sums(s.sums.data() + it.sums),
        values(s.values.data() + it.values, view.span.first, view.span.last, kv.head_dim),
        base(view.span.first - view.span.first % kLanes),
        n_groups(view.span.size() > 0 ? (view.span.last - base) / kLanes + 1 : 1),
        n_chunks(it.n_chunks) {}
  float* row_weights(int r) const { return weights + size_t(r) * size_t(std::max(view.span.size(), 0)); }
  float* row_sums(int r) const { return sums + size_t(r) * size_t(n_groups); }
  // fn(r, lo, hi, first, last) for each row r that sees keys in chunk c:
  // [lo, hi] the row's keys, [first, last] those in the chunk.
  template <class Fn>
  void for_each_row(const SplitKeysScratch::Chunk& c, const Fn& fn) const {
    for (int r = 0; r < view.n_rows; ++r) {
      int lo, hi;
      view.row_keys(r, &lo, &hi);
      const int first = std::max(lo, c.from), last = std::min(hi, c.to);
      if (first <= last) fn(r, lo, hi, first, last);
    }
  }
  // Row r's maximum over every chunk, in chunk order (the order of the
  // unsplit kernel's running maximum), with its sink.
  float row_max(int r, const AttentionParams& params, float* sink) const {
    float max = -std::numeric_limits<float>::infinity();
    for (int c = 0; c < n_chunks; ++c) max = std::max(max, maxima[size_t(c) * size_t(view.n_rows) + size_t(r)]);
    return max_with_sink(max, params, view.head(r), sink);
  }
};

template <class Mask, class Score>
void run_split(const std::vector<WorkItem>& items, const float* q, int n_heads, const PagedKv& kv, const AttentionBatch& batch,
               const AttentionParams& params, const Mask& mask, const Score& score_mod, const ops::QueryGroups& groups,
               float* out, ThreadPool& pool, AttentionWorkspace& workspace) {
  SplitKeysScratch& s = workspace.split;
  plan_split(items, kv, batch, mask, groups, pool.size(), s);
  const int dim = kv.head_dim;
  const bool f16 = kv.dtype == DType::kF16;
  auto chunk_view = [&](size_t part) { return SplitItemView<Mask>(s.items[size_t(s.chunks[part].item)], items, kv, batch, mask, s); };
  for_each_part(pool, int64_t(s.chunks.size()), workspace.threads.data(), [&](size_t part, AttentionScratch& scratch) {
    const SplitKeysScratch::Chunk& c = s.chunks[part];
    const SplitItemView<Mask> it = chunk_view(part);
    const int n_rows = it.view.n_rows;
    float* const queries = scratch_floats(scratch.queries, size_t(n_rows) * size_t(dim));
    float* const offsets = scratch_floats(scratch.offsets, size_t(n_rows));
    prepare_queries(it.view, q, n_heads, params, queries, offsets);
    float* const row_max = it.maxima + size_t(c.index) * size_t(n_rows);
    std::fill_n(row_max, n_rows, -std::numeric_limits<float>::infinity());
    float* const rows = scratch_floats(scratch.rows, score_rows_floats(kv));
    const float score_scale = params.scale_queries ? 1.0f : params.scale;
    score_rows(it.view, queries, offsets, score_mod, score_scale, c.from, c.to, it.weights, row_max, rows);
  });
  for_each_part(pool, int64_t(s.chunks.size()), workspace.threads.data(), [&](size_t part, AttentionScratch&) {
    const SplitKeysScratch::Chunk& c = s.chunks[part];
    const SplitItemView<Mask> it = chunk_view(part);
    it.for_each_row(c, [&](int r, int lo, int hi, int first, int last) {
      float sink;
      exponentiate(it.row_weights(r), it.view.span.first, first, last, it.row_max(r, params, &sink));
      // Chunks hold whole groups: each group's lanes are all in this chunk.
      for (int g = first - first % kLanes; g <= last; g += kLanes) {
        it.row_sums(r)[(g - it.base) / kLanes] = group_sum(it.row_weights(r), it.view.span.first, g, lo, hi);
      }
    });
    gather_values(it.view, it.values, c.from, c.to);
  });
  for_each_part(pool, int64_t(s.chunks.size()), workspace.threads.data(), [&](size_t part, AttentionScratch&) {
    const SplitKeysScratch::Chunk& c = s.chunks[part];
    const SplitItemView<Mask> it = chunk_view(part);
    it.for_each_row(c, [&](int r, int lo, int hi, int first, int last) {
      double sum = 0.0;
      for (int g = lo - lo % kLanes; g <= hi; g += kLanes) sum += double(it.row_sums(r)[(g - it.base) / kLanes]);
      float sink;
      it.row_max(r, params, &sink);
      sum += double(sink);
      scale_probabilities(it.row_weights(r), it.view.span.first, first, last, inverse_sum(sum), f16);
    });
  });
  for_each_part(pool, int64_t(s.value_parts.size()), workspace.threads.data(), [&](size_t part, AttentionScratch& scratch) {
    const SplitKeysScratch::ValuePart& v = s.value_parts[part];
    const SplitItemView<Mask> it(s.items[size_t(v.item)], items, kv, batch, mask, s);
    float* const acc = scratch_floats(scratch.acc, size_t(kValueRows) * kLanes * kValueChunk);
    weigh_values(it.view, it.weights, it.values, v.h_begin, v.h_end, v.d_begin, v.d_end, n_heads, acc, out);
  });
}

}  // namespace
}  // namespace tessera::cpu
