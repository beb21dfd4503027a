#include "server/chat/chat_template.h"

namespace tessera {

ChatTemplate::ChatTemplate(const std::string& source) : source_(source), template_(jinja::Template::parse(source)) {}

std::string ChatTemplate::render(const ChatTemplateInput& input) const {
  jinja::ValueDict globals;
  try {
    for (const auto& [k, v] : input.extra.items()) globals.set(k, jinja::Value::from_json(v));
    globals.set("messages", jinja::Value::from_json(input.messages));
    if (!input.tools.is_null()) globals.set("tools", jinja::Value::from_json(input.tools));
  } catch (const jinja::ValueTooLarge& e) {
    throw jinja::TemplateError(e.what());
  }
  globals.set("add_generation_prompt", jinja::Value::boolean(input.add_generation_prompt));
  globals.set("bos_token", jinja::Value::string(input.bos_token));
  globals.set("eos_token", jinja::Value::string(input.eos_token));
  return template_.render(globals);
}

nlohmann::ordered_json normalize_messages(const nlohmann::ordered_json& messages) {
  nlohmann::ordered_json out = messages;
  for (auto& m : out) {
    if (!m.is_object() || !m.contains("content") || !m["content"].is_array()) continue;
    std::string text;
    bool first = true;
    for (const auto& part : m["content"]) {
      if (!part.is_object() || part.value("type", nlohmann::ordered_json()) != "text" || !part.contains("text") || !part["text"].is_string()) continue;
      if (!first) text += "\n";
      text += part["text"].get<std::string>();
      first = false;
    }
    m["content"] = text;
  }
  return out;
}

}  // namespace tessera
