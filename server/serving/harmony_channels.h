#pragma once
// gpt-oss's output in the harmony format, split as it streams: each message
// is `<|channel|>NAME<|message|>BODY` closed by <|end|>, <|return|> or
// <|call|>, messages after the first prefixed by `<|start|>assistant`. The
// analysis channel's bodies are the reasoning; the final (and commentary)
// channels' bodies the answer; the markers belong to neither. Text outside
// any message (a model that does not write harmony) is answer. A marker
// split across pieces is held back until it resolves.
#include <string>

#include "server/serving/reasoning_parser.h"

namespace tessera {

class HarmonyChannels {
 public:
  ReasoningSplit feed(const std::string& text);
  ReasoningSplit finish();

 private:
  enum class State { kOutside, kHeader, kAnalysis, kAnswer };
  // Moves what `held_` resolves into `out`; returns false when the rest
  // must wait for more text.
  bool step(ReasoningSplit& out);
  std::string held_;
  State state_ = State::kOutside;
};

}  // namespace tessera
