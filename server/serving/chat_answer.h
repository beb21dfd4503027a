#pragma once
// One chat answer driven to its end, for the protocols that ask for a single
// answer (Responses, Messages): each update's text, split into text and the
// tool calls the request's output is read for, is handed to the protocol's
// assembler as it completes.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/serving/text_generation.h"
#include "server/serving/tool_calls.h"
#include "server/serving/tool_request.h"

namespace tessera {

class ChatAnswerSink {
 public:
  virtual ~ChatAnswerSink() = default;
  // Each returns false once the client is gone.
  virtual bool add_text(const std::string& text) = 0;
  virtual bool add_call(const ToolCall& call) = 0;
  // How the generation ended ("stop" or "length") and the request's stop
  // string that ended it, if one did.
  virtual void set_finish(const std::string& finish_reason, const std::string& stop_string) = 0;
};

// True when the generation finished (`error` then holds its failure, if
// any); false when the client left.
bool drive_chat_answer(std::vector<std::unique_ptr<TextGeneration>>& generations, const ToolRequest& tools,
                       const std::function<bool()>& client_gone, ChatAnswerSink& sink, std::string& error);

}  // namespace tessera
