#include "server/serving/text_generation.h"

#include <algorithm>

namespace tessera {
namespace {

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

StartFailure refusal_of(ServedModel& model, const Submission& s, size_t prompt_tokens, int max_tokens) {
  StartFailure failure;
  failure.admission = s.admission;
  switch (s.admission) {
    case Admission::kQueueFull:
      failure.message = "the server is at capacity for model '" + model.name() + "'; retry later";
      model.metrics->count_rejected("queue_full");
      break;
    case Admission::kInvalid:
      failure.message = s.reason;
      model.metrics->count_rejected("invalid");
      break;
    default:
      failure.message = "prompt (" + std::to_string(prompt_tokens) + " tokens) plus max_tokens (" + std::to_string(max_tokens) +
                        ") does not fit: the model's maximum length is " + std::to_string(model.max_model_len) +
                        " tokens and must also fit the KV cache";
      model.metrics->count_rejected("too_long");
  }
  return failure;
}

TextGeneration::TextGeneration(ServedModel& model, std::vector<int32_t> prompt, const GenerationParams& params)
    : model_(model), prompt_(std::move(prompt)), params_(params) {}

std::unique_ptr<TextGeneration> TextGeneration::start(ServedModel& model, std::vector<int32_t> prompt,
                                                      const GenerationParams& params, StartFailure* failure) {
  std::unique_ptr<TextGeneration> g(new TextGeneration(model, std::move(prompt), params));
  std::vector<int32_t> stop_ids = params.stop_token_ids;
  for (int32_t id : model.tokenizer().vocab().end_of_generation) stop_ids.push_back(id);
  for (int i = 0; i < params.n; ++i) {
    Request r;
    r.prompt = g->prompt_;
    r.sampling = params.sampling;
    // Choices of one seeded request differ from each other but repeat exactly.
    if (r.sampling.seed) r.sampling.seed = *r.sampling.seed + uint64_t(i);
    r.max_new_tokens = params.max_tokens;
    r.priority = params.priority;
    r.stop_token_ids = stop_ids;
    if (!r.sampling.grammar.empty()) r.sampling.grammar.end_tokens = stop_ids;
    if (r.sampling.min_tokens > 0) r.sampling.held_back = stop_ids;
    r.ignore_eos = params.ignore_eos;
    r.prompt_logprobs = params.prompt_logprobs;
    const Submission s = model.loop->submit(std::move(r), g->stream_);
    if (s.admission != Admission::kAccepted) {
      *failure = refusal_of(model, s, g->prompt_.size(), params.max_tokens);
      g->cancel();
      return nullptr;
    }
    model.metrics->count_accepted();
    Choice c;
    c.request_id = s.request_id;
    c.detok = std::make_unique<IncrementalDetokenizer>(model.tokenizer(), params.render_special);
    c.stops = std::make_unique<StopMatcher>(params.stop, params.include_stop_string);
    g->choices_.push_back(std::move(c));
    ++g->open_choices_;
  }
  return g;
}

TextGeneration::~TextGeneration() { cancel(); }

void TextGeneration::cancel() {
  for (Choice& c : choices_) {
    if (c.done) continue;
    model_.loop->cancel(c.request_id);
    c.done = true;
    --open_choices_;
    model_.metrics->count_cancelled();
  }
}

std::vector<ChoiceUpdate> TextGeneration::poll(std::chrono::milliseconds timeout) {
  std::vector<ChoiceUpdate> updates;
  if (finished()) return updates;
  std::optional<RequestEvent> e = stream_->pop(timeout);
  while (e) {
    for (size_t i = 0; i < choices_.size(); ++i) {
      if (choices_[i].request_id != e->request_id || choices_[i].done) continue;
      updates.push_back(apply(choices_[i], int(i), *e));
      break;
    }
    e = stream_->pop(std::chrono::milliseconds(0));
  }
  return updates;
}

TokenLogprob TextGeneration::logprob_of(const SampledToken& t) const {
  TokenLogprob lp;
  lp.id = t.id;
  lp.token = model_.tokenizer().token_bytes(t.id, true);
  lp.logprob = t.logprob;
  lp.rank = t.rank;
  for (const auto& [id, value] : t.top) {
    lp.top.emplace_back(model_.tokenizer().token_bytes(id, true), value);
    lp.top_ids.push_back(id);
  }
  return lp;
}

ChoiceUpdate TextGeneration::apply(Choice& c, int index, const RequestEvent& e) {
  ChoiceUpdate u;
  u.index = index;
  const auto now = std::chrono::steady_clock::now();
  if (e.queue_seconds >= 0) model_.metrics->observe_queue_time(e.queue_seconds);
  cached_prompt_tokens_ = std::max(cached_prompt_tokens_, e.cached_prompt_tokens);
  if (!e.prompt_logprobs.empty()) {
    for (const SampledToken& t : e.prompt_logprobs) u.prompt_logprobs.push_back(logprob_of(t));
    return u;
  }
  if (e.has_token) {
    ++c.tokens;
    ++completion_tokens_;
    if (!first_token_seen_) {
      first_token_seen_ = true;
      model_.metrics->observe_first_token(seconds_between(started_, now));
    } else if (c.tokens > 1) {
      model_.metrics->observe_inter_token(seconds_between(c.last_token, now));
    }
    c.last_token = now;
    if (params_.sampling.logprobs) u.logprobs.push_back(logprob_of(e.token));
    // Stop strings are looked for only in the text after min_tokens tokens.
    const std::string text = c.detok->push(e.token.id);
    u.text = c.tokens < params_.sampling.min_tokens ? text : c.stops->push(text);
    if (c.stops->stopped()) {
      model_.loop->cancel(c.request_id);
      finish(c, u, "stop");
    }
    return u;
  }
  switch (e.finish) {
    case FinishReason::kStop:
      ++completion_tokens_;  // the end-of-generation token counts, as in vLLM's usage
      [[fallthrough]];
    case FinishReason::kLength:
      u.text = c.stops->push(c.detok->finish());
      if (!c.stops->stopped()) u.text += c.stops->flush();
      finish(c, u, e.finish == FinishReason::kLength && !c.stops->stopped() ? "length" : "stop");
      break;
    case FinishReason::kCancelled:
    case FinishReason::kError:
    case FinishReason::kNone:
      u.error = e.error.empty() ? "the request was cancelled by the server" : e.error;
      c.done = true;
      --open_choices_;
      model_.metrics->observe_finished("error", seconds_between(started_, now), 0, c.tokens);
      break;
  }
  return u;
}

void TextGeneration::finish(Choice& c, ChoiceUpdate& u, const std::string& reason) {
  u.finish_reason = reason;
  if (c.stops->stopped()) u.stop_string = c.stops->matched();
  c.done = true;
  --open_choices_;
  const bool first_choice_of_prompt = &c == &choices_.front();
  model_.metrics->observe_finished(reason, seconds_between(started_, std::chrono::steady_clock::now()),
                                   first_choice_of_prompt ? int(prompt_.size()) : 0, c.tokens);
}

}  // namespace tessera
