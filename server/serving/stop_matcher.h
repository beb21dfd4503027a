#pragma once
// Stop strings over streamed text: text is released as soon as it can no
// longer be the start of a stop string, and generation ends where the first
// stop string begins (the stop string itself is not part of the output
// unless `include_stop`, vLLM's include_stop_str_in_output).
#include <string>
#include <vector>

namespace tessera {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops, bool include_stop = false);

  // Adds generated text; returns the text now safe to emit. After a stop
  // string is found, stopped() is true and later calls return nothing.
  std::string push(const std::string& text);
  // The text still held back, at the end of generation.
  std::string flush();
  bool stopped() const { return stopped_; }
  // The stop string found, once stopped().
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool include_stop_ = false;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace tessera
