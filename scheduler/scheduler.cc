#include "scheduler/scheduler.h"

#include "scheduler/hidden_pool.h"

#include <algorithm>
#include <chrono>
#include <optional>

namespace tessera {

struct Scheduler::Sequence {
  Request request;
  EventSink sink;
  uint64_t arrival = 0;
  std::vector<int32_t> tokens;  // prompt, then output
  size_t computed = 0;          // tokens whose keys and values are in the cache
  std::vector<int32_t> pages;
  uint64_t seed = 0;            // of the engine's random generator for this sequence
  bool engine_knows = false;    // registered with the engine by an earlier plan
  size_t pages_sent = 0;        // leading entries of `pages` the engine already has
  int generated = 0;
  bool cancelled = false;
  bool planned = false;  // in the plan being built
  bool queued = true;    // its prompt counts against the queue's token bound
  std::chrono::steady_clock::time_point submitted = std::chrono::steady_clock::now();
  double queue_seconds = -1.0;  // until first scheduled
  int cached_prompt_tokens = -1;  // prompt tokens the prefix cache held when first scheduled
  bool first_schedule_reported = false;
  std::vector<PrefixKey> page_keys;  // prefix key of each full page seen so far
  std::optional<PromptLookup> lookup;  // speculative decoding: made on its first decode step
  std::vector<int32_t> draft;          // proposals in the plan being built
  int draft_room = 0;                  // or how many a draft model may propose
  size_t prompt_scored = 1;            // prompt logprobs: the next prompt position to report (0 has none)
  std::optional<HiddenPool> pool;      // embeddings: the pooling of the prompt's hidden states

  // The queue time and the prompt tokens found cached, once: on the first
  // event after the first schedule.
  void report_first_schedule(RequestEvent& event) {
    if (first_schedule_reported || queue_seconds < 0) return;
    first_schedule_reported = true;
    event.queue_seconds = queue_seconds;
    event.cached_prompt_tokens = cached_prompt_tokens;
  }

