#pragma once
// The end of an OpenAI server-sent event stream, shared by completions and
// chat: an error event if a choice failed, the final chunk (no choices, with
// usage), then `data: [DONE]`.
#include <string>

#include "server/http/http_server.h"
#include "server/openai/request_fields.h"

namespace tessera {

void end_event_stream(HttpExchange& exchange, const std::string& error, Json final_chunk, Json usage);

}  // namespace tessera
