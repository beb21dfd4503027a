// The scheduler against a fake engine whose "model" picks each next token as
// a function of the sequence so far, so results do not depend on batching or
// on recomputation, just as the real engine's greedy outputs do not.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "scheduler/scheduler.h"

namespace tessera {
namespace {

int32_t next_token(std::span<const int32_t> history) {
  uint32_t h = 2166136261u;
  for (int32_t t : history) h = (h ^ uint32_t(t)) * 16777619u;
  return int32_t(h % 1000) + 10;
}

// A model that repeats itself: the next token depends on the last two only,
// so outputs fall into cycles that prompt lookup predicts.
int32_t cycling_token(std::span<const int32_t> history) {
  const size_t n = history.size();
  const int32_t a = n >= 2 ? history[n - 2] : 0, b = n >= 1 ? history[n - 1] : 0;
  return (a * 31 + b * 17) % 5 + 10;
}

// What the engine keeps per sequence, rebuilt from the plans alone: the
// plans must carry everything (new sequences in full, deltas after).
struct EngineView {
  std::vector<int32_t> tokens;
  std::vector<int32_t> pages;
};

struct Harness {
  Scheduler scheduler;
  int page_size;
  std::map<uint64_t, EngineView> engine;
  std::map<uint64_t, std::vector<int32_t>> outputs;
  std::map<uint64_t, std::vector<RequestEvent>> finals;
  std::map<uint64_t, std::vector<int>> cached;  // cached_prompt_tokens as reported (once per request)
  std::vector<StepPlan> plans;
  int iterations = 0;
  int32_t (*model)(std::span<const int32_t>) = next_token;

  Harness(const SchedulerLimits& limits, int32_t pages, int page_size)
      : scheduler(limits, pages, page_size), page_size(page_size) {}

  Admission submit(uint64_t id, int prompt_len, int max_new, int priority = 0, std::vector<int32_t> stop = {}) {
    Request r;
    r.id = id;
    for (int i = 0; i < prompt_len; ++i) r.prompt.push_back(int32_t(id * 100 + i) % 997 + 1);
    r.max_new_tokens = max_new;
    r.priority = priority;
    r.stop_token_ids = std::move(stop);
    return scheduler.submit(std::move(r), [this](const RequestEvent& e) {
      if (e.has_token) outputs[e.request_id].push_back(e.token.id);
      if (e.finish != FinishReason::kNone) finals[e.request_id].push_back(e);
      if (e.cached_prompt_tokens >= 0) cached[e.request_id].push_back(e.cached_prompt_tokens);
    });
  }

  Admission submit_tokens(uint64_t id, std::vector<int32_t> prompt, int max_new) {
    Request r;
    r.id = id;
    r.prompt = std::move(prompt);
    r.max_new_tokens = max_new;
    return scheduler.submit(std::move(r), [this](const RequestEvent& e) {
      if (e.has_token) outputs[e.request_id].push_back(e.token.id);
      if (e.finish != FinishReason::kNone) finals[e.request_id].push_back(e);
      if (e.cached_prompt_tokens >= 0) cached[e.request_id].push_back(e.cached_prompt_tokens);
    });
  }

  // Tokens the first step of request `id` computed.
  size_t first_step_tokens(uint64_t id) const {
    for (const StepPlan& p : plans) {
      for (const SequenceStep& s : p.steps) {
        if (s.seq_id == id) return s.tokens.size();
      }
    }
    return 0;
  }

  // One iteration: plan, fake forward (checking the plan), postprocess.
  void step() { replay(scheduler.schedule()); }

