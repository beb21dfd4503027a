#pragma once
// Which KV head each query head reads under grouped-query attention. One
// rank holds query heads [0, n_heads) and KV heads [0, n_kv_heads) of its
// own; when a tensor-parallel split cuts through a KV head's group, the
// rank's first KV head keeps only the last of its group's query heads, and
// its last KV head possibly only the first.
#include <algorithm>
#include <string>

#include "kernels/op_types.h"

namespace tessera::ops {

struct QueryGroups {
  int n_heads = 0;
  int group = 1;   // query heads per KV head in the whole model
  int offset = 0;  // query heads of KV head 0's group held before head 0

  int kv_head(int head) const { return (head + offset) / group; }
  // This rank's query heads that read `kv_head`: [first, end).
  int first(int kv_head) const { return std::max(0, kv_head * group - offset); }
  int end(int kv_head) const { return std::min(n_heads, (kv_head + 1) * group - offset); }
};

// The grouping `params` give n_heads over n_kv_heads; an empty `why`
// means it holds: every KV head has at least one query head.
inline QueryGroups query_groups(int n_heads, int n_kv_heads, const AttentionParams& params, std::string* why) {
  QueryGroups g;
  g.n_heads = n_heads;
  g.offset = params.query_head_offset;
  why->clear();
  if (n_heads <= 0 || n_kv_heads <= 0) {
    *why = "attention needs query and KV heads";
  } else if (params.query_group <= 0) {
    if (n_heads % n_kv_heads != 0 || g.offset != 0) *why = "query heads must be a multiple of KV heads";
    else g.group = n_heads / n_kv_heads;
  } else {
    g.group = params.query_group;
    if (g.offset < 0 || g.offset >= g.group || g.kv_head(n_heads - 1) != n_kv_heads - 1) {
      *why = std::to_string(n_heads) + " query heads in groups of " + std::to_string(g.group) + " from offset " +
             std::to_string(g.offset) + " do not read " + std::to_string(n_kv_heads) + " KV heads";
    }
  }
  return g;
}

}  // namespace tessera::ops
