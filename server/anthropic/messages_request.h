#pragma once
// An Anthropic Messages request (POST /v1/messages, /v1/messages/count_tokens)
// read into what the chat pipeline takes: the conversation as OpenAI-shaped
// chat messages for the template (system first, tool_use blocks as assistant
// tool_calls, tool_result blocks as role "tool" messages), the tools as
// OpenAI function tools, the tool choice, and the sampling fields.
#include "server/serving/generation_request.h"
#include "server/serving/request_fields.h"

namespace tessera {

struct MessagesRequest {
  std::string model;
  Json messages = Json::array();  // OpenAI chat messages
  // {"tools", "tool_choice", "parallel_tool_calls"} as an OpenAI request
  // names them, for read_tool_request.
  Json tool_fields = Json::object();
  GenerationRequest generation;
  bool stream = false;
};

// 400 naming the field for anything malformed or not available here (image
// and document blocks, extended thinking). `for_counting`: the fields of
// count_tokens only (no max_tokens, sampling or stream).
MessagesRequest read_messages_request(RequestFields& f, bool for_counting);

}  // namespace tessera
