#pragma once
// A model's chat template: OpenAI-style messages in, the prompt text out,
// rendered as Hugging Face transformers renders it (messages, tools,
// add_generation_prompt, bos_token and eos_token in scope).
#include <nlohmann/json.hpp>
#include <string>

#include "server/chat/jinja_template.h"

namespace tessera {

struct ChatTemplateInput {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;                    // null when absent
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // chat_template_kwargs
  bool add_generation_prompt = true;
  std::string bos_token;
  std::string eos_token;
};

class ChatTemplate {
 public:
  // Throws jinja::TemplateError when the source does not parse.
  explicit ChatTemplate(const std::string& source);

  // Throws jinja::TemplateError for a template's raise_exception() and for
  // render faults; the message is meant for the client.
  std::string render(const ChatTemplateInput& input) const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  jinja::Template template_;
};

// Message content given as a list of parts becomes the text of its text
// parts joined by newlines, as vLLM passes it to string-content templates.
nlohmann::ordered_json normalize_messages(const nlohmann::ordered_json& messages);

}  // namespace tessera
