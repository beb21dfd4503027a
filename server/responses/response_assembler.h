#pragma once
// One Responses answer built from the model's text and tool calls as they
// complete: output items (a message with output_text, function_call items)
// and, for a stream, the typed events announcing each, numbered in order
// (response.created ... response.completed).
#include <string>

#include "server/http/http_server.h"
#include "server/serving/request_fields.h"
#include "server/serving/chat_answer.h"

namespace tessera {

class ResponseAssembler : public ChatAnswerSink {
 public:
  // `skeleton`: the response object without output, status or usage (id,
  // model, created_at, the request's settings); `stream`: where events go,
  // or null for a whole answer.
  ResponseAssembler(Json skeleton, HttpExchange* stream) : response_(std::move(skeleton)), stream_(stream) {}

  // Each returns false once the client is gone.
  bool start();  // response.created, response.in_progress
  bool add_text(const std::string& text) override;
  bool add_call(const ToolCall& call) override;
  // "stop" or "length"; a Responses answer does not name its stop string.
  void set_finish(const std::string& finish_reason, const std::string&) override { finish_reason_ = finish_reason; }

  // The answer with its output, status and usage; for a stream, the last
  // events are sent too (the open message closed, response.completed or
  // response.incomplete) and the stream ends.
  Json finish(const Json& usage);
  // A failed generation: response.failed for a stream, then its end.
  void fail(const std::string& message);
  // The answer's text and calls as chat messages, for a follow-up request.
  Json as_chat_messages() const;

 private:
  bool event(const std::string& type, Json data);
  bool close_message();
  Json snapshot(const std::string& status) const;

  Json response_;
  HttpExchange* stream_;
  Json output_ = Json::array();
  bool message_open_ = false;
  bool has_calls_ = false;
  std::string finish_reason_ = "stop";
  int sequence_ = 0;
};

}  // namespace tessera
