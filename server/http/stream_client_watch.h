#pragma once
// How a long answer's writer learns, cheaply, that its client left.
#include <chrono>

#include "server/http/http_server.h"

namespace tessera {

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