  // Runs before `other`: higher priority, then earlier arrival.
  bool before(const Sequence& other) const {
    if (request.priority != other.request.priority) return request.priority > other.request.priority;
    return arrival < other.arrival;
  }
};

namespace {

// Logit rows one step returns for scoring prompts, over all its sequences:
// the engine's logits buffer holds rows × vocabulary floats (64 MiB at a
// vocabulary of 131,072).
constexpr int kPromptLogitRows = 128;

template <typename List>
void insert_in_order(List& list, typename List::value_type seq) {
  auto it = std::find_if(list.begin(), list.end(), [&](const auto& other) { return seq->before(*other); });
  list.insert(it, std::move(seq));
}

}  // namespace

Scheduler::Scheduler(const SchedulerLimits& limits, int32_t n_pages, int page_size)
    : limits_(limits), page_size_(page_size), allocator_(n_pages) {
  allocator_.set_eviction_callback([this](int32_t page) { prefix_cache_.erase(page); });
}

void Scheduler::attach_cached_prefix(Sequence& s) {
  const size_t usable = (s.tokens.size() - 1) / size_t(page_size_);
  PrefixKey key;
  for (size_t i = 0; i < usable; ++i) {
    const auto page_tokens = std::span<const int32_t>(s.tokens).subspan(i * size_t(page_size_), size_t(page_size_));
    key = chain_prefix_key(key, page_tokens);
    const std::optional<int32_t> hit = prefix_cache_.find(key, page_tokens);
    if (!hit) break;
    allocator_.reuse(*hit);
    s.pages.push_back(*hit);
    s.page_keys.push_back(key);
  }
  s.computed = s.pages.size() * size_t(page_size_);
}

void Scheduler::detach_pages(Sequence& s) {
  // Last page first: cached pages are evicted oldest first, and a prefix's
  // first pages are the ones other prompts can share.
  for (auto it = s.pages.rbegin(); it != s.pages.rend(); ++it) allocator_.release(*it);
  s.pages.clear();
  s.pages_sent = 0;
  s.page_keys.clear();
  s.computed = 0;
}

void Scheduler::register_full_pages(Sequence& s) {
  if (!limits_.prefix_caching) return;
  // Accepted proposals are computed before they join s.tokens (as they are
  // emitted); a page they fill is registered at the next step.
  const size_t known = std::min(s.computed, s.tokens.size());
  for (size_t i = s.page_keys.size(); i < s.pages.size() && (i + 1) * size_t(page_size_) <= known; ++i) {
    const auto page_tokens = std::span<const int32_t>(s.tokens).subspan(i * size_t(page_size_), size_t(page_size_));
    const PrefixKey key = chain_prefix_key(i ? s.page_keys[i - 1] : PrefixKey{}, page_tokens);
    s.page_keys.push_back(key);
    if (prefix_cache_.insert(key, page_tokens, s.pages[i])) allocator_.set_cached(s.pages[i], true);
  }
}

Scheduler::~Scheduler() = default;

bool Scheduler::admits(const Request& r, std::string* why) const {
  const int64_t total = int64_t(r.prompt.size()) + r.max_new_tokens;
  if (r.prompt.empty()) {
    *why = "the prompt is empty";
    return false;
  }
  if (r.max_new_tokens < 0 || (r.max_new_tokens == 0 && r.prompt_logprobs < 0 && r.pooling == Pooling::kNone)) {
    *why = "max_new_tokens must be at least 1, or 0 to score or embed the prompt only";
    return false;
  }
  if (r.pooling != Pooling::kNone && r.max_new_tokens != 0) {
    *why = "an embedding request generates no tokens (max_new_tokens 0)";
    return false;
  }
  if (total > limits_.max_model_len) {
    *why = "prompt (" + std::to_string(r.prompt.size()) + " tokens) plus max_new_tokens (" + std::to_string(r.max_new_tokens) +
           ") exceeds the model length of " + std::to_string(limits_.max_model_len);
    return false;
  }
  if ((total + page_size_ - 1) / page_size_ > allocator_.total()) {
    *why = "prompt plus max_new_tokens needs more KV cache than the whole cache holds";
    return false;
  }
  return true;
}

Admission Scheduler::submit(Request request, EventSink sink) {
  std::string why;
  if (!admits(request, &why)) return Admission::kTooLong;
  if (int(waiting_.size()) >= limits_.max_queued_requests ||
      queued_tokens_ + int64_t(request.prompt.size()) > limits_.max_queued_tokens) {
    return Admission::kQueueFull;
  }
  auto s = std::make_unique<Sequence>();
  s->arrival = arrivals_++;
  s->tokens = request.prompt;
  s->seed = request.sampling.seed.value_or(std::random_device{}());
  if (request.pooling != Pooling::kNone) s->pool.emplace(request.pooling, request.prompt.size());
  s->request = std::move(request);
  s->sink = std::move(sink);
  queued_tokens_ += int64_t(s->tokens.size());
  by_id_[s->request.id] = s.get();
  insert_in_order(waiting_, std::move(s));
  return Admission::kAccepted;
}

void Scheduler::cancel(uint64_t request_id) {
  auto it = by_id_.find(request_id);
  if (it != by_id_.end()) it->second->cancelled = true;
}

bool Scheduler::ensure_pages(Sequence& s, int64_t positions) {
  while (int64_t(s.pages.size()) * page_size_ < positions) {
    const auto page = allocator_.allocate();
    if (!page) return false;
    s.pages.push_back(*page);
  }
  return true;
}

Scheduler::Sequence* Scheduler::pick_victim() {
  // The running sequence that would run last, if it is not already planned.
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    if (!(*it)->planned) return it->get();
  }
  return nullptr;
}

// Frees the pages; the sequence recomputes its tokens when it runs again.
void Scheduler::preempt(Sequence& victim) {
  detach_pages(victim);
  ++preemptions_;
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == &victim; });
  std::unique_ptr<Sequence> moved = std::move(*it);
  running_.erase(it);
  insert_in_order(waiting_, std::move(moved));
}

