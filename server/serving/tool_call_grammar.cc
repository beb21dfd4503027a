#include "server/serving/tool_call_grammar.h"

#include "engine/grammar/gbnf_text.h"
#include "engine/grammar/grammar.h"
#include "engine/grammar/json_schema_to_gbnf.h"
#include "server/serving/api_error.h"

namespace tessera {

std::string tool_call_gbnf(const Json& tools, bool parallel, ToolCallFormat format) {
  std::string rules, calls;
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& function = tools[i]["function"];
    const std::string name = function["name"].get<std::string>();
    const std::string args = "tool" + std::to_string(i) + "-args";
    const Json* parameters = function.contains("parameters") ? &function["parameters"] : nullptr;
    try {
      rules += parameters && !parameters->is_null() ? grammar::json_schema_rules(*parameters, args)
                                                    : args + " ::= json-object\n";
    } catch (const grammar::GrammarError& e) {
      throw ApiError::invalid("the parameters of tool '" + name + "': " + e.what(), "tools");
    }
    // The text the templates teach: the name first, then the arguments.
    const char* key = format == ToolCallFormat::kLlamaJson ? "parameters" : "arguments";
    const std::string head = "{\"name\": " + Json(name).dump() + ", \"" + key + "\": ";
    calls += (calls.empty() ? "" : " | ") + grammar::gbnf_literal(head) + " " + args + " \"}\"";
  }
  std::string g;
  switch (format) {
    case ToolCallFormat::kMistral:
      g = "root ::= \"[TOOL_CALLS][\" call" + std::string(parallel ? " ( \", \" call )*" : "") + " \"]\"\n";
      g += "call ::= " + calls + "\n";
      break;
    case ToolCallFormat::kLlamaJson:
      g = "root ::= call" + std::string(parallel ? " ( \"\\n\" call )*" : "") + "\n";
      g += "call ::= " + calls + "\n";
      break;
    default:
      g = "root ::= call" + std::string(parallel ? " ( \"\\n\" call )*" : "") + "\n";
      g += "call ::= \"<tool_call>\\n\" ( " + calls + " ) \"\\n</tool_call>\"\n";
  }
  return g + rules + grammar::json_value_rules();
}

}  // namespace tessera
