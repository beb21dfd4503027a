#include "server/openai/event_stream.h"

#include "server/serving/generation_driver.h"

namespace tessera {

void end_event_stream(HttpExchange& exchange, const std::string& error, Json final_chunk, Json usage) {
  if (!error.empty()) exchange.write_chunk(sse_event(ApiError::from_generation(error).to_json()));
  final_chunk["usage"] = std::move(usage);
  exchange.write_chunk(sse_event(final_chunk));
  exchange.write_chunk("data: [DONE]\n\n");
  exchange.end_stream();
}

bool StreamClientWatch::gone() {
  if (exchange_.client_gone()) return true;
  if (!exchange_.peer_done_sending()) return false;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_probe_ < std::chrono::seconds(1)) return false;
  last_probe_ = now;
  return !exchange_.write_chunk(": still there?\n\n");
}

}  // namespace tessera
