#pragma once
// One client request on a served model: its n choices run as n scheduler
// requests sharing one event stream. Token events become text (UTF-8 safe,
// stop strings applied) and log-probabilities, and are timed into the
// model's metrics. Destroying an unfinished generation cancels what is left.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/serving/served_model.h"
#include "server/serving/stop_matcher.h"
#include "models/tokenizer/detokenizer.h"

namespace tessera {

struct GenerationParams {
  SamplingParams sampling;
  int max_tokens = 16;
  int n = 1;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;  // in addition to the model's end-of-generation tokens
  bool ignore_eos = false;
  int priority = 0;
  // Control tokens appear in the text: tool-call markup such as Qwen's
  // <tool_call> is one, and the tool-call parser reads it.
  bool render_special = false;
  bool include_stop_string = false;  // a matched stop string ends the text (vLLM's include_stop_str_in_output)
  int prompt_logprobs = -1;  // at least 0: score the prompt tokens, with this many alternatives each
};

struct TokenLogprob {
  int32_t id = -1;
  std::string token;  // the token's bytes
  float logprob = 0.0f;
  std::vector<std::pair<std::string, float>> top;  // alternatives by their bytes
  std::vector<int32_t> top_ids;                    // and by id
  int32_t rank = 0;                                // prompt tokens: 1 + tokens the model found more likely
};

struct ChoiceUpdate {
  int index = 0;
  std::string text;
  std::vector<TokenLogprob> logprobs;
  std::vector<TokenLogprob> prompt_logprobs;  // scores of the next prompt tokens, from the second, before any text
  std::optional<std::string> finish_reason;  // "stop" or "length", on the last update
  std::string stop_string;                   // with "stop": the request's stop string that ended it, if one did
  std::string error;                         // set when the choice failed
};

// Why a generation could not start; the HTTP status follows from it.
struct StartFailure {
  Admission admission = Admission::kAccepted;  // kQueueFull (429) or kTooLong (400)
  std::string message;
};

// What a submission the model's loop refused tells the client, counted in
// the model's rejection metrics.
StartFailure refusal_of(ServedModel& model, const Submission& s, size_t prompt_tokens, int max_tokens);

class TextGeneration {
 public:
  // Submits every choice; on refusal returns null and fills *failure (any
  // choices already queued are cancelled).
  static std::unique_ptr<TextGeneration> start(ServedModel& model, std::vector<int32_t> prompt,
                                               const GenerationParams& params, StartFailure* failure);
  ~TextGeneration();

  // Waits up to `timeout` for events; returns what happened since the last
  // call (possibly nothing).
  std::vector<ChoiceUpdate> poll(std::chrono::milliseconds timeout);
  bool finished() const { return open_choices_ == 0; }
  // The client went away: cancels every unfinished choice.
  void cancel();

  int prompt_tokens() const { return int(prompt_.size()); }
  int completion_tokens() const { return completion_tokens_; }
  // Prompt tokens the prefix cache already held (the most any choice found).
  int cached_prompt_tokens() const { return cached_prompt_tokens_; }
  const std::vector<int32_t>& prompt() const { return prompt_; }

 private:
  struct Choice {
    uint64_t request_id = 0;
    std::unique_ptr<IncrementalDetokenizer> detok;
    std::unique_ptr<StopMatcher> stops;
    int tokens = 0;
    bool done = false;
    std::chrono::steady_clock::time_point last_token;
  };

  TextGeneration(ServedModel& model, std::vector<int32_t> prompt, const GenerationParams& params);
  ChoiceUpdate apply(Choice& c, int index, const RequestEvent& e);
  void finish(Choice& c, ChoiceUpdate& u, const std::string& reason);
  TokenLogprob logprob_of(const SampledToken& t) const;

  ServedModel& model_;
  std::vector<int32_t> prompt_;
  GenerationParams params_;
  std::shared_ptr<RequestStream> stream_ = std::make_shared<RequestStream>();
  std::vector<Choice> choices_;
  int open_choices_ = 0;
  int completion_tokens_ = 0;
  int cached_prompt_tokens_ = 0;
  bool first_token_seen_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace tessera
