#pragma once
// A step's batch metadata at fixed device addresses: flattened token ids,
// positions, KV slots, the CSR page table and the rows whose logits are
// wanted. Laid out once for the largest batch; each step fills host staging
// arrays (reserved to the same sizes) and copies them over.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/runtime/parallel/context_split.h"
#include "kernels/backend.h"
#include "kernels/workspace.h"
#include "models/decoder.h"

namespace tessera {

// One sequence's part of a step, as the batch builder needs it.
struct BatchSequence {
  const int32_t* tokens;       // (n_tokens) ids
  int32_t n_tokens;
  int32_t start_position;
  const int32_t* pages;        // the sequence's page table, covering start_position + n_tokens
  bool all_logits;             // every token's logits
  bool last_logits;            // the last token's logits
  bool all_hidden = false;     // every token's final hidden state (embeddings)
  bool last_hidden = false;    // the last token's
  // Only these tokens, when not empty (a rank's share of a split prefill):
  // their queries still see every key before them.
  std::span<const TokenRange> ranges = {};
};

class BatchBuffers {
 public:
  BatchBuffers(Backend& backend, const DecoderCapacity& capacity, int max_pages_per_seq);

  // Fills the buffers; throws tessera::Error when the step exceeds the capacity.
  ForwardBatch fill(const std::vector<BatchSequence>& seqs, int page_size, Stream& stream);

 private:
  struct Arrays {
    std::vector<int32_t> token_ids, positions, query_start, kv_len, page_indptr, page_indices, logit_rows, hidden_rows;
    std::vector<int64_t> slots;
    void clear();
  };

  Backend& backend_;
  DecoderCapacity capacity_;
  size_t max_page_indices_;
  Arrays host_;
  Workspace device_;
  Workspace::Region token_ids_, positions_, slots_, query_start_, kv_len_, page_indptr_, page_indices_, logit_rows_, hidden_rows_;
};

}  // namespace tessera
