#pragma once
// Anthropic's Messages API over the chat pipeline: POST /v1/messages, whole
// or streamed with Anthropic's event types (message_start, content_block_*,
// message_delta, message_stop), and POST /v1/messages/count_tokens; errors
// in Anthropic's shape.
#include "server/http/http_server.h"
#include "server/serving/api_context.h"

namespace tessera {

void handle_messages(const ApiContext& api, const Json& body, HttpExchange& exchange);
void handle_count_tokens(const ApiContext& api, const Json& body, HttpExchange& exchange);

// {"type": "error", "error": {"type", "message"}}, Anthropic's error object.
Json anthropic_error_json(const ApiError& error);

// Whether a route answers in Anthropic's shapes.
bool is_anthropic_route(const std::string& path);

}  // namespace tessera
