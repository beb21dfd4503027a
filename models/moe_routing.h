#pragma once
// Routing of a mixture-of-experts layer, on the host: each token's top_k
// experts from its router scores, and the step's tokens grouped by expert so
// that each expert runs once over all of its tokens.
#include <cstdint>
#include <vector>

#include "models/decoder_spec.h"

namespace tessera {

// The assignments of one step, grouped by expert: expert e's tokens are
// rows[offsets[e] .. offsets[e + 1]), ascending, with their weights.
struct ExpertRoutes {
  std::vector<int32_t> rows;     // (n_tokens * top_k): token indices
  std::vector<float> weights;    // (n_tokens * top_k): the router's weight of that expert for that token
  std::vector<int32_t> offsets;  // (n_experts + 1)
  // Workspace of route_tokens, kept between steps so routing allocates nothing.
  std::vector<int32_t> order, chosen, next;
  std::vector<float> chosen_weights;
};

// Softmax over each token's scores (n_tokens, n_experts); the top_k
// experts by score (ties to the lower index; a NaN score ranks last), weighted by their
// probabilities, rescaled to sum to 1 where moe.normalize_weights says so.
// A token's choice and weights depend on its own scores only.
void route_tokens(const float* scores, int n_tokens, const MoeSpec& moe, ExpertRoutes* routes);

}  // namespace tessera
