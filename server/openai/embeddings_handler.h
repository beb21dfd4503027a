#pragma once
// POST /v1/embeddings (OpenAI): `input` as a text, a list of texts, token
// ids or lists of token ids; `encoding_format` float or base64 (the
// little-endian float32 bytes); `dimensions` only as the model's width.
#include "server/http/http_server.h"
#include "server/serving/api_context.h"

namespace tessera {

void handle_embeddings(const ApiContext& api, const Json& body, HttpExchange& exchange);

}  // namespace tessera
