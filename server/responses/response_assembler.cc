#include "server/responses/response_assembler.h"

#include "server/serving/generation_driver.h"

namespace tessera {
namespace {

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

bool ResponseAssembler::event(const std::string& type, Json data) {
  if (!stream_) return true;
  Json e = {{"type", type}, {"sequence_number", sequence_++}};
  for (auto& [key, value] : data.items()) e[key] = std::move(value);
  return stream_->write_chunk("event: " + type + "\ndata: " + json_text(e) + "\n\n");
}

Json ResponseAssembler::snapshot(const std::string& status) const {
  Json r = response_;
  r["status"] = status;
  r["output"] = output_;
  return r;
}

bool ResponseAssembler::start() {
  return event("response.created", {{"response", snapshot("in_progress")}}) &&
         event("response.in_progress", {{"response", snapshot("in_progress")}});
}

bool ResponseAssembler::add_text(const std::string& text) {
  if (text.empty()) return true;
  const size_t index = output_.size() - (message_open_ ? 1 : 0);
  if (!message_open_) {
    // Blank text between calls is the model's line breaks, not content.
    if (has_calls_ && blank(text)) return true;
    const std::string id = new_response_id("msg_");
    output_.push_back({{"type", "message"}, {"id", id}, {"status", "in_progress"}, {"role", "assistant"},
                       {"content", Json::array({{{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}}})}});
    message_open_ = true;
    Json empty_message = output_.back();
    empty_message["content"] = Json::array();
    if (!event("response.output_item.added", {{"output_index", index}, {"item", empty_message}}) ||
        !event("response.content_part.added", {{"item_id", id}, {"output_index", index}, {"content_index", 0},
                                               {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}}}})) {
      return false;
    }
  }
  Json& part = output_[index]["content"][0];
  part["text"] = part["text"].get<std::string>() + text;
  return event("response.output_text.delta", {{"item_id", output_[index]["id"]}, {"output_index", index}, {"content_index", 0},
                                              {"delta", text}, {"logprobs", Json::array()}});
}

bool ResponseAssembler::close_message() {
  if (!message_open_) return true;
  message_open_ = false;
  const size_t index = output_.size() - 1;
  Json& item = output_[index];
  item["status"] = "completed";
  const Json part = item["content"][0];
  return event("response.output_text.done", {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0},
                                             {"text", part["text"]}, {"logprobs", Json::array()}}) &&
         event("response.content_part.done", {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0}, {"part", part}}) &&
         event("response.output_item.done", {{"output_index", index}, {"item", item}});
}

bool ResponseAssembler::add_call(const ToolCall& call) {
  if (!close_message()) return false;
  has_calls_ = true;
  const size_t index = output_.size();
  Json item = {{"type", "function_call"}, {"id", "fc_" + call.id.substr(call.id.find('_') + 1)}, {"call_id", call.id},
               {"name", call.name}, {"arguments", call.arguments}, {"status", "completed"}};
  output_.push_back(item);
  Json added = item;
  added["arguments"] = "";
  added["status"] = "in_progress";
  return event("response.output_item.added", {{"output_index", index}, {"item", added}}) &&
         event("response.function_call_arguments.delta", {{"item_id", item["id"]}, {"output_index", index}, {"delta", call.arguments}}) &&
         event("response.function_call_arguments.done", {{"item_id", item["id"]}, {"output_index", index}, {"arguments", call.arguments}}) &&
         event("response.output_item.done", {{"output_index", index}, {"item", item}});
}

Json ResponseAssembler::finish(const Json& usage) {
  close_message();
  if (has_calls_) {
    // Beside calls, a message of only line breaks says nothing.
    Json kept = Json::array();
    for (const Json& item : output_) {
      if (item["type"] == "message" && blank(item["content"][0]["text"].get<std::string>())) continue;
      kept.push_back(item);
    }
    output_ = std::move(kept);
  }
  const bool incomplete = finish_reason_ == "length" && !has_calls_;
  Json r = snapshot(incomplete ? "incomplete" : "completed");
  r["incomplete_details"] = incomplete ? Json{{"reason", "max_output_tokens"}} : Json();
  r["usage"] = usage;
  if (stream_) {
    event(incomplete ? "response.incomplete" : "response.completed", {{"response", r}});
    stream_->end_stream();
  }
  return r;
}

void ResponseAssembler::fail(const std::string& message) {
  Json r = snapshot("failed");
  r["error"] = {{"code", "server_error"}, {"message", message}};
  event("response.failed", {{"response", r}});
  stream_->end_stream();
}

Json ResponseAssembler::as_chat_messages() const {
  std::string text;
  Json calls = Json::array();
  for (const Json& item : output_) {
    if (item["type"] == "message") text += item["content"][0]["text"].get<std::string>();
    if (item["type"] == "function_call") {
      calls.push_back({{"id", item["call_id"]}, {"type", "function"},
                       {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}});
    }
  }
  Json message = {{"role", "assistant"}, {"content", text}};
  if (!calls.empty()) {
    message["content"] = text.empty() ? Json() : Json(text);
    message["tool_calls"] = std::move(calls);
  }
  return Json::array({std::move(message)});
}

}  // namespace tessera
