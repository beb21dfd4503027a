#pragma once
// Per-request sampling parameters, applied per row of the batch.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tessera {
namespace grammar {
struct PreparedGrammar;
}

// Output constrained to a grammar (GBNF text, what every structured-output
// request is lowered to); empty text: unconstrained. End tokens are allowed
// once the grammar has matched.
struct OutputGrammar {
  std::string gbnf;
  std::vector<int32_t> end_tokens;
  // The text compiled with its token tables, when the request thread did so
  // (the server always does): the engine then parses and walks nothing.
  // Not part of the value: equal texts are equal grammars.
  std::shared_ptr<const grammar::PreparedGrammar> prepared;

  bool empty() const { return gbnf.empty(); }
  bool operator==(const OutputGrammar& o) const { return gbnf == o.gbnf && end_tokens == o.end_tokens; }
};

struct SamplingParams {
  float temperature = 1.0f;         // 0: greedy
  int top_k = 0;                    // 0: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off; relative to the most likely token
  float repetition_penalty = 1.0f;  // over prompt and output, as vLLM applies it
  float frequency_penalty = 0.0f;   // over the output only
  float presence_penalty = 0.0f;    // over the output only
  std::vector<std::pair<int32_t, float>> logit_bias;
  std::optional<uint64_t> seed;     // same seed, same output
  int top_logprobs = 0;             // how many alternatives to report
  bool logprobs = false;            // report the chosen token's log-probability
  // vLLM's min_tokens: until the output holds `min_tokens` tokens, none of
  // `held_back` (the request's end-of-generation and stop ids) is drawn.
  int min_tokens = 0;
  std::vector<int32_t> held_back;
  OutputGrammar grammar;

  bool greedy() const { return temperature <= 0.0f; }
};

}  // namespace tessera
