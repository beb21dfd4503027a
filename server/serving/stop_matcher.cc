#include "server/serving/stop_matcher.h"

#include <algorithm>

namespace tessera {

StopMatcher::StopMatcher(std::vector<std::string> stops, bool include_stop)
    : stops_(std::move(stops)), include_stop_(include_stop) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string StopMatcher::push(const std::string& text) {
  if (stopped_) return "";
  held_ += text;
  size_t first_hit = std::string::npos;
  for (const std::string& s : stops_) {
    const size_t at = held_.find(s);
    if (at < first_hit) first_hit = at, matched_ = s;
  }
  if (first_hit != std::string::npos) {
    stopped_ = true;
    std::string out = held_.substr(0, first_hit + (include_stop_ ? matched_.size() : 0));
    held_.clear();
    return out;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const std::string& s : stops_) {
    for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n) {
      if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
    }
  }
  std::string out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  std::string out = stopped_ ? "" : held_;
  held_.clear();
  return out;
}

}  // namespace tessera
