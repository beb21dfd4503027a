#pragma once
// The request bodies of the HTTP routes that take one, declared as
// BodySchemas: the handlers read their fields through these, and
// /openapi.json publishes them. Bounds that depend on the server's limits
// are taken from them.
#include "server/serving/body_schema.h"
#include "server/serving/generation_request.h"

namespace tessera {

// Inputs one embeddings request may carry (the model's queue bounds what runs).
constexpr size_t kMaxEmbeddingInputs = 256;
// Keys a Responses request's metadata may hold.
constexpr size_t kMaxResponseMetadataKeys = 16;

struct RouteBodies {
  explicit RouteBodies(const ApiLimits& limits);

  BodySchema completions;      // POST /v1/completions
  BodySchema chat_completions; // POST /v1/chat/completions
  BodySchema responses;        // POST /v1/responses
  BodySchema messages;         // POST /v1/messages
  BodySchema count_tokens;     // POST /v1/messages/count_tokens
  BodySchema embeddings;       // POST /v1/embeddings
  BodySchema tokenize;         // POST /tokenize
  BodySchema detokenize;       // POST /detokenize
};

// The OpenAI tool fields (tools, tool_choice, parallel_tool_calls) that the
// Responses, Anthropic and gRPC front ends translate their own into.
const BodySchema& tool_fields_body();

}  // namespace tessera
