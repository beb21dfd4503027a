#include "models/tensor_shard.h"

#include <algorithm>

#include "engine/core/error.h"

namespace tessera {

namespace {

// `total` channels in units of `unit` over `parts`, the first parts one unit larger.
ChannelSplit split_even(int total, int unit, int parts) {
  ChannelSplit s;
  s.unit = unit;
  const int units = total / unit, base = units / parts, extra = units % parts;
  for (int i = 0; i < parts; ++i) {
    s.first.push_back((i * base + std::min(i, extra)) * unit);
    s.count.push_back((base + (i < extra ? 1 : 0)) * unit);
  }
  return s;
}

// The largest of 32 and 1 that divides `n`: gathers move whole rows of it.
int gather_unit(int n) { return n % 32 == 0 ? 32 : 1; }

}  // namespace

int ChannelSplit::total() const {
  int t = 0;
  for (int c : count) t += c;
  return t;
}

int ChannelSplit::largest() const { return count.empty() ? 0 : *std::max_element(count.begin(), count.end()); }

TensorShard plan_tensor_shard(const DecoderSpec& spec, int rank, int world, TensorParallelLayout layout, int ffn_alignment,
                              const std::string& source) {
  if (world < 1 || rank < 0 || rank >= world) {
    throw Error("tensor parallelism: rank " + std::to_string(rank) + " outside a group of " + std::to_string(world));
  }
  TensorShard s;
  s.rank = rank;
  s.world = world;
  s.layout = layout;
  // Query heads go out evenly, in whole heads; each rank keeps the KV heads
  // its query heads read, so a KV head whose group the split cuts through
  // (SmolLM2's 9 query heads over 3 KV heads: 5 and 4) is kept, and
  // written, by both ranks it serves.
  const int hd = spec.head_dim;
  if (spec.n_heads < world) {
    throw Error(source + ": " + std::to_string(spec.n_heads) + " query heads do not split over " + std::to_string(world) +
                " ranks");
  }
  s.query_group = spec.n_heads / spec.n_kv_heads;
  s.q = split_even(spec.n_heads * hd, hd, world);
  const int first_head = s.first(s.q) / hd, last_head = first_head + s.count(s.q) / hd - 1;
  s.kv_head_first = first_head / s.query_group;
  s.kv_heads = last_head / s.query_group - s.kv_head_first + 1;
  const int align = layout == TensorParallelLayout::kExact ? gather_unit(spec.ffn_dim) : std::max(ffn_alignment, 1);
  if (spec.ffn_dim % align != 0 || spec.ffn_dim / align < world) {
    throw Error(source + ": an FFN of " + std::to_string(spec.ffn_dim) + " channels does not split over " +
                std::to_string(world) + " ranks in blocks of " + std::to_string(align));
  }
  s.ffn = split_even(spec.ffn_dim, align, world);
  s.model = split_even(spec.d_model, gather_unit(spec.d_model), world);
  if (spec.vocab_size % world != 0) {
    throw Error(source + ": a vocabulary of " + std::to_string(spec.vocab_size) + " does not split evenly over " +
                std::to_string(world) + " ranks");
  }
  s.vocab = split_even(spec.vocab_size, spec.vocab_size / world, world);
  return s;
}

DecoderSpec rank_spec(const DecoderSpec& spec, const TensorShard& shard) {
  if (!shard.sharded()) return spec;
  DecoderSpec local = spec;
  local.n_heads = shard.count(shard.q) / spec.head_dim;
  local.n_kv_heads = shard.kv_heads;
  local.ffn_dim = shard.count(shard.ffn);
  return local;
}

}  // namespace tessera