void Scheduler::finish(Sequence& s, FinishReason reason, const std::string& error) {
  detach_pages(s);
  if (s.queued) queued_tokens_ -= int64_t(s.request.prompt.size());
  s.queued = false;
  RequestEvent event;
  event.request_id = s.request.id;
  event.finish = reason;
  event.error = error;
  event.prompt_tokens = int(s.request.prompt.size());
  event.completion_tokens = s.generated;
  if (s.pool && reason == FinishReason::kLength) event.embedding = s.pool->result();
  s.report_first_schedule(event);
  const EventSink sink = std::move(s.sink);
  if (s.engine_knows) finished_.push_back(s.request.id);
  by_id_.erase(s.request.id);
  for (auto* list : {&running_, &waiting_}) {
    auto it = std::find_if(list->begin(), list->end(), [&](const auto& p) { return p.get() == &s; });
    if (it == list->end()) continue;
    list->erase(it);
    break;
  }
  if (sink) sink(event);
}

StepPlan Scheduler::schedule() {
  std::vector<Sequence*> cancelled;
  for (auto* list : {&running_, &waiting_}) {
    for (auto& s : *list) {
      if (s->cancelled) cancelled.push_back(s.get());
    }
  }
  for (Sequence* s : cancelled) {
    ++cancelled_;
    finish(*s, FinishReason::kCancelled);
  }

  StepPlan plan;
  std::vector<std::pair<Sequence*, size_t>> chosen;
  int budget = limits_.max_batch_tokens;
  int logit_rows = kPromptLogitRows;
  const uint64_t preemptions_before = preemptions_;
  for (auto& s : running_) s->planned = false;
  // Running sequences first, best first; the worst give up their pages.
  for (auto it = running_.begin(); it != running_.end() && budget > 0 && int(chosen.size()) < limits_.max_sequences;) {
    Sequence& s = **it;
    const size_t pending = s.tokens.size() - s.computed;
    const size_t n = std::min({pending, size_t(limits_.prefill_chunk), size_t(budget),
                               scores_prompt(s) ? size_t(logit_rows) : pending});
    if (n == 0) {
      ++it;
      continue;
    }
    s.draft.clear();
    s.draft_room = 0;
    if (pending == 1) propose_draft(s, budget - 1);
    bool fits = ensure_pages(s, int64_t(s.computed + n));
    while (!fits) {
      Sequence* victim = pick_victim();
      if (victim == nullptr) break;
      const bool self = victim == &s;
      if (self) ++it;  // `s` leaves the running list
      preempt(*victim);
      if (self) break;
      fits = ensure_pages(s, int64_t(s.computed + n));
    }
    if (!fits) continue;
    s.planned = true;
    chosen.emplace_back(&s, n);
    budget -= int(n + s.draft.size()) + s.draft_room;
    if (scores_prompt(s)) logit_rows -= int(n);
    ++it;
  }
  // Then waiting requests in order, while pages and budget last. Not in a
  // step that had to preempt: what was just evicted would be readmitted and
  // evicted again, recomputing its whole context every step.
  const bool preempted_now = preemptions_ != preemptions_before;
  while (!preempted_now && !waiting_.empty() && budget > 0 && int(chosen.size()) < limits_.max_sequences) {
    Sequence& s = *waiting_.front();
    s.draft.clear();
    s.draft_room = 0;
    const bool scores = scores_prompt(s);
    const bool whole = scores || (s.request.pooling == Pooling::kMean && !s.pool->complete());
    const bool lookup = limits_.prefix_caching && s.pages.empty() && !whole;
    if (lookup) attach_cached_prefix(s);
    const size_t n = std::min({s.tokens.size() - s.computed, size_t(limits_.prefill_chunk), size_t(budget),
                               scores ? size_t(logit_rows) : size_t(budget)});
    if (n == 0) break;
    // All or nothing: a waiting request holding part of what it needs
    // could starve everyone else. First come, first served: no skipping.
    const int64_t needed = (int64_t(s.computed + n) + page_size_ - 1) / page_size_ - int64_t(s.pages.size());
    if (needed > allocator_.free_count() || !ensure_pages(s, int64_t(s.computed + n))) {
      detach_pages(s);
      break;
    }
    if (lookup) {
      prefix_queries_ += s.tokens.size();
      prefix_hits_ += s.computed;
    }
    if (s.queued) queued_tokens_ -= int64_t(s.request.prompt.size());
    s.queued = false;
    s.planned = true;
    if (s.queue_seconds < 0) {
      s.queue_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.submitted).count();
      s.cached_prompt_tokens = int(std::min(s.computed, s.request.prompt.size()));
    }
    chosen.emplace_back(&s, n);
    budget -= int(n);
    if (scores) logit_rows -= int(n);
    std::unique_ptr<Sequence> moved = std::move(waiting_.front());
    waiting_.pop_front();
    insert_in_order(running_, std::move(moved));
  }
  plan.finished = std::move(finished_);
  finished_.clear();
  draft_jobs_.clear();
  for (const auto& [s, n] : chosen) {
    if (s->draft_room > 0) draft_jobs_.push_back({plan.steps.size(), s->request.id, s->tokens, s->draft_room});
    plan.steps.push_back(plan_step(*s, n, plan));
  }
  return plan;
}

