#pragma once
// The log-probabilities a completion reports: OpenAI's legacy `logprobs`
// object (with `echo`, the prompt's tokens first, the first of them without
// a value) and vLLM's `prompt_logprobs` list.
#include <cstddef>
#include <string>

#include "server/serving/bounded_json.h"
#include "server/serving/text_generation.h"

namespace tessera {

// {"tokens", "token_logprobs", "top_logprobs", "text_offset"}, grown token
// by token.
class CompletionLogprobs {
 public:
  // A token without a value: the prompt's first, which nothing predicts.
  void add_unscored(const std::string& token, size_t offset);
  // At most `top` of lp's alternatives are listed.
  void add(const TokenLogprob& lp, size_t offset, size_t top);
  size_t size() const { return tokens_.size(); }
  Json to_json() const;

 private:
  Json tokens_ = Json::array(), token_logprobs_ = Json::array(), top_logprobs_ = Json::array(), text_offset_ = Json::array();
};

// vLLM's prompt_logprobs: null for the first prompt token, then for each
// later one {"<id>": {"logprob", "rank", "decoded_token"}} holding the
// prompt token and its `top` most likely alternatives.
class VllmPromptLogprobs {
 public:
  VllmPromptLogprobs() { list_.push_back(nullptr); }
  void add(const TokenLogprob& lp, size_t top);
  const Json& to_json() const { return list_; }

 private:
  Json list_ = Json::array();
};

}  // namespace tessera
