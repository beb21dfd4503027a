#pragma once
// FlexAttention-style attention over a paged KV cache: one kernel family,
// specialised at compile time for a mask modifier (which keys a query may
// see) and a score modifier (how a raw score is transformed). Queries are
// processed in tiles against whole KV pages; pages that no query in the tile
// can see are skipped (block sparsity). The same code serves decode (one
// query per sequence) and chunked prefill.
#include <cstdint>
#include <vector>

#include "engine/tensor/dtype.h"
#include "kernels/op_types.h"
#include "kernels/cpu/runtime/isa.h"
#include "kernels/cpu/runtime/thread_pool.h"

namespace tessera::cpu {

using ops::AttentionBatch;
using ops::AttentionParams;
using ops::MaskMod;
using ops::PagedKv;
using ops::ScoreMod;

constexpr int kQueryTile = 16;

// One tile of a sequence's queries against one KV head.
struct AttentionWorkItem {
  int seq;
  int token_begin, token_end;
  int kv_head;
};

// Per-thread temporaries of the kernel, grown to the largest tile seen and
// then reused, so that running the planned items allocates nothing.
struct AttentionScratch {
  std::vector<float> queries, offsets, weights, row_max, rows, keys_t, max_lanes, values, acc;
  std::vector<int> key_blocks;
};

// What the threads share when the keys of a step's few items are split
// among them (flex_attention_split.h): the split's plan and the items'
// scores, maxima, group sums and values, grown to the largest step seen and
// then reused.
struct SplitKeysScratch {
  struct Item {
    int item;                     // index into the step's work items
    int head0, head_count;        // every query head of the item's KV head
    int n_chunks;                 // its key chunks in `chunks`
    size_t weights, maxima, sums, values;  // where its parts of the buffers start
  };
  struct Chunk {
    int item;      // index into `items`
    int index;     // the chunk's place among its item's chunks
    int from, to;  // keys [from, to], from a multiple of 16 or the span's first key
  };
  struct ValuePart {
    int item;  // index into `items`
    int h_begin, h_end, d_begin, d_end;  // heads (from the item's head0) and elements of d
  };
  std::vector<Item> items;
  std::vector<Chunk> chunks;
  std::vector<ValuePart> value_parts;
  std::vector<float> weights, maxima, sums, values;
};

// Everything the kernel reuses from one call to the next.
struct AttentionWorkspace {
  explicit AttentionWorkspace(int n_threads) : threads(size_t(n_threads)) {}
  std::vector<AttentionScratch> threads;  // one per pool thread
  SplitKeysScratch split;
};

// The step's work items, written into `items` (whose capacity the caller
// reserved: at most n_tokens / kQueryTile + n_seqs tiles per KV head).
void plan_attention_items(const AttentionBatch& batch, int n_kv_heads, std::vector<AttentionWorkItem>& items);

// Runs planned work items. q and out: [n_tokens][n_heads][head_dim], f32.
// Query heads read KV heads as params' QueryGroups give (grouped-query attention). `isa`
// picks the kernel build; every build gives the same bits, and so does any
// split of the work among threads. `workspace` holds one scratch per pool thread.
void run_attention_items(const std::vector<AttentionWorkItem>& items, const float* q, int n_heads, const PagedKv& kv,
                         const AttentionBatch& batch, const AttentionParams& params, float* out, ThreadPool& pool,
                         const IsaFeatures& isa, AttentionWorkspace& workspace);

// Plans and runs in one call (tests and one-off uses).
// q and out: [n_tokens][n_heads][head_dim], f32. Query heads read KV heads
// as params' QueryGroups give (grouped-query attention).
// `isa` picks the kernel build; every build gives the same bits.
void flex_attention(const float* q, int n_heads, const PagedKv& kv, const AttentionBatch& batch,
                    const AttentionParams& params, float* out, ThreadPool& pool, const IsaFeatures& isa);

}  // namespace tessera::cpu
