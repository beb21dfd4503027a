#include "engine/runtime/step_plan_codec.h"

#include <cstring>
#include <string>
#include <type_traits>

#include "engine/core/error.h"

namespace tessera {
namespace {

constexpr uint32_t kMagic = 0x4c505354;  // "TSPL"
constexpr uint16_t kVersion = 4;  // 4: min_tokens, hidden-state steps

class Writer {
 public:
  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));  // x86 and every target here are little-endian
    bytes_.insert(bytes_.end(), raw, raw + sizeof(T));
  }
  template <typename T>
  void put_vector(const std::vector<T>& values) {
    put(uint32_t(values.size()));
    for (const T& v : values) put(v);
  }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  template <typename T>
  T get(const char* what) {
    if (bytes_.size() - at_ < sizeof(T)) {
      throw Error("step plan: truncated reading " + std::string(what) + " at byte " + std::to_string(at_));
    }
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  // A count of items of at least `item_bytes` each, checked against what is left.
  uint32_t count(const char* what, size_t item_bytes) {
    const uint32_t n = get<uint32_t>(what);
    if (uint64_t(n) * item_bytes > bytes_.size() - at_) {
      throw Error("step plan: " + std::string(what) + " count " + std::to_string(n) + " exceeds the message");
    }
    return n;
  }
  template <typename T>
  std::vector<T> get_vector(const char* what) {
    std::vector<T> out(count(what, sizeof(T)));
    for (T& v : out) v = get<T>(what);
    return out;
  }
  bool get_bool(const char* what) {
    const uint8_t v = get<uint8_t>(what);
    if (v > 1) throw Error("step plan: " + std::string(what) + " is neither 0 nor 1");
    return v == 1;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
};

void put_sampling(Writer& w, const SamplingParams& p) {
  w.put(p.temperature);
  w.put(int32_t(p.top_k));
  w.put(p.top_p);
  w.put(p.min_p);
  w.put(p.repetition_penalty);
  w.put(p.frequency_penalty);
  w.put(p.presence_penalty);
  w.put(uint32_t(p.logit_bias.size()));
  for (const auto& [token, bias] : p.logit_bias) {
    w.put(token);
    w.put(bias);
  }
  w.put(uint8_t(p.seed.has_value()));
  w.put(p.seed.value_or(0));
  w.put(int32_t(p.top_logprobs));
  w.put(uint8_t(p.logprobs));
  w.put(int32_t(p.min_tokens));
  w.put_vector(p.held_back);
  w.put_vector(std::vector<char>(p.grammar.gbnf.begin(), p.grammar.gbnf.end()));
  w.put_vector(p.grammar.end_tokens);
}

SamplingParams get_sampling(Reader& r) {
  SamplingParams p;
  p.temperature = r.get<float>("temperature");
  p.top_k = r.get<int32_t>("top_k");
  p.top_p = r.get<float>("top_p");
  p.min_p = r.get<float>("min_p");
  p.repetition_penalty = r.get<float>("repetition_penalty");
  p.frequency_penalty = r.get<float>("frequency_penalty");
  p.presence_penalty = r.get<float>("presence_penalty");
  p.logit_bias.resize(r.count("logit_bias", 8));
  for (auto& [token, bias] : p.logit_bias) {
    token = r.get<int32_t>("logit_bias token");
    bias = r.get<float>("logit_bias value");
  }
  const bool has_seed = r.get_bool("seed flag");
  const uint64_t seed = r.get<uint64_t>("seed");
  if (has_seed) p.seed = seed;
  else if (seed != 0) throw Error("step plan: a seed without its flag");
  p.top_logprobs = r.get<int32_t>("top_logprobs");
  p.logprobs = r.get_bool("logprobs");
  p.min_tokens = r.get<int32_t>("min_tokens");
  p.held_back = r.get_vector<int32_t>("held back tokens");
  const std::vector<char> gbnf = r.get_vector<char>("grammar");
  p.grammar.gbnf.assign(gbnf.begin(), gbnf.end());
  p.grammar.end_tokens = r.get_vector<int32_t>("grammar end tokens");
  return p;
}

enum StepFlags : uint8_t { kSample = 1, kAllLogits = 2, kLastHidden = 4, kAllHidden = 8 };

}  // namespace

std::vector<uint8_t> encode_step_plan(const StepPlan& plan) {
  Writer w;
  w.put(kMagic);
  w.put(kVersion);
  w.put_vector(plan.finished);
  w.put(uint32_t(plan.new_sequences.size()));
  for (const NewSequence& s : plan.new_sequences) {
    w.put(s.seq_id);
    w.put_vector(s.tokens);
    w.put(s.prompt_len);
    put_sampling(w, s.sampling);
    w.put(s.seed);
  }
  w.put(uint32_t(plan.steps.size()));
  for (const SequenceStep& s : plan.steps) {
    w.put(s.seq_id);
    w.put_vector(s.tokens);
    w.put(s.start_position);
    w.put(s.pages_from);
    w.put_vector(s.pages);
    w.put(uint8_t((s.sample ? kSample : 0) | (s.all_logits ? kAllLogits : 0) |
                  (s.hidden == HiddenStates::kLast ? kLastHidden : 0) | (s.hidden == HiddenStates::kAll ? kAllHidden : 0)));
    w.put(s.draft);
  }
  return w.take();
}

StepPlan decode_step_plan(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  if (r.get<uint32_t>("magic") != kMagic) throw Error("step plan: not a step plan (bad magic)");
  const uint16_t version = r.get<uint16_t>("version");
  if (version != kVersion) throw Error("step plan: version " + std::to_string(version) + " is not supported");
  StepPlan plan;
  plan.finished = r.get_vector<uint64_t>("finished");
  plan.new_sequences.resize(r.count("new sequences", 8));
  for (NewSequence& s : plan.new_sequences) {
    s.seq_id = r.get<uint64_t>("sequence id");
    s.tokens = r.get_vector<int32_t>("prompt tokens");
    s.prompt_len = r.get<uint32_t>("prompt length");
    if (s.prompt_len > s.tokens.size()) throw Error("step plan: prompt length exceeds the sequence's tokens");
    s.sampling = get_sampling(r);
    s.seed = r.get<uint64_t>("seed");
  }
  plan.steps.resize(r.count("steps", 8));
  for (SequenceStep& s : plan.steps) {
    s.seq_id = r.get<uint64_t>("sequence id");
    s.tokens = r.get_vector<int32_t>("step tokens");
    s.start_position = r.get<int32_t>("start position");
    s.pages_from = r.get<uint32_t>("pages_from");
    s.pages = r.get_vector<int32_t>("pages");
    const uint8_t flags = r.get<uint8_t>("flags");
    if (flags & ~(kSample | kAllLogits | kLastHidden | kAllHidden)) throw Error("step plan: unknown step flags");
    if ((flags & kLastHidden) && (flags & kAllHidden)) throw Error("step plan: a step asks for the last and every hidden state");
    s.sample = flags & kSample;
    s.all_logits = flags & kAllLogits;
    s.hidden = flags & kAllHidden ? HiddenStates::kAll : flags & kLastHidden ? HiddenStates::kLast : HiddenStates::kNone;
    s.draft = r.get<uint32_t>("draft");
    if (s.draft != 0 && (s.draft >= s.tokens.size() || !s.sample)) throw Error("step plan: draft tokens need a sampled step with a token before them");
  }
  if (!r.done()) throw Error("step plan: trailing bytes after the last step");
  return plan;
}

}  // namespace tessera
