#pragma once
// The end of an OpenAI server-sent event stream, shared by completions and
// chat: an error event if a choice failed, the final chunk (no choices, with
// usage) when asked for, then `data: [DONE]`.
#include <string>

#include "server/http/http_server.h"
#include "server/http/stream_client_watch.h"
#include "server/serving/request_fields.h"

namespace tessera {

// `stream_options`: usage comes in a last chunk (no choices) only with
// include_usage, as OpenAI sends it, and in every chunk too with vLLM's
// continuous_usage_stats.
struct StreamOptions {
  bool include_usage = false;
  bool continuous_usage = false;
};
StreamOptions read_stream_options(RequestFields& fields);

void end_event_stream(HttpExchange& exchange, const std::string& error, Json final_chunk, Json usage,
                      const StreamOptions& options);

}  // namespace tessera
