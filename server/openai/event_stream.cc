#include "server/openai/event_stream.h"

#include "server/serving/generation_driver.h"

namespace tessera {

StreamOptions read_stream_options(RequestFields& fields) {
  StreamOptions options;
  const Json* so = fields.raw("stream_options");
  if (!so) return options;
  if (!so->is_object()) throw ApiError::invalid("'stream_options' must be an object", "stream_options");
  for (const auto& [key, value] : so->items()) {
    if (value.is_null()) continue;
    if (!value.is_boolean()) throw ApiError::invalid("'stream_options." + key + "' must be true or false", "stream_options");
    if (key == "include_usage") {
      options.include_usage = value.get<bool>();
    } else if (key == "continuous_usage_stats") {
      options.continuous_usage = value.get<bool>();
    } else if (key != "include_obfuscation") {  // a padding field of OpenAI's; nothing to pad here
      throw ApiError::invalid("'stream_options." + key + "' is not supported", "stream_options");
    }
  }
  options.continuous_usage = options.continuous_usage && options.include_usage;
  return options;
}

void end_event_stream(HttpExchange& exchange, const std::string& error, Json final_chunk, Json usage,
                      const StreamOptions& options) {
  if (!error.empty()) exchange.write_chunk(sse_event(ApiError::from_generation(error).to_json()));
  if (options.include_usage) {
    final_chunk["usage"] = std::move(usage);
    exchange.write_chunk(sse_event(final_chunk));
  }
  exchange.write_chunk("data: [DONE]\n\n");
  exchange.end_stream();
}

}  // namespace tessera
