#pragma once
// The end of an OpenAI server-sent event stream, shared by completions and
// chat: an error event if a choice failed, the final chunk (no choices, with
// usage), then `data: [DONE]`.
#include <chrono>
#include <string>

#include "server/http/http_server.h"
#include "server/serving/request_fields.h"

namespace tessera {

void end_event_stream(HttpExchange& exchange, const std::string& error, Json final_chunk, Json usage);

// Whether the client of an event stream is gone. A client that shut down its
// sending side has either closed the connection or only half-closed it; an
// SSE comment (which clients ignore) tells them apart, since a closed socket
// answers it with a reset. At most one probe a second.
class StreamClientWatch {
 public:
  explicit StreamClientWatch(HttpExchange& exchange) : exchange_(exchange) {}
  bool gone();

 private:
  HttpExchange& exchange_;
  std::chrono::steady_clock::time_point last_probe_{};
};

}  // namespace tessera
