#include "server/openai/event_stream.h"

#include "server/openai/generation_driver.h"

namespace tessera {

void end_event_stream(HttpExchange& exchange, const std::string& error, Json final_chunk, Json usage) {
  if (!error.empty()) exchange.write_chunk(sse_event(ApiError(500, "server_error", error).to_json()));
  final_chunk["usage"] = std::move(usage);
  exchange.write_chunk(sse_event(final_chunk));
  exchange.write_chunk("data: [DONE]\n\n");
  exchange.end_stream();
}

}  // namespace tessera
