#include "server/serving/chat_prompt.h"

#include <set>

#include "server/chat/message_spans.h"
#include "server/serving/api_error.h"
#include "server/serving/generation_request.h"
#include "server/serving/control_text_guard.h"
#include "server/serving/tool_calls.h"

namespace tessera {
namespace {

void check_messages(const Json& messages) {
  if (!messages.is_array() || messages.empty()) throw ApiError::invalid("'messages' must be a non-empty array", "messages");
  static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
  for (const auto& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !kRoles.count(m["role"].get<std::string>())) {
      throw ApiError::invalid("each message needs a 'role' of system, developer, user, assistant or tool", "messages");
    }
    const auto content = m.find("content");
    if (content == m.end() || content->is_null() || content->is_string()) continue;
    if (!content->is_array()) throw ApiError::invalid("message 'content' must be a string or an array of parts", "messages");
    for (const auto& part : *content) {
      const auto type = part.is_object() ? part.find("type") : part.end();
      const auto text = part.is_object() ? part.find("text") : part.end();
      if (!part.is_object() || type == part.end() || *type != "text" || text == part.end() || !text->is_string()) {
        throw ApiError::invalid("only text content parts ({\"type\": \"text\", \"text\": ...}) are supported", "messages");
      }
    }
  }
}

// `messages`: normalised, with tool-call arguments as objects.
std::string render_chat_prompt(const ServedModel& model, const Json& messages, bool add_generation_prompt,
                               const Json& template_kwargs, const Json& tools) {
  if (!model.chat_template) {
    throw ApiError::invalid("the model '" + model.name() +
                                "' has no chat template; set chat_template in its configuration or use /v1/completions", "messages");
  }
  ChatTemplateInput in;
  in.messages = messages;
  in.tools = tools;
  in.extra = template_kwargs.is_object() ? template_kwargs : Json::object();
  in.add_generation_prompt = add_generation_prompt;
  const Vocab& vocab = model.tokenizer().vocab();
  if (vocab.bos != kNoToken) in.bos_token = model.tokenizer().token_bytes(vocab.bos, true);
  if (vocab.eos != kNoToken) in.eos_token = model.tokenizer().token_bytes(vocab.eos, true);
  try {
    return model.chat_template->render(in);
  } catch (const jinja::TemplateError& e) {
    throw ApiError::invalid(std::string("the chat template refused the messages: ") + e.what(), "messages");
  }
}

}  // namespace

std::vector<int32_t> chat_prompt_tokens(const ServedModel& model, const Json& messages, bool add_generation_prompt,
                                        const Json& template_kwargs, bool add_special, const Json& tools) {
  check_messages(messages);
  refuse_reserved_template_kwargs(template_kwargs);
  const Tokenizer& tokenizer = model.tokenizer();
  const ControlTextTest is_control = [&](std::string_view t) { return tokenizer.has_control_text(t); };
  // Arguments are read once, here; the check then sees the strings the
  // template will render (escapes in an arguments string decoded).
  const Json prepared = tool_arguments_as_objects(normalize_messages(messages));
  if (!model.config.parse_special_in_messages) {
    refuse_control_text_outside_content(prepared, is_control);
    refuse_control_text(tools, "tools", is_control);
    refuse_control_text(template_kwargs, "chat_template_kwargs", is_control);
  }
  const std::string text = render_chat_prompt(model, prepared, add_generation_prompt, template_kwargs, tools);
  check_prompt_bytes(model, text.size(), "messages");
  EncodeOptions options{.add_special = add_special, .parse_special = true};
  std::vector<ByteRange> plain;
  if (!model.config.parse_special_in_messages) {
    auto spans = protected_message_spans(text, messages, is_control);
    if (!spans) {
      throw ApiError::invalid("a message holds control-token text that the chat template rewrote, so it cannot be kept "
                              "as plain text; remove it (or set parse_special_in_messages for this model)", "messages");
    }
    plain = std::move(*spans);
    options.plain_ranges = &plain;
  }
  return tokenizer.encode(text, options);
}

}  // namespace tessera
