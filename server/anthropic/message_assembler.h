#pragma once
// One Anthropic message built from the model's text and tool calls as they
// complete: content blocks (text, tool_use) and the stop reason, and, for a
// stream, the events that announce each piece as it is added.
#include <string>

#include "server/http/http_server.h"
#include "server/serving/request_fields.h"
#include "server/serving/chat_answer.h"

namespace tessera {

class MessageAssembler : public ChatAnswerSink {
 public:
  // `stream`: where events go, or null for a whole answer.
  MessageAssembler(std::string id, std::string model, HttpExchange* stream)
      : id_(std::move(id)), model_(std::move(model)), stream_(stream) {}

  // Each returns false once the client is gone.
  bool start(int input_tokens);  // message_start and a ping
  bool add_text(const std::string& text) override;
  bool add_call(const ToolCall& call) override;
  void set_finish(const std::string& finish_reason, const std::string& stop_string) override;

  // The last events of a stream: the open block closed, message_delta and message_stop.
  void finish_stream(int output_tokens);
  // An error event, then the end of the stream.
  void fail(const Json& error);
  // The whole message object.
  Json whole(int input_tokens, int output_tokens, int cached_tokens) const;

 private:
  bool event(const std::string& type, const Json& data);
  bool close_text_block();
  std::string stop_reason() const;

  std::string id_, model_;
  HttpExchange* stream_;
  Json content_ = Json::array();
  bool text_open_ = false;
  bool has_calls_ = false;
  std::string finish_reason_ = "stop", stop_string_;
};

}  // namespace tessera