SequenceStep Scheduler::plan_step(Sequence& s, size_t n, StepPlan& plan) {
  if (!s.engine_knows) {
    NewSequence& fresh = plan.new_sequences.emplace_back();
    fresh.seq_id = s.request.id;
    fresh.tokens = s.tokens;
    fresh.prompt_len = uint32_t(s.request.prompt.size());
    fresh.sampling = s.request.sampling;
    fresh.seed = s.seed;
    s.engine_knows = true;
  }
  SequenceStep step;
  step.seq_id = s.request.id;
  step.tokens.assign(s.tokens.begin() + long(s.computed), s.tokens.begin() + long(s.computed + n));
  step.tokens.insert(step.tokens.end(), s.draft.begin(), s.draft.end());
  step.draft = uint32_t(s.draft.size());
  step.start_position = int32_t(s.computed);
  step.pages_from = uint32_t(s.pages_sent);
  step.pages.assign(s.pages.begin() + long(s.pages_sent), s.pages.end());
  s.pages_sent = s.pages.size();
  step.sample = s.computed + n == s.tokens.size() && s.request.max_new_tokens > 0;
  step.all_logits = scores_prompt(s);
  if (s.pool && !s.pool->complete()) {
    if (s.request.pooling == Pooling::kMean) step.hidden = HiddenStates::kAll;
    else if (s.computed + n == s.request.prompt.size()) step.hidden = HiddenStates::kLast;
  }
  return step;
}

bool Scheduler::scores_prompt(const Sequence& s) const {
  const size_t prompt_len = s.request.prompt.size();
  return s.request.prompt_logprobs >= 0 && s.prompt_scored < prompt_len && s.computed + 1 < prompt_len;
}

void Scheduler::report_prompt_logprobs(Sequence& s, const SequenceStep& step, const SequenceResult& r) {
  const size_t rows = step.tokens.size();
  if (rows == 0 || r.logits.empty() || r.logits.size() % rows != 0) return;
  const size_t vocab = r.logits.size() / rows;
  const std::vector<int32_t>& prompt = s.request.prompt;
  RequestEvent event;
  event.request_id = s.request.id;
  // Row j holds the logits after position start + j: the distribution of
  // the token at start + j + 1. Positions a preempted sequence recomputes
  // were reported before.
  for (size_t j = 0; j < rows; ++j) {
    const size_t target = size_t(step.start_position) + j + 1;
    if (target < s.prompt_scored || target >= prompt.size()) continue;
    const auto row = std::span<const float>(r.logits).subspan(j * vocab, vocab);
    event.prompt_logprobs.push_back(score_token(row, prompt[target], s.request.prompt_logprobs));
    s.prompt_scored = target + 1;
  }
  if (event.prompt_logprobs.empty()) return;
  s.report_first_schedule(event);
  if (s.sink) s.sink(event);
}

int Scheduler::draft_room(const Sequence& s, int budget) const {
  const SpeculativeConfig& c = limits_.speculative;
  if (!c.enabled()) return 0;
  // Every accepted proposal is followed by one more drawn token: leave room
  // for it under max_new_tokens and the model length.
  const int64_t room = std::min({int64_t(c.num_speculative_tokens), int64_t(budget),
                                 int64_t(s.request.max_new_tokens) - s.generated - 1,
                                 int64_t(limits_.max_model_len) - int64_t(s.tokens.size()) - 1});
  return int(std::max<int64_t>(room, 0));
}

