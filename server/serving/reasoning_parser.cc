#include "server/serving/reasoning_parser.h"

#include <algorithm>
#include <string_view>

namespace tessera {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

// Length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t partial_suffix(const std::string& text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.compare(text.size() - n, n, tag.substr(0, n)) == 0) return n;
  }
  return 0;
}

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r\n") == std::string_view::npos; }

}  // namespace

ReasoningFormat reasoning_format_of(const std::string& configured, const std::string& template_source) {
  if (configured == "think") return ReasoningFormat::kThinkTags;
  if (configured == "harmony") return ReasoningFormat::kHarmony;
  if (configured == "none") return ReasoningFormat::kNone;
  if (template_source.find("<|channel|>") != std::string::npos) return ReasoningFormat::kHarmony;
  return template_source.find(kClose) != std::string::npos ? ReasoningFormat::kThinkTags : ReasoningFormat::kNone;
}

bool prompt_opens_reasoning(const std::string& prompt_tail) {
  size_t end = prompt_tail.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return false;
  return end + 1 >= kOpen.size() && prompt_tail.compare(end + 1 - kOpen.size(), kOpen.size(), kOpen) == 0;
}

ReasoningSplit ReasoningParser::feed(const std::string& text) {
  held_ += text;
  ReasoningSplit out;
  if (state_ == State::kStart) {
    // Before anything else, the model may open the block itself.
    const size_t first = held_.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return out;
    const std::string_view rest = std::string_view(held_).substr(first);
    if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) return out;  // perhaps the tag
    if (rest.substr(0, kOpen.size()) == kOpen) {
      held_.erase(0, first + kOpen.size());
      state_ = State::kReasoning;
    } else {
      state_ = State::kContent;
    }
  }
  if (state_ == State::kReasoning) {
    const size_t close = held_.find(kClose);
    if (close == std::string::npos) {
      const size_t keep = partial_suffix(held_, kClose);
      out.reasoning = held_.substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return out;
    }
    out.reasoning = held_.substr(0, close);
    held_.erase(0, close + kClose.size());
    // The line breaks models write after </think> are not part of the answer.
    const size_t answer = held_.find_first_not_of(" \t\r\n");
    held_.erase(0, answer == std::string::npos ? held_.size() : answer);
    state_ = State::kContent;
    if (held_.empty()) {
      skipping_blank_ = true;
      return out;
    }
  }
  if (skipping_blank_) {
    if (blank(held_)) {
      held_.clear();
      return out;
    }
    held_.erase(0, held_.find_first_not_of(" \t\r\n"));
    skipping_blank_ = false;
  }
  out.content = std::move(held_);
  held_.clear();
  return out;
}

ReasoningSplit ReasoningParser::finish() {
  ReasoningSplit out;
  // A block never closed holds only reasoning; an undecided start is content.
  if (state_ == State::kReasoning) out.reasoning = std::move(held_);
  else if (!skipping_blank_) out.content = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace tessera
