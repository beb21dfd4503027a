#pragma once
// POST /v1/chat/completions: messages through the model's chat template.
#include "server/http/http_server.h"
#include "server/serving/api_context.h"
#include "server/serving/request_fields.h"

namespace tessera {

void handle_chat_completions(const ApiContext& api, const Json& body, HttpExchange& exchange);

}  // namespace tessera