  // Runs `plan` on the fake engine (checking it), then postprocesses.
  void replay(const StepPlan& plan) {
    for (uint64_t id : plan.finished) EXPECT_EQ(engine.erase(id), 1u) << "finished sequence " << id << " was not known";
    for (const NewSequence& n : plan.new_sequences) {
      EXPECT_EQ(engine.count(n.seq_id), 0u) << "sequence " << n.seq_id << " registered twice";
      engine[n.seq_id].tokens = n.tokens;
    }
    StepResult result;
    for (const SequenceStep& s : plan.steps) {
      EngineView& view = engine.at(s.seq_id);
      EXPECT_LE(s.pages_from, view.pages.size());
      view.pages.resize(s.pages_from);
      view.pages.insert(view.pages.end(), s.pages.begin(), s.pages.end());
      const size_t end = size_t(s.start_position) + s.tokens.size();
      EXPECT_GE(view.pages.size() * size_t(page_size), end) << "page table too short";
      SequenceResult r;
      r.seq_id = s.seq_id;
      EXPECT_TRUE(s.draft == 0 || (s.sample && s.draft < s.tokens.size()));
      const size_t known_end = end - s.draft;
      EXPECT_TRUE(std::equal(s.tokens.begin(), s.tokens.end() - s.draft, view.tokens.begin() + s.start_position))
          << "tokens disagree";
      view.tokens.resize(std::max(view.tokens.size(), known_end));
      for (size_t i = known_end - 1; s.sample && i < end; ++i) {
        // Draws after each position; a proposal is accepted while it matches.
        SampledToken drawn;
        drawn.id = model(std::span<const int32_t>(view.tokens).subspan(0, i + 1));
        view.tokens.push_back(drawn.id);
        const size_t next = i + 1 - size_t(s.start_position);
        if (i + 1 < end && drawn.id == s.tokens[next]) {
          r.accepted.push_back(drawn);
          continue;
        }
        r.sampled = true;
        r.token = drawn;
        break;
      }
      result.sequences.push_back(r);
    }
    plans.push_back(plan);
    scheduler.postprocess(plan, result);
    ++iterations;
  }

