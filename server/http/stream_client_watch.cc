#include "server/http/stream_client_watch.h"

namespace tessera {

bool StreamClientWatch::gone() {
  if (exchange_.client_gone()) return true;
  if (!exchange_.peer_done_sending()) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_probe_ < std::chrono::seconds(1)) return false;
  last_probe_ = now;
  return !exchange_.write_chunk(": still there?\n\n");
}

}  // namespace tessera
