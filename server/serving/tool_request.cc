#include "server/serving/tool_request.h"

#include "server/serving/tool_call_grammar.h"
#include "server/serving/tool_calls.h"

namespace tessera {
namespace {

// A named choice, {"type": "function", "function": {"name": ...}}: its name.
std::string named_tool_choice(const Json& choice) {
  if (!choice.is_object() || choice.value("type", Json()) != "function" || !choice.contains("function") ||
      !choice["function"].is_object() || !choice["function"].contains("name") || !choice["function"]["name"].is_string()) {
    throw ApiError::invalid("tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                            "\"function\": {\"name\": ...}}", "tool_choice");
  }
  return choice["function"]["name"].get<std::string>();
}

}  // namespace

ToolRequest read_tool_request(RequestFields& f, const ServedModel& model) {
  ToolRequest t;
  const Json* tools = f.raw("tools");
  const Json* choice = f.raw("tool_choice");
  if (auto parallel = f.boolean("parallel_tool_calls")) t.parallel = *parallel;
  std::string mode = tools && tools->is_array() && !tools->empty() ? "auto" : "none";
  std::string named;
  if (choice) {
    if (choice->is_string()) {
      mode = choice->get<std::string>();
      if (mode != "auto" && mode != "none" && mode != "required") {
        throw ApiError::invalid("tool_choice must be \"none\", \"auto\", \"required\" or a named function", "tool_choice");
      }
    } else {
      named = named_tool_choice(*choice);
      mode = "named";
    }
  }
  if (!tools) {
    if (mode == "required" || mode == "named") throw ApiError::invalid("tool_choice " + mode + " needs 'tools'", "tool_choice");
    return t;
  }
  check_tools(*tools);
  if ((mode == "required" || mode == "named") && tools->empty()) {
    throw ApiError::invalid("tool_choice " + mode + " needs at least one tool", "tool_choice");
  }
  if (mode == "none" || tools->empty()) return t;  // the model is not offered them
  if (model.tool_format == ToolCallFormat::kNone) {
    throw ApiError::invalid("the model '" + model.name() + "' has a chat template without a tool-call format tessera reads "
                            "(Hermes/Qwen <tool_call>, Llama 3.1+ JSON, Mistral [TOOL_CALLS])", "tools");
  }
  t.tools = *tools;
  for (const auto& tool : *tools) t.names.push_back(tool["function"]["name"].get<std::string>());
  t.parse = true;
  if (mode == "required") {
    t.forced = StructuredOutput{StructuredOutput::Kind::kGrammar, {}, tool_call_gbnf(*tools, t.parallel, model.tool_format), {}, "tool_choice"};
  } else if (mode == "named") {
    Json only = Json::array();
    for (const auto& tool : *tools) {
      if (tool["function"]["name"] == named) only.push_back(tool);
    }
    if (only.empty()) throw ApiError::invalid("tool_choice names '" + named + "', which is not among the tools", "tool_choice");
    t.forced = StructuredOutput{StructuredOutput::Kind::kGrammar, {}, tool_call_gbnf(only, false, model.tool_format), {}, "tool_choice"};
  }
  return t;
}

}  // namespace tessera
