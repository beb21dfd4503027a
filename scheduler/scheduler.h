#pragma once
// Iteration-level continuous batching. Each call to schedule() admits work
// under a token budget: running sequences first (one decode token each, or
// the next prefill chunk), then waiting requests by priority and arrival.
// Pages come from the PageAllocator; when they run out, the running
// sequence with the lowest priority that arrived last is preempted: its pages
// are freed and it is recomputed from its tokens when it runs again, which
// gives the same result because the engine is batch-invariant. Pure
// bookkeeping: no model, no device.
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "config/config.h"
#include "engine/runtime/step_plan.h"
#include "scheduler/page_allocator.h"
#include "scheduler/prefix_cache.h"
#include "scheduler/prompt_lookup.h"
#include "scheduler/request.h"

namespace tessera {

// The configured limits plus the model length they apply to.
struct SchedulerLimits : SchedulerConfig {
  int max_model_len = 4096;  // prompt + output
};

enum class Admission : uint8_t {
  kAccepted,
  kQueueFull,  // try again later (HTTP 429)
  kTooLong,    // can never fit (HTTP 400)
  kInvalid,    // names tokens the model does not have (HTTP 400)
};

struct SchedulerStats {
  int running = 0;
  int waiting = 0;
  int free_pages = 0;
  int total_pages = 0;
  uint64_t preemptions = 0;
  uint64_t cancelled = 0;
  uint64_t prefix_queries = 0;  // tokens of admitted sequences looked up in the prefix cache
  uint64_t prefix_hits = 0;     // of those, tokens whose pages were found
  uint64_t draft_tokens = 0;    // speculative proposals sent to the engine
  uint64_t accepted_tokens = 0; // of those, proposals the engine accepted
};

// A decoding sequence whose proposals come from a draft model
// (speculative method draft_model): the loop asks the model for up to `room`
// tokens after `tokens` and appends them to step `step` of the plan as its
// draft. Pages for them are already reserved.
struct DraftJob {
  size_t step = 0;                     // index into the plan's steps
  uint64_t seq_id = 0;
  std::span<const int32_t> tokens;     // the sequence so far: valid until the next postprocess()
  int room = 0;                        // proposals at most
};

class Scheduler {
 public:
  Scheduler(const SchedulerLimits& limits, int32_t n_pages, int page_size);
  ~Scheduler();

  // The sink receives every event of the request, from the thread that calls
  // postprocess() or cancel_pending().
  Admission submit(Request request, EventSink sink);
  // Marks the request cancelled; its pages are freed at the next schedule().
  void cancel(uint64_t request_id);

  StepPlan schedule();
  // The sequences of the last plan that wait for a draft model's proposals.
  const std::vector<DraftJob>& draft_jobs() const { return draft_jobs_; }
  // Appends sampled tokens, emits events, finishes and frees what is done.
  void postprocess(const StepPlan& plan, const StepResult& result);
  // Ends every request with an error (engine fault, shutdown).
  void fail_all(const std::string& message);

  bool has_work() const;
  SchedulerStats stats() const;

 private:
  struct Sequence;

  bool admits(const Request& r, std::string* why) const;
  bool ensure_pages(Sequence& s, int64_t positions);
  void preempt(Sequence& victim);
  void finish(Sequence& s, FinishReason reason, const std::string& error = "");
  Sequence* pick_victim();
  // Takes the cached pages of the longest known prefix of s's tokens (never
  // its last token, which must run to give logits); undone by detach.
  void attach_cached_prefix(Sequence& s);
  void detach_pages(Sequence& s);
  // Records s's pages that became full since the last call.
  void register_full_pages(Sequence& s);
  // The step of `s` for the plan: its next `n` tokens, then its draft. It
  // registers `s` with the engine (in the plan's new sequences) the first
  // time and sends only new pages after.
  SequenceStep plan_step(Sequence& s, size_t n, StepPlan& plan);
  // How many proposals a decoding sequence may make, at most `budget`.
  int draft_room(const Sequence& s, int budget) const;
  // Speculative proposals for a decoding sequence: prompt lookup's, or
  // `room` placeholders a draft model fills after the plan is made. Pages
  // are reserved for them only where they are spare.
  void propose_draft(Sequence& s, int budget);
  // Appends a drawn token and sends it on; false once it finished the request.
  bool emit_token(Sequence& s, const SampledToken& token);
  // Whether s's next step must return the logits of every token: it scores
  // its prompt and some prompt token is still unscored.
  bool scores_prompt(const Sequence& s) const;
  // Sends the scores of the prompt tokens this step's logits give, each once.
  void report_prompt_logprobs(Sequence& s, const SequenceStep& step, const SequenceResult& r);

  SchedulerLimits limits_;
  int page_size_;
  PageAllocator allocator_;
  PrefixCache prefix_cache_;
  uint64_t prefix_queries_ = 0;
  uint64_t prefix_hits_ = 0;
  uint64_t arrivals_ = 0;
  std::list<std::unique_ptr<Sequence>> waiting_;   // sorted: priority, then arrival
  std::list<std::unique_ptr<Sequence>> running_;
  std::unordered_map<uint64_t, Sequence*> by_id_;
  int64_t queued_tokens_ = 0;
  uint64_t preemptions_ = 0;
  uint64_t cancelled_ = 0;
  uint64_t draft_tokens_ = 0;
  uint64_t accepted_tokens_ = 0;
  std::vector<uint64_t> finished_;  // known to the engine, finished since the last plan
  std::vector<DraftJob> draft_jobs_;  // of the last plan
};

}  // namespace tessera
