#pragma once
// What a chat request asks of tools (tools, tool_choice,
// parallel_tool_calls), read the same way for HTTP and gRPC.
#include <optional>
#include <string>
#include <vector>

#include "server/serving/request_fields.h"
#include "server/serving/served_model.h"
#include "server/serving/structured_output.h"

namespace tessera {

// The definitions the template shows the model (null: none), whether its
// output is read for calls, and the grammar that forces a call.
struct ToolRequest {
  Json tools;
  std::vector<std::string> names;  // of the offered functions
  bool parse = false;
  bool parallel = true;
  std::optional<StructuredOutput> forced;  // tool_choice "required" or named: the grammar of a call
};

// 400 naming the field for malformed tools or choices, a model whose
// template has no tool-call format, or a choice naming no offered tool.
ToolRequest read_tool_request(RequestFields& f, const ServedModel& model);

}  // namespace tessera
