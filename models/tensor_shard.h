#pragma once
// One rank's part of a decoder under tensor parallelism. Q/K/V and gate/up
// are split by output rows, the embeddings and the output head by
// vocabulary rows (the lookups summed, the logits gathered). Query heads
// are dealt evenly and each rank keeps the KV heads they read: a KV head
// whose query heads fall on two ranks is kept by both. Uneven counts give
// the first ranks one more unit.
//
// O and down are split one of two ways:
//  - kExact: by output rows, behind an all-gather of their input, so every
//    dot product runs whole, in the order one rank runs it: the group's
//    logits are one rank's, bit for bit.
//  - kAllReduce (Megatron): by input columns, the partial outputs summed by
//    one all-reduce each. The split sums round differently from one rank's,
//    and int8-quantised activations amplify that over the layers.
#include <cstdint>
#include <string>
#include <vector>

#include "models/decoder_spec.h"

namespace tessera {

enum class TensorParallelLayout : uint8_t { kExact, kAllReduce };

// How one dimension's channels are dealt to the ranks, in whole units.
struct ChannelSplit {
  int unit = 1;
  std::vector<int> first;  // (world) first channel of each rank
  std::vector<int> count;  // (world) channels of each rank, multiples of unit
  int total() const;
  int largest() const;
};

struct TensorShard {
  int rank = 0;
  int world = 1;
  TensorParallelLayout layout = TensorParallelLayout::kExact;
  ChannelSplit q;      // query channels (heads × head_dim), in whole heads
  int kv_head_first = 0, kv_heads = 0;  // the KV heads this rank keeps
  int query_group = 1;                  // the model's query heads per KV head
  ChannelSplit ffn;    // FFN hidden channels
  ChannelSplit model;  // kExact: O and down output rows (d_model)
  ChannelSplit vocab;  // embedding and output-head rows

  bool sharded() const { return world > 1; }
  bool exact() const { return layout == TensorParallelLayout::kExact; }
  int first(const ChannelSplit& s) const { return s.first[size_t(rank)]; }
  int count(const ChannelSplit& s) const { return s.count[size_t(rank)]; }
  // Query heads of this rank's first KV head that earlier ranks hold.
  int query_head_offset(int head_dim) const { return first(q) / head_dim - kv_head_first * query_group; }
  // kAllReduce: row-parallel biases are added once, on the first rank.
  bool adds_row_parallel_bias() const { return rank == 0; }
};

// The shard of `rank` in a group of `world`. `ffn_alignment` (kAllReduce):
// FFN channels move between ranks in multiples of the down projection's
// block size. Throws tessera::Error naming `source` when the model does not split.
TensorShard plan_tensor_shard(const DecoderSpec& spec, int rank, int world, TensorParallelLayout layout, int ffn_alignment,
                              const std::string& source);

// The spec this rank's decoder runs: its heads and FFN width.
DecoderSpec rank_spec(const DecoderSpec& spec, const TensorShard& shard);

}  // namespace tessera
