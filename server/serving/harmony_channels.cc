#include "server/serving/harmony_channels.h"

#include <algorithm>
#include <string_view>

namespace tessera {
namespace {

constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kEnds[] = {"<|end|>", "<|return|>", "<|call|>"};
// The longest role or channel header held back while it may still resolve
// ("<|start|>assistant", "commentary to=functions.x <|constrain|>json"):
// past it the text is not harmony and flows on, so the parser never holds
// and rescans a growing buffer.
constexpr size_t kLongestHeader = 256;

// Where a marker may begin in `text` that is not complete yet: the last "<|"
// with no "|>" after it, or a lone trailing "<"; npos when there is none.
size_t unresolved_marker(const std::string& text) {
  if (!text.empty() && text.back() == '<') return text.size() - 1;
  const size_t open = text.rfind("<|");
  if (open == std::string::npos || text.find("|>", open + 2) != std::string::npos) return std::string::npos;
  return open;
}

// The first message end in `text`: its position and length.
std::pair<size_t, size_t> first_end(const std::string& text) {
  std::pair<size_t, size_t> best{std::string::npos, 0};
  for (std::string_view end : kEnds) {
    const size_t at = text.find(end);
    if (at < best.first) best = {at, end.size()};
  }
  return best;
}

}  // namespace

bool HarmonyChannels::step(ReasoningSplit& out) {
  if (state_ == State::kOutside) {
    const size_t channel = held_.find(kChannel);
    std::string before = held_.substr(0, std::min(channel, held_.size()));
    // Stray ends and a role header (<|start|>assistant) are markers, not text.
    for (std::string_view end : kEnds) {
      for (size_t at = before.find(end); at != std::string::npos; at = before.find(end)) before.erase(at, end.size());
    }
    if (before.rfind(kStart, 0) == 0 && before.find("<|", kStart.size()) == std::string::npos && channel != std::string::npos) {
      before.clear();
    }
    if (channel == std::string::npos) {
      const size_t keep = unresolved_marker(held_);
      // "<|start|>assistant", then a channel, perhaps.
      const bool header = held_.rfind(kStart, 0) == 0 && held_.size() <= kLongestHeader;
      if (header) return false;
      out.content += held_.substr(0, std::min(keep, held_.size()));
      held_.erase(0, std::min(keep, held_.size()));
      return false;
    }
    out.content += before;
    held_.erase(0, channel + kChannel.size());
    state_ = State::kHeader;
  }
  if (state_ == State::kHeader) {
    const size_t message = held_.find(kMessage);
    if (message == std::string::npos) {
      if (held_.size() <= kLongestHeader) return false;
      // Not a header after all: the rest is answer text.
      out.content += kChannel;
      state_ = State::kOutside;
      return true;
    }
    // "analysis", "final", or "commentary to=functions.x <|constrain|>json".
    const std::string_view header = std::string_view(held_).substr(0, message);
    state_ = header.substr(0, header.find_first_of(" <")) == "analysis" ? State::kAnalysis : State::kAnswer;
    held_.erase(0, message + kMessage.size());
  }
  std::string& part = state_ == State::kAnalysis ? out.reasoning : out.content;
  const auto [end, length] = first_end(held_);
  if (end == std::string::npos) {
    const size_t keep = unresolved_marker(held_);
    part += held_.substr(0, std::min(keep, held_.size()));
    held_.erase(0, std::min(keep, held_.size()));
    return false;
  }
  part += held_.substr(0, end);
  held_.erase(0, end + length);
  state_ = State::kOutside;
  return true;
}

ReasoningSplit HarmonyChannels::feed(const std::string& text) {
  held_ += text;
  ReasoningSplit out;
  while (step(out)) {
  }
  return out;
}

ReasoningSplit HarmonyChannels::finish() {
  ReasoningSplit out;
  // What is held is an unfinished marker or header: text of the part it is in.
  if (state_ == State::kAnalysis) out.reasoning = std::move(held_);
  else if (state_ != State::kHeader && held_.rfind(kStart, 0) != 0) out.content = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace tessera
