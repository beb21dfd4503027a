#include "server/openai/completion_logprobs.h"

#include <algorithm>

namespace tessera {

void CompletionLogprobs::add_unscored(const std::string& token, size_t offset) {
  tokens_.push_back(token);
  token_logprobs_.push_back(nullptr);
  top_logprobs_.push_back(nullptr);
  text_offset_.push_back(offset);
}

void CompletionLogprobs::add(const TokenLogprob& lp, size_t offset, size_t top) {
  tokens_.push_back(lp.token);
  token_logprobs_.push_back(lp.logprob);
  // Alternatives are keyed by their text: two tokens with one spelling
  // (a byte and its control form) keep the more likely.
  Json alternatives = Json::object();
  for (size_t i = 0; i < std::min(top, lp.top.size()); ++i) {
    const auto& [token, value] = lp.top[i];
    if (!alternatives.contains(token)) alternatives[token] = value;
  }
  top_logprobs_.push_back(std::move(alternatives));
  text_offset_.push_back(offset);
}

Json CompletionLogprobs::to_json() const {
  return {{"tokens", tokens_}, {"token_logprobs", token_logprobs_}, {"top_logprobs", top_logprobs_}, {"text_offset", text_offset_}};
}

void VllmPromptLogprobs::add(const TokenLogprob& lp, size_t top) {
  Json position = Json::object();
  position[std::to_string(lp.id)] = {{"logprob", lp.logprob}, {"rank", lp.rank}, {"decoded_token", lp.token}};
  for (size_t i = 0; i < std::min(top, lp.top_ids.size()); ++i) {
    const std::string key = std::to_string(lp.top_ids[i]);
    if (!position.contains(key)) {
      position[key] = {{"logprob", lp.top[i].second}, {"rank", int(i) + 1}, {"decoded_token", lp.top[i].first}};
    }
  }
  list_.push_back(std::move(position));
}

}  // namespace tessera
