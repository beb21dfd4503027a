#pragma once
// An OpenAI Responses request (POST /v1/responses) read into what the chat
// pipeline takes: the conversation as chat messages (instructions first,
// then the stored conversation a previous_response_id names, then `input`:
// message items, function_call items as assistant tool_calls and
// function_call_output items as role "tool" messages), the tools as chat
// function tools, text.format as a structured output, and the sampling fields.
#include <optional>
#include <string>

#include "server/serving/generation_request.h"
#include "server/serving/request_fields.h"

namespace tessera {

struct ResponsesRequest {
  std::string model;
  std::optional<std::string> instructions;
  Json input_messages = Json::array();  // chat messages from `input` alone
  // {"tools", "tool_choice", "parallel_tool_calls"} as a chat request names them.
  Json tool_fields = Json::object();
  Json tools_echo = Json::array();      // the tools as the request gave them, for the answer
  Json tool_choice_echo = "auto";        // and the tool choice
  Json text_format = {{"type", "text"}};
  GenerationRequest generation;
  std::optional<std::string> previous_response_id;
  bool store = true;
  bool stream = false;
  Json metadata = Json::object();
};

// 400 naming the field for anything malformed or not available here
// (non-text input parts, built-in tools, background mode).
ResponsesRequest read_responses_request(RequestFields& f);

}  // namespace tessera
