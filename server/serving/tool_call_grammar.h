#pragma once
// The grammar that makes a model call a tool (tool_choice "required" or a
// named function): one call in the model's format, or several when parallel
// calls are allowed, each naming an offered function and giving arguments
// valid against that function's parameter schema.
#include <string>

#include "server/serving/tool_calls.h"
#include "server/serving/bounded_json.h"

namespace tessera {

// `tools`: the request's checked tool definitions to choose from.
// Throws ApiError (400 naming tools) when a parameter schema cannot be lowered.
std::string tool_call_gbnf(const Json& tools, bool parallel, ToolCallFormat format);

}  // namespace tessera
