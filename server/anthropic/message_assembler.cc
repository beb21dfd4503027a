#include "server/anthropic/message_assembler.h"

#include "server/serving/bounded_json.h"
#include "server/serving/generation_driver.h"

namespace tessera {

bool MessageAssembler::event(const std::string& type, const Json& data) {
  if (!stream_) return true;
  return stream_->write_chunk("event: " + type + "\ndata: " + json_text(data) + "\n\n");
}

bool MessageAssembler::start(int input_tokens) {
  const Json message = {{"id", id_}, {"type", "message"}, {"role", "assistant"}, {"model", model_}, {"content", Json::array()},
                        {"stop_reason", nullptr}, {"stop_sequence", nullptr},
                        {"usage", {{"input_tokens", input_tokens}, {"output_tokens", 0}}}};
  return event("message_start", {{"type", "message_start"}, {"message", message}}) && event("ping", {{"type", "ping"}});
}

bool MessageAssembler::add_text(const std::string& text) {
  if (text.empty()) return true;
  if (!text_open_) {
    // Blank text between calls is the model's line breaks, not content.
    if (has_calls_ && text.find_first_not_of(" \t\r\n") == std::string::npos) return true;
    content_.push_back({{"type", "text"}, {"text", ""}});
    text_open_ = true;
    if (!event("content_block_start", {{"type", "content_block_start"}, {"index", content_.size() - 1},
                                       {"content_block", {{"type", "text"}, {"text", ""}}}})) {
      return false;
    }
  }
  content_.back()["text"] = content_.back()["text"].get<std::string>() + text;
  return event("content_block_delta", {{"type", "content_block_delta"}, {"index", content_.size() - 1},
                                       {"delta", {{"type", "text_delta"}, {"text", text}}}});
}

bool MessageAssembler::close_text_block() {
  if (!text_open_) return true;
  text_open_ = false;
  return event("content_block_stop", {{"type", "content_block_stop"}, {"index", content_.size() - 1}});
}

bool MessageAssembler::add_call(const ToolCall& call) {
  if (!close_text_block()) return false;
  has_calls_ = true;
  // Anthropic's ids read "toolu_…"; the rest is the call's own random id.
  const std::string id = "toolu_" + call.id.substr(call.id.find('_') + 1);
  Json input = parse_bounded_json(call.arguments, JsonLimits{});
  content_.push_back({{"type", "tool_use"}, {"id", id}, {"name", call.name}, {"input", input}});
  const size_t index = content_.size() - 1;
  return event("content_block_start", {{"type", "content_block_start"}, {"index", index},
                                       {"content_block", {{"type", "tool_use"}, {"id", id}, {"name", call.name},
                                                          {"input", Json::object()}}}}) &&
         event("content_block_delta", {{"type", "content_block_delta"}, {"index", index},
                                       {"delta", {{"type", "input_json_delta"}, {"partial_json", call.arguments}}}}) &&
         event("content_block_stop", {{"type", "content_block_stop"}, {"index", index}});
}

void MessageAssembler::set_finish(const std::string& finish_reason, const std::string& stop_string) {
  finish_reason_ = finish_reason;
  stop_string_ = stop_string;
}

std::string MessageAssembler::stop_reason() const {
  if (has_calls_) return "tool_use";
  if (finish_reason_ == "length") return "max_tokens";
  return stop_string_.empty() ? "end_turn" : "stop_sequence";
}

void MessageAssembler::finish_stream(int output_tokens) {
  close_text_block();
  event("message_delta", {{"type", "message_delta"},
                          {"delta", {{"stop_reason", stop_reason()}, {"stop_sequence", stop_string_.empty() ? Json() : Json(stop_string_)}}},
                          {"usage", {{"output_tokens", output_tokens}}}});
  event("message_stop", {{"type", "message_stop"}});
  stream_->end_stream();
}

void MessageAssembler::fail(const Json& error) {
  event("error", error);
  stream_->end_stream();
}

Json MessageAssembler::whole(int input_tokens, int output_tokens, int cached_tokens) const {
  Json content = Json::array();
  for (const Json& block : content_) {
    // Beside calls, a text block of only line breaks says nothing.
    if (has_calls_ && block["type"] == "text" &&
        block["text"].get<std::string>().find_first_not_of(" \t\r\n") == std::string::npos) {
      continue;
    }
    content.push_back(block);
  }
  return {{"id", id_}, {"type", "message"}, {"role", "assistant"}, {"model", model_}, {"content", content},
          {"stop_reason", stop_reason()}, {"stop_sequence", stop_string_.empty() ? Json() : Json(stop_string_)},
          {"usage", {{"input_tokens", input_tokens}, {"output_tokens", output_tokens},
                     {"cache_creation_input_tokens", 0}, {"cache_read_input_tokens", cached_tokens}}}};
}

}  // namespace tessera
