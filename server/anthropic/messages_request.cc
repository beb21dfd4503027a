#include "server/anthropic/messages_request.h"

#include <limits>

namespace tessera {
namespace {

// The text of a list of text blocks; 400 for a block of any other kind.
std::string text_of_blocks(const Json& blocks, const std::string& param) {
  std::string text;
  for (const Json& b : blocks) {
    const std::string type = b.is_object() && b.contains("type") && b["type"].is_string() ? b["type"].get<std::string>() : "";
    if (type != "text" || !b.contains("text") || !b["text"].is_string()) {
      throw ApiError::invalid("'" + param + "' may hold only text blocks here, not '" + clip_echo(type) + "'", param);
    }
    text += b["text"].get<std::string>();
  }
  return text;
}

std::string block_type(const Json& block, const std::string& param) {
  if (!block.is_object() || !block.contains("type") || !block["type"].is_string()) {
    throw ApiError::invalid("each block of '" + param + "' must be an object with a 'type'", param);
  }
  return block["type"].get<std::string>();
}

// A tool_result block's content: a string or text blocks.
std::string tool_result_text(const Json& block, const std::string& param) {
  if (!block.contains("tool_use_id") || !block["tool_use_id"].is_string()) {
    throw ApiError::invalid("a tool_result block needs 'tool_use_id'", param);
  }
  const Json content = block.value("content", Json(""));
  if (content.is_string()) return content.get<std::string>();
  if (content.is_array()) return text_of_blocks(content, param);
  throw ApiError::invalid("a tool_result block's 'content' must be a string or text blocks", param);
}

// One Anthropic message as OpenAI chat messages: a user turn's tool results
// come first as role "tool" messages, then its text.
void add_message(const Json& m, size_t index, Json& out) {
  const std::string param = "messages[" + std::to_string(index) + "]";
  if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) throw ApiError::invalid("'" + param + "' needs a 'role'", param);
  const std::string role = m["role"].get<std::string>();
  if (role != "user" && role != "assistant") throw ApiError::invalid("'" + param + ".role' must be user or assistant", param);
  const Json content = m.value("content", Json());
  if (content.is_string()) {
    out.push_back({{"role", role}, {"content", content}});
    return;
  }
  if (!content.is_array()) throw ApiError::invalid("'" + param + ".content' must be a string or an array of blocks", param);
  std::string text;
  Json calls = Json::array();
  bool had_results = false;
  for (const Json& block : content) {
    const std::string type = block_type(block, param);
    if (type == "text" && block.contains("text") && block["text"].is_string()) {
      text += block["text"].get<std::string>();
    } else if (type == "tool_result" && role == "user") {
      // Read first: it checks the block has the id the message names.
      std::string result = tool_result_text(block, param);
      out.push_back({{"role", "tool"}, {"tool_call_id", block["tool_use_id"]}, {"content", std::move(result)}});
      had_results = true;
    } else if (type == "tool_use" && role == "assistant") {
      if (!block.contains("id") || !block["id"].is_string() || !block.contains("name") || !block["name"].is_string()) {
        throw ApiError::invalid("a tool_use block needs 'id' and 'name'", param);
      }
      const Json input = block.value("input", Json::object());
      if (!input.is_object()) throw ApiError::invalid("a tool_use block's 'input' must be an object", param);
      calls.push_back({{"id", block["id"]}, {"type", "function"},
                       {"function", {{"name", block["name"]}, {"arguments", input.dump()}}}});
    } else if ((type == "thinking" || type == "redacted_thinking") && role == "assistant") {
      continue;  // a past turn's reasoning is not shown to the template
    } else {
      throw ApiError::invalid("'" + param + "' holds a '" + clip_echo(type) + "' block; only text, tool_use and tool_result "
                              "blocks are available", param);
    }
  }
  if (had_results && text.empty()) return;  // a turn of tool results only
  Json message = {{"role", role}, {"content", text}};
  if (!calls.empty()) {
    message["content"] = text.empty() ? Json() : Json(text);
    message["tool_calls"] = std::move(calls);
  }
  out.push_back(std::move(message));
}

// Anthropic tools {name, description, input_schema} as OpenAI function tools.
Json openai_tools(const Json& tools) {
  if (!tools.is_array()) throw ApiError::invalid("'tools' must be an array", "tools");
  Json out = Json::array();
  for (const Json& t : tools) {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) throw ApiError::invalid("each tool needs a 'name'", "tools");
    if (t.contains("type") && t["type"] != "custom") {
      throw ApiError::invalid("tool '" + clip_echo(t["name"].get<std::string>()) + "': only client tools (with input_schema) are available", "tools");
    }
    Json fn = {{"name", t["name"]}, {"parameters", t.value("input_schema", Json::object())}};
    if (t.contains("description")) fn["description"] = t["description"];
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

// Anthropic tool_choice {type: auto|any|tool|none, name, disable_parallel_tool_use}.
void add_tool_choice(const Json& choice, Json& fields) {
  const std::string type = choice.is_object() && choice.contains("type") && choice["type"].is_string() ? choice["type"].get<std::string>() : "";
  if (type == "auto") fields["tool_choice"] = "auto";
  else if (type == "any") fields["tool_choice"] = "required";
  else if (type == "none") fields["tool_choice"] = "none";
  else if (type == "tool" && choice.contains("name") && choice["name"].is_string())
    fields["tool_choice"] = {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
  else throw ApiError::invalid("'tool_choice' must be {\"type\": \"auto\" | \"any\" | \"none\"} or {\"type\": \"tool\", \"name\": ...}", "tool_choice");
  if (const auto no_parallel = choice.find("disable_parallel_tool_use"); no_parallel != choice.end()) {
    if (!no_parallel->is_boolean()) throw ApiError::invalid("'tool_choice.disable_parallel_tool_use' must be true or false", "tool_choice");
    fields["parallel_tool_calls"] = !no_parallel->get<bool>();
  }
}

void read_system(RequestFields& f, Json& messages) {
  const Json* system = f.raw("system");
  if (!system) return;
  if (system->is_string()) messages.push_back({{"role", "system"}, {"content", *system}});
  else if (system->is_array()) messages.push_back({{"role", "system"}, {"content", text_of_blocks(*system, "system")}});
  else throw ApiError::invalid("'system' must be a string or text blocks", "system");
}

void read_sampling(RequestFields& f, MessagesRequest& r) {
  r.generation.max_tokens = f.integer("max_tokens");
  if (!r.generation.max_tokens) throw ApiError::invalid("'max_tokens' is required", "max_tokens");
  r.generation.temperature = f.number("temperature");
  r.generation.top_p = f.number("top_p");
  r.generation.top_k = f.integer("top_k");
  r.generation.stop = f.strings("stop_sequences");
  r.stream = f.boolean("stream").value_or(false);
  for (const char* key : {"metadata", "service_tier"}) f.ignore(key);  // change nothing here
}

}  // namespace

MessagesRequest read_messages_request(RequestFields& f, bool for_counting) {
  MessagesRequest r;
  r.model = f.string("model").value_or("");
  read_system(f, r.messages);
  const Json* messages = f.raw("messages");
  if (!messages || !messages->is_array() || messages->empty()) throw ApiError::invalid("'messages' must be a non-empty array", "messages");
  for (size_t i = 0; i < messages->size(); ++i) add_message((*messages)[i], i, r.messages);
  if (const Json* tools = f.raw("tools")) r.tool_fields["tools"] = openai_tools(*tools);
  if (const Json* choice = f.raw("tool_choice")) add_tool_choice(*choice, r.tool_fields);
  if (const Json* thinking = f.raw("thinking")) {
    if (!thinking->is_object() || thinking->value("type", Json()) != "disabled") {
      throw ApiError::invalid("extended thinking is not available; send {\"type\": \"disabled\"} or leave 'thinking' out", "thinking");
    }
  }
  if (!for_counting) read_sampling(f, r);
  f.finish();
  return r;
}

}  // namespace tessera