void Scheduler::propose_draft(Sequence& s, int budget) {
  const int room = draft_room(s, budget);
  if (room == 0) return;
  const SpeculativeConfig& c = limits_.speculative;
  const bool by_draft_model = c.uses_draft_model();
  if (!by_draft_model) {
    if (!s.lookup) s.lookup.emplace(c.prompt_lookup_min, c.prompt_lookup_max);
    s.lookup->extend(s.tokens);
    s.draft = s.lookup->propose(s.tokens, size_t(room));
    if (s.draft.empty()) return;
  }
  // A page each for every running sequence's next token stays free, so no
  // guess can cause a preemption.
  const int64_t positions = int64_t(s.computed) + 1 + (by_draft_model ? room : int64_t(s.draft.size()));
  const int64_t new_pages = (positions + page_size_ - 1) / page_size_ - int64_t(s.pages.size());
  if (new_pages > int64_t(allocator_.free_count()) - int64_t(running_.size()) || !ensure_pages(s, positions)) {
    s.draft.clear();
    return;
  }
  if (by_draft_model) s.draft_room = room;
}

bool Scheduler::emit_token(Sequence& s, const SampledToken& token) {
  s.tokens.push_back(token.id);
  ++s.generated;
  const bool is_stop = !s.request.ignore_eos &&
      std::find(s.request.stop_token_ids.begin(), s.request.stop_token_ids.end(), token.id) != s.request.stop_token_ids.end();
  if (is_stop) {
    finish(s, FinishReason::kStop);
    return false;
  }
  RequestEvent event;
  event.request_id = s.request.id;
  event.has_token = true;
  event.token = token;
  s.report_first_schedule(event);
  if (s.sink) s.sink(event);
  if (s.generated >= s.request.max_new_tokens || int(s.tokens.size()) >= limits_.max_model_len) {
    finish(s, FinishReason::kLength);
    return false;
  }
  return true;
}

void Scheduler::postprocess(const StepPlan& plan, const StepResult& result) {
  for (size_t i = 0; i < plan.steps.size() && i < result.sequences.size(); ++i) {
    draft_tokens_ += plan.steps[i].draft;
    auto found = by_id_.find(plan.steps[i].seq_id);
    if (found == by_id_.end()) continue;
    Sequence& s = *found->second;
    const SequenceStep& step = plan.steps[i];
    const SequenceResult& r = result.sequences[i];
    // Rejected proposals left keys and values past the sequence's end; the
    // next step overwrites them before any query can reach them.
    const size_t accepted = std::min<size_t>(r.accepted.size(), step.draft);
    s.computed += step.tokens.size() - step.draft + accepted;
    accepted_tokens_ += accepted;
    register_full_pages(s);
    if (!r.error.empty()) {
      finish(s, FinishReason::kError, r.error);
      continue;
    }
    if (step.all_logits) report_prompt_logprobs(s, step, r);
    if (step.hidden != HiddenStates::kNone && s.pool) {
      const size_t rows = step.hidden == HiddenStates::kAll ? step.tokens.size() : 1;
      const size_t first = size_t(step.start_position) + step.tokens.size() - rows;
      if (!r.hidden.empty() && r.hidden.size() % rows == 0) s.pool->add(r.hidden, first, r.hidden.size() / rows);
    }
    if (s.request.max_new_tokens == 0 && s.computed >= s.tokens.size()) {
      if (s.pool && !s.pool->complete()) finish(s, FinishReason::kError, "engine: the prompt's hidden states did not all arrive");
      else finish(s, FinishReason::kLength);
      continue;
    }
    if (!r.sampled) continue;
    bool open = true;
    for (size_t a = 0; a < accepted && open; ++a) open = emit_token(s, r.accepted[a]);
    if (open) emit_token(s, r.token);
  }
}

void Scheduler::fail_all(const std::string& message) {
  std::vector<Sequence*> all;
  for (auto* list : {&running_, &waiting_}) {
    for (auto& s : *list) all.push_back(s.get());
  }
  for (Sequence* s : all) finish(*s, FinishReason::kError, message);
}

bool Scheduler::has_work() const { return !running_.empty() || !waiting_.empty(); }

SchedulerStats Scheduler::stats() const {
  return {int(running_.size()), int(waiting_.size()), allocator_.free_count(), allocator_.total(), preemptions_, cancelled_,
          prefix_queries_, prefix_hits_, draft_tokens_, accepted_tokens_};
}

}  // namespace tessera
