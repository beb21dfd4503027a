#pragma once
// POST /v1/completions.
#include "server/http/http_server.h"
#include "server/serving/api_context.h"
#include "server/serving/request_fields.h"

namespace tessera {

void handle_completions(const ApiContext& api, const Json& body, HttpExchange& exchange);

}  // namespace tessera