  void run(int max_iterations = 10000) {
    while (scheduler.has_work() && iterations < max_iterations) step();
  }
};

SchedulerLimits limits(int batch_tokens = 64, int chunk = 16, int max_len = 256) {
  SchedulerLimits l;
  l.max_batch_tokens = batch_tokens;
  l.prefill_chunk = chunk;
  l.max_model_len = max_len;
  l.max_sequences = 8;
  l.max_queued_requests = 4;
  l.max_queued_tokens = 1000;
  return l;
}

// Up to five proposals a step by `method` (none, ngram or draft_model).
SchedulerLimits speculating(const char* method) {
  SchedulerLimits l = limits(64, 16, 256);
  l.speculative.method = method;
  l.speculative.num_speculative_tokens = 5;
  return l;
}

TEST(Scheduler, AdmissionRefusesWhatCanNeverFitAndWhatOverflowsTheQueue) {
  Harness h(limits(), 8, 16);
  EXPECT_EQ(h.submit(1, 250, 10), Admission::kTooLong);     // over the model length
  EXPECT_EQ(h.submit(2, 100, 100), Admission::kTooLong);    // over the whole cache (128 positions)
  EXPECT_EQ(h.submit(3, 0, 1), Admission::kTooLong);
  for (uint64_t id = 10; id < 14; ++id) EXPECT_EQ(h.submit(id, 4, 2), Admission::kAccepted);
  EXPECT_EQ(h.submit(14, 4, 2), Admission::kQueueFull);     // four waiting already
  h.step();
  EXPECT_EQ(h.submit(15, 4, 2), Admission::kAccepted);      // the queue drained into the batch
}

TEST(Scheduler, BudgetChunksAndSequenceLimitsHoldEveryIteration) {
  SchedulerLimits l = limits(20, 8);
  l.max_sequences = 3;
  l.max_queued_requests = 100;
  Harness h(l, 64, 16);
  for (uint64_t id = 1; id <= 6; ++id) ASSERT_EQ(h.submit(id, 30, 5), Admission::kAccepted);
  h.run();
  for (const StepPlan& p : h.plans) {
    size_t tokens = 0;
    for (const SequenceStep& s : p.steps) {
      tokens += s.tokens.size();
      EXPECT_LE(s.tokens.size(), 8u);
    }
    EXPECT_LE(tokens, 20u);
    EXPECT_LE(p.steps.size(), 3u);
  }
  for (uint64_t id = 1; id <= 6; ++id) {
    EXPECT_EQ(h.outputs[id].size(), 5u);
    ASSERT_EQ(h.finals[id].size(), 1u);
    EXPECT_EQ(h.finals[id][0].finish, FinishReason::kLength);
    EXPECT_EQ(h.finals[id][0].completion_tokens, 5);
  }
  EXPECT_EQ(h.scheduler.stats().free_pages, 64);
}

TEST(Scheduler, PriorityFirstThenArrivalOrder) {
  SchedulerLimits l = limits(8, 8);
  l.max_sequences = 1;
  l.max_queued_requests = 10;
  Harness h(l, 64, 16);
  h.submit(1, 4, 1, 0);
  h.submit(2, 4, 1, 5);
  h.submit(3, 4, 1, 0);
  h.submit(4, 4, 1, 5);
  h.run();
  std::vector<uint64_t> order;
  for (const StepPlan& p : h.plans) {
    for (const SequenceStep& s : p.steps) {
      if (order.empty() || order.back() != s.seq_id) order.push_back(s.seq_id);
    }
  }
  EXPECT_EQ(order, (std::vector<uint64_t>{2, 4, 1, 3}));
}

TEST(Scheduler, PreemptionByRecomputeGivesTheSameOutputs) {
  SchedulerLimits l = limits(64, 16);
  l.max_queued_requests = 10;
  Harness roomy(l, 64, 4);
  Harness tight(l, 12, 4);  // 48 positions for four sequences of up to 40
  for (Harness* h : {&roomy, &tight}) {
    for (uint64_t id = 1; id <= 4; ++id) ASSERT_EQ(h->submit(id, 10, 30), Admission::kAccepted);
    h->run();
  }
  EXPECT_EQ(roomy.scheduler.stats().preemptions, 0u);
  EXPECT_GT(tight.scheduler.stats().preemptions, 0u);
  for (uint64_t id = 1; id <= 4; ++id) {
    EXPECT_EQ(tight.outputs[id], roomy.outputs[id]) << "request " << id;
    EXPECT_EQ(tight.finals[id].size(), 1u);
  }
  EXPECT_EQ(tight.scheduler.stats().free_pages, 12);
}

TEST(Scheduler, PreemptedRequestsNeverDeadlockHoldingPartialAllocations) {
  // Two requests that each need 8 of 11 pages: after a preemption both wait,
  // and neither may sit on part of the cache while the other needs it.
  SchedulerLimits l = limits(2048, 512, 8192);
  Harness h(l, 11, 16);
  ASSERT_EQ(h.submit(1, 6, 120), Admission::kAccepted);
  ASSERT_EQ(h.submit(2, 6, 120), Admission::kAccepted);
  h.run(5000);
  EXPECT_FALSE(h.scheduler.has_work()) << "stuck after " << h.iterations << " iterations";
  EXPECT_GT(h.scheduler.stats().preemptions, 0u);
  EXPECT_EQ(h.outputs[1].size(), 120u);
  EXPECT_EQ(h.outputs[2].size(), 120u);
  EXPECT_EQ(h.scheduler.stats().free_pages, 11);
}

std::vector<int32_t> prompt_of(int n, int32_t base) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(base + i % 50);
  return p;
}

TEST(PrefixCaching, ARepeatedPromptReusesItsFullPagesAndGivesTheSameTokens) {
  SchedulerLimits l = limits(64, 64);
  Harness h(l, 64, 4);
  ASSERT_EQ(h.submit_tokens(1, prompt_of(40, 7), 8), Admission::kAccepted);
  h.run();
  ASSERT_EQ(h.submit_tokens(2, prompt_of(40, 7), 8), Admission::kAccepted);
  h.run();
  EXPECT_EQ(h.first_step_tokens(1), 40u);
  EXPECT_EQ(h.first_step_tokens(2), 4u);  // 9 pages of 4 cached; the last token runs again
  EXPECT_EQ(h.outputs[2], h.outputs[1]);
  EXPECT_EQ(h.scheduler.stats().prefix_queries, 80u);
  EXPECT_EQ(h.scheduler.stats().prefix_hits, 36u);
  EXPECT_EQ(h.scheduler.stats().free_pages, 64);  // cached pages count as free
  // Each request reports once what it found cached.
  EXPECT_EQ(h.cached[1], std::vector<int>{0});
  EXPECT_EQ(h.cached[2], std::vector<int>{36});
}

TEST(PrefixCaching, ASharedPrefixIsReusedUpToWhereThePromptsPart) {
  SchedulerLimits l = limits(64, 64);
  Harness h(l, 64, 4);
  std::vector<int32_t> a = prompt_of(30, 7), b = prompt_of(30, 7);
  b[13] = 999;  // parts inside the fourth page
  ASSERT_EQ(h.submit_tokens(1, a, 4), Admission::kAccepted);
  h.run();
  ASSERT_EQ(h.submit_tokens(2, b, 4), Admission::kAccepted);
  h.run();
  EXPECT_EQ(h.first_step_tokens(2), 30u - 12u);
  Harness fresh(l, 64, 4);
  ASSERT_EQ(fresh.submit_tokens(2, b, 4), Admission::kAccepted);
  fresh.run();
  EXPECT_EQ(h.outputs[2], fresh.outputs[2]);
}

TEST(PrefixCaching, CachedPagesAreEvictedWhenNeededAndOutputsDoNotChange) {
  SchedulerLimits l = limits(64, 64);
  l.max_queued_requests = 20;
  // Each request needs 8 of the 16 pages: the cache keeps two prompts' pages
  // at most and has to evict for the third.
  Harness tight(l, 16, 4);
  SchedulerLimits no_cache = l;
  no_cache.prefix_caching = false;
  Harness uncached(no_cache, 16, 4);
  for (Harness* h : {&tight, &uncached}) {
    for (uint64_t id = 1; id <= 6; ++id) {
      ASSERT_EQ(h->submit_tokens(id, prompt_of(20, int32_t(id % 3) * 100), 10), Admission::kAccepted);
      h->run();
    }
    EXPECT_FALSE(h->scheduler.has_work());
    EXPECT_EQ(h->scheduler.stats().free_pages, 16);
  }
  for (uint64_t id = 1; id <= 6; ++id) EXPECT_EQ(tight.outputs[id], uncached.outputs[id]) << "request " << id;
  EXPECT_GT(tight.scheduler.stats().prefix_hits, 0u);
  EXPECT_EQ(uncached.scheduler.stats().prefix_hits, 0u);
}

TEST(Scheduler, CancellationFreesPagesAtTheNextStepWithOneFinalEvent) {
  Harness h(limits(), 16, 4);
  h.submit(1, 8, 50);
  h.submit(2, 8, 50);
  h.step();
  h.step();
  const int free_before = h.scheduler.stats().free_pages;
  h.scheduler.cancel(1);
  h.step();
  EXPECT_GT(h.scheduler.stats().free_pages, free_before - 1);
  ASSERT_EQ(h.finals[1].size(), 1u);
  EXPECT_EQ(h.finals[1][0].finish, FinishReason::kCancelled);
  for (const SequenceStep& s : h.plans.back().steps) EXPECT_NE(s.seq_id, 1u);
  h.run();
  EXPECT_EQ(h.finals[1].size(), 1u);
  EXPECT_EQ(h.finals[2].size(), 1u);
  EXPECT_EQ(h.scheduler.stats().cancelled, 1u);
}

TEST(Scheduler, StopTokenEndsTheRequestWithoutBeingEmitted) {
  Harness h(limits(), 16, 4);
  // The fake model's first token for request 7's prompt becomes its stop token.
  std::vector<int32_t> prompt;
  for (int i = 0; i < 5; ++i) prompt.push_back(int32_t(7 * 100 + i) % 997 + 1);
  h.submit(7, 5, 10, 0, {next_token(prompt)});
  h.run();
  EXPECT_TRUE(h.outputs[7].empty());
  ASSERT_EQ(h.finals[7].size(), 1u);
  EXPECT_EQ(h.finals[7][0].finish, FinishReason::kStop);
}

TEST(Scheduler, FailAllEndsEveryRequestWithAnError) {
  Harness h(limits(), 16, 4);
  h.submit(1, 4, 5);
  h.submit(2, 4, 5);
  h.step();
  h.scheduler.fail_all("engine fault");
  EXPECT_FALSE(h.scheduler.has_work());
  for (uint64_t id : {1u, 2u}) {
    ASSERT_EQ(h.finals[id].size(), 1u);
    EXPECT_EQ(h.finals[id][0].finish, FinishReason::kError);
    EXPECT_EQ(h.finals[id][0].error, "engine fault");
  }
  EXPECT_EQ(h.scheduler.stats().free_pages, 16);
}

// With prompt lookup the scheduler proposes drafts, the engine accepts a
// prefix of each, and every request still ends with the tokens it gets one
// at a time: the same length limits, the same stop token, pages enough for
// the proposals, and fewer iterations.
TEST(Scheduler, SpeculationGivesTheSameTokensInFewerSteps) {
  constexpr int32_t kStop = 13;
  auto serve = [](bool speculate) {
    auto h = std::make_unique<Harness>(speculating(speculate ? "ngram" : "none"), 64, 16);
    h->model = cycling_token;
    EXPECT_EQ(h->submit(1, 12, 40), Admission::kAccepted);
    EXPECT_EQ(h->submit(2, 30, 61), Admission::kAccepted);
    EXPECT_EQ(h->submit(3, 5, 50, 0, {kStop}), Admission::kAccepted);
    h->run();
    return h;
  };
  const auto plain = serve(false);
  const auto fast = serve(true);
  EXPECT_EQ(plain->scheduler.stats().draft_tokens, 0u);
  EXPECT_GT(fast->scheduler.stats().accepted_tokens, 20u) << fast->scheduler.stats().draft_tokens;
  EXPECT_LT(fast->iterations, plain->iterations);
  for (uint64_t id = 1; id <= 3; ++id) {
    EXPECT_EQ(fast->outputs[id], plain->outputs[id]) << "request " << id;
    ASSERT_EQ(fast->finals[id].size(), 1u);
    EXPECT_EQ(fast->finals[id][0].finish, plain->finals[id][0].finish);
    EXPECT_EQ(fast->finals[id][0].completion_tokens, plain->finals[id][0].completion_tokens);
  }
  EXPECT_EQ(plain->outputs[2].size(), 61u);
  EXPECT_EQ(plain->finals[3][0].finish, FinishReason::kStop);
}

// With a draft model the scheduler reserves pages for up to
// num_speculative_tokens proposals per decoding sequence and names the
// sequences in draft_jobs(); whatever a draft fills in (here the model's
// own next tokens, then a wrong one) is verified like prompt lookup's.
TEST(Scheduler, DraftJobsReservePagesForWhatTheDraftProposes) {
  auto serve = [](bool speculate) {
    auto h = std::make_unique<Harness>(speculating(speculate ? "draft_model" : "none"), 64, 16);
    EXPECT_EQ(h->submit(1, 12, 40), Admission::kAccepted);
    EXPECT_EQ(h->submit(2, 30, 61), Admission::kAccepted);
    size_t jobs = 0;
    while (h->scheduler.has_work()) {
      StepPlan plan = h->scheduler.schedule();
      for (const DraftJob& job : h->scheduler.draft_jobs()) {
        ++jobs;
        SequenceStep& step = plan.steps.at(job.step);
        EXPECT_EQ(step.seq_id, job.seq_id);
        EXPECT_EQ(step.tokens.size(), 1u);
        EXPECT_EQ(size_t(step.start_position) + 1, job.tokens.size());
        EXPECT_GE(job.room, 1);
        EXPECT_LE(job.room, 5);
        // The model's next tokens, then one that is not, all within the room.
        std::vector<int32_t> context(job.tokens.begin(), job.tokens.end());
        for (int i = 0; i < job.room; ++i) {
          const int32_t next = i + 1 < job.room ? next_token(context) : next_token(context) + 1;
          step.tokens.push_back(next);
          context.push_back(next);
          ++step.draft;
        }
      }
      h->replay(plan);
    }
    EXPECT_EQ(speculate, jobs > 0);
    return h;
  };
  const auto plain = serve(false);
  const auto fast = serve(true);
  EXPECT_EQ(plain->scheduler.stats().draft_tokens, 0u);
  EXPECT_GT(fast->scheduler.stats().accepted_tokens, 0u);
  EXPECT_LT(fast->scheduler.stats().accepted_tokens, fast->scheduler.stats().draft_tokens);
  EXPECT_LT(fast->iterations, plain->iterations);
  for (uint64_t id = 1; id <= 2; ++id) EXPECT_EQ(fast->outputs[id], plain->outputs[id]) << "request " << id;
  EXPECT_EQ(fast->scheduler.stats().free_pages, 64);
}

// Pages filled by accepted proposals join the prefix cache under the
// tokens they hold: a later prompt made of the first request's prompt and
// answer finds all but its last pages.
TEST(Scheduler, PagesFilledBySpeculationAreCachedUnderTheirTokens) {
  Harness h(speculating("ngram"), 64, 16);
  h.model = cycling_token;
  ASSERT_EQ(h.submit(1, 12, 60), Admission::kAccepted);
  h.run();
  ASSERT_GT(h.scheduler.stats().accepted_tokens, 20u);
  std::vector<int32_t> again;
  for (int i = 0; i < 12; ++i) again.push_back(int32_t(100 + i) % 997 + 1);  // request 1's prompt, as submit() makes it
  again.insert(again.end(), h.outputs[1].begin(), h.outputs[1].end());
  ASSERT_EQ(again.size(), 72u);
  const uint64_t hits_before = h.scheduler.stats().prefix_hits;
  ASSERT_EQ(h.submit_tokens(2, again, 1), Admission::kAccepted);
  h.run();
  // 72 tokens: four full pages, all of them found (the prompt's last token
  // always runs).
  EXPECT_EQ(h.scheduler.stats().prefix_hits - hits_before, 64u);
}

}  // namespace
}  // namespace tessera
