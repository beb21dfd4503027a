#pragma once
// A thinking model's output split into its reasoning and its answer, as the
// text streams in. Models of the DeepSeek-R1 and Qwen3 families write their
// thoughts between <think> and </think>; a template may open the block
// itself (its generation prompt ends with <think>), in which case the output
// starts inside it. Text that may be the start of a tag is held back until
// it resolves, so no tag reaches either part.
#include <string>

namespace tessera {

// How a model's output carries reasoning: <think> tags, or gpt-oss's
// harmony channels (server/serving/harmony_channels.h).
enum class ReasoningFormat { kNone, kThinkTags, kHarmony };

// From the model's configuration ("none", "think", "harmony", "auto") and
// its chat template: "auto" finds harmony's <|channel|> or <think> tags in
// the template.
ReasoningFormat reasoning_format_of(const std::string& configured, const std::string& template_source);

struct ReasoningSplit {
  std::string reasoning;
  std::string content;
};

class ReasoningParser {
 public:
  // `opened`: the prompt already opened the reasoning block.
  explicit ReasoningParser(bool opened) : state_(opened ? State::kReasoning : State::kStart) {}

  ReasoningSplit feed(const std::string& text);
  // What is held back, at the end of the output.
  ReasoningSplit finish();

 private:
  enum class State { kStart, kReasoning, kContent };
  std::string held_;
  State state_;
  bool skipping_blank_ = false;  // right after </think>: line breaks before the answer are dropped
};

// Whether a rendered prompt opens the reasoning block for the model (ends
// with <think> and perhaps a line break).
bool prompt_opens_reasoning(const std::string& prompt_tail);

}  // namespace tessera
