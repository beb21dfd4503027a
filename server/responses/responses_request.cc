#include "server/responses/responses_request.h"

#include <limits>
#include <string>

#include "server/serving/route_bodies.h"

namespace tessera {
namespace {

std::string item_type(const Json& item) {
  if (!item.is_object()) throw ApiError::invalid("each 'input' item must be an object", "input");
  if (item.contains("type") && item["type"].is_string()) return item["type"].get<std::string>();
  return item.contains("role") ? "message" : "";  // an EasyInputMessage leaves its type out
}

// A message item's content: a string, or input_text / output_text parts.
std::string message_text(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) throw ApiError::invalid("a message's 'content' must be a string or a list of text parts", "input");
  std::string text;
  for (const Json& part : content) {
    const std::string type = part.is_object() && part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
    if ((type != "input_text" && type != "output_text" && type != "text") || !part.contains("text") || !part["text"].is_string()) {
      throw ApiError::invalid("only text parts are available in 'input', not '" + clip_echo(type) + "'", "input");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

std::string required_string(const Json& item, const char* key, const std::string& what) {
  if (!item.contains(key) || !item[key].is_string()) throw ApiError::invalid(what + " needs '" + key + "' as a string", "input");
  return item[key].get<std::string>();
}

// `input` items as chat messages; consecutive function_call items become
// one assistant turn with several tool_calls.
Json chat_messages_of(const Json& input) {
  Json out = Json::array();
  if (input.is_string()) {
    out.push_back({{"role", "user"}, {"content", input}});
    return out;
  }
  if (!input.is_array()) throw ApiError::invalid("'input' must be a string or a list of items", "input");
  for (const Json& item : input) {
    const std::string type = item_type(item);
    if (type == "message") {
      std::string role = required_string(item, "role", "a message item");
      if (role == "developer") role = "system";
      if (role != "user" && role != "assistant" && role != "system") throw ApiError::invalid("a message's 'role' is not known", "input");
      out.push_back({{"role", role}, {"content", message_text(item.value("content", Json(""))) }});
    } else if (type == "function_call") {
      const std::string call_id = required_string(item, "call_id", "a function_call item");
      Json call = {{"id", call_id}, {"type", "function"},
                   {"function", {{"name", required_string(item, "name", "a function_call item")},
                                 {"arguments", required_string(item, "arguments", "a function_call item")}}}};
      if (out.empty() || out.back()["role"] != "assistant" || !out.back().contains("tool_calls")) {
        out.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array()}});
      }
      out.back()["tool_calls"].push_back(std::move(call));
    } else if (type == "function_call_output") {
      const std::string call_id = required_string(item, "call_id", "a function_call_output item");
      const Json output = item.value("output", Json(""));
      out.push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", output.is_string() ? output.get<std::string>() : message_text(output)}});
    } else if (type == "reasoning") {
      continue;  // a past turn's reasoning is not shown to the template
    } else {
      throw ApiError::invalid("'input' holds a '" + clip_echo(type) + "' item; message, function_call and function_call_output "
                              "items are available", "input");
    }
  }
  return out;
}

// Responses function tools {type, name, description, parameters, strict} as chat tools.
Json chat_tools_of(const Json& tools) {
  if (!tools.is_array()) throw ApiError::invalid("'tools' must be an array", "tools");
  Json out = Json::array();
  for (const Json& t : tools) {
    if (!t.is_object() || t.value("type", Json()) != "function") {
      throw ApiError::invalid("only function tools are available; built-in tools (web search, file search, ...) are not", "tools");
    }
    if (!t.contains("name") || !t["name"].is_string()) throw ApiError::invalid("each function tool needs a 'name'", "tools");
    Json fn = {{"name", t["name"]}};
    if (t.contains("description")) fn["description"] = t["description"];
    if (t.contains("parameters") && !t["parameters"].is_null()) fn["parameters"] = t["parameters"];
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

// tool_choice: "auto", "none", "required" or {"type": "function", "name"}.
Json chat_tool_choice_of(const Json& choice) {
  if (choice.is_string()) return choice;
  if (choice.is_object() && choice.value("type", Json()) == "function" && choice.contains("name") && choice["name"].is_string()) {
    return {{"type", "function"}, {"function", {{"name", choice["name"]}}}};
  }
  throw ApiError::invalid("'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\": ...}", "tool_choice");
}

// text.format: text, json_object, or json_schema {name, schema, strict}.
std::optional<StructuredOutput> structured_output_of(const Json& text, Json& echo) {
  if (!text.is_object()) throw ApiError::invalid("'text' must be an object", "text");
  for (const auto& [key, value] : text.items()) {
    if (key != "format" && key != "verbosity") throw ApiError::invalid("'text." + key + "' is not supported", "text");
  }
  if (!text.contains("format") || text["format"].is_null()) return std::nullopt;
  const Json& format = text["format"];
  // A "type" of another JSON type reads as none (value() would throw on it).
  const Json type_field = format.is_object() ? format.value("type", Json()) : Json();
  const std::string type = type_field.is_string() ? type_field.get<std::string>() : "";
  echo = format;
  StructuredOutput s;
  s.param = "text.format";
  if (type == "text") return std::nullopt;
  if (type == "json_object") return s;
  if (type != "json_schema" || !format.contains("schema")) {
    throw ApiError::invalid("'text.format' must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or "
                            "{\"type\": \"json_schema\", \"name\", \"schema\"}", "text.format");
  }
  s.kind = StructuredOutput::Kind::kJsonSchema;
  s.schema = format["schema"];
  return s;
}

void read_sampling(RequestFields& f, ResponsesRequest& r) {
  r.generation.max_tokens = f.integer("max_output_tokens");
  r.generation.temperature = f.number("temperature");
  r.generation.top_p = f.number("top_p");
  if (auto top = f.integer("top_logprobs"); top && *top > 0) {
    r.generation.logprobs = true;
    r.generation.top_logprobs = top;
  }
}

}  // namespace

ResponsesRequest read_responses_request(RequestFields& f) {
  ResponsesRequest r;
  r.model = f.string("model").value_or("");
  r.instructions = f.string("instructions");
  const Json* input = f.raw("input");
  if (!input) throw ApiError::invalid("'input' is required", "input");
  r.input_messages = chat_messages_of(*input);
  if (const Json* tools = f.raw("tools")) {
    r.tools_echo = *tools;
    r.tool_fields["tools"] = chat_tools_of(*tools);
  }
  if (const Json* choice = f.raw("tool_choice")) {
    r.tool_fields["tool_choice"] = chat_tool_choice_of(*choice);
    r.tool_choice_echo = *choice;
  }
  if (auto parallel = f.boolean("parallel_tool_calls")) r.tool_fields["parallel_tool_calls"] = *parallel;
  if (const Json* text = f.raw("text")) r.generation.structured = structured_output_of(*text, r.text_format);
  read_sampling(f, r);
  r.previous_response_id = f.string("previous_response_id");
  r.store = f.boolean("store").value_or(true);
  r.stream = f.boolean("stream").value_or(false);
  if (const Json* metadata = f.raw("metadata")) {
    if (!metadata->is_object() || metadata->size() > kMaxResponseMetadataKeys) {
      throw ApiError::invalid("'metadata' must be an object of at most " + std::to_string(kMaxResponseMetadataKeys) + " keys", "metadata");
    }
    r.metadata = *metadata;
  }
  if (f.boolean("background").value_or(false)) throw ApiError::invalid("background responses are not available", "background");
  if (const Json* reasoning = f.raw("reasoning"); reasoning && !reasoning->is_object()) {
    throw ApiError::invalid("'reasoning' must be an object", "reasoning");
  }
  if (auto truncation = f.string("truncation"); truncation && *truncation != "disabled") {
    throw ApiError::invalid("only 'truncation: disabled' is available: a conversation longer than the model is refused", "truncation");
  }
  // Fields that change nothing here (docs/serving-api.md lists them).
  for (const char* key : {"user", "service_tier", "prompt_cache_key", "safety_identifier", "include", "reasoning", "stream_options"}) {
    f.ignore(key);
  }
  f.finish();
  return r;
}

}  // namespace tessera
