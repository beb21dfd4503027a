#include "server/serving/chat_answer.h"

#include "server/serving/generation_driver.h"

namespace tessera {

bool drive_chat_answer(std::vector<std::unique_ptr<TextGeneration>>& generations, const ToolRequest& tools,
                       const std::function<bool()>& client_gone, ChatAnswerSink& sink, std::string& error) {
  ToolCallParser parser(tools.names, tools.parallel);
  return drive_generations(generations, client_gone, [&](size_t, const ChoiceUpdate& u) {
    if (!u.error.empty()) {
      error = u.error;
      return true;
    }
    for (const ToolCallPiece& p : output_pieces(parser, tools.parse, u.text, u.finish_reason.has_value())) {
      if (!(p.call ? sink.add_call(*p.call) : sink.add_text(p.text))) return false;
    }
    if (u.finish_reason) sink.set_finish(*u.finish_reason, u.stop_string);
    return true;
  });
}

}  // namespace tessera
