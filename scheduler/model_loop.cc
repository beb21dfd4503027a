#include "scheduler/model_loop.h"

#include <exception>

#include "engine/core/token_ids.h"

namespace tessera {
namespace {

std::string invalid_tokens(const Request& r, int vocab) {
  const auto outside = [vocab](int32_t id) { return !token_in_vocabulary(id, vocab); };
  if (r.prompt.empty()) return "the prompt has no tokens";
  for (int32_t id : r.prompt) {
    if (outside(id)) return "prompt token id " + std::to_string(id) + " is outside the model's " + std::to_string(vocab) + " tokens";
  }
  for (const auto& [id, bias] : r.sampling.logit_bias) {
    if (outside(id)) return "logit_bias token id " + std::to_string(id) + " is outside the model's " + std::to_string(vocab) + " tokens";
  }
  return "";
}

}  // namespace

ModelLoop::ModelLoop(std::unique_ptr<ModelRunner> runner, const SchedulerLimits& limits, FaultListener on_fault,
                     std::unique_ptr<DraftModel> draft)
    : runner_(std::move(runner)),
      draft_(std::move(draft)),
      on_fault_(std::move(on_fault)),
      scheduler_(limits, int32_t(runner_->kv_cache().n_pages()), runner_->page_size()),
      thread_([this] { run(); }) {}

ModelLoop::~ModelLoop() {
  stop_ = true;
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Submission ModelLoop::submit(Request request, std::shared_ptr<RequestStream> into) {
  Submission s;
  if (state_.load() != LoopState::kReady) {
    s.admission = Admission::kQueueFull;
    return s;
  }
  if (std::string why = invalid_tokens(request, runner_->model().spec().vocab_size); !why.empty()) {
    s.admission = Admission::kInvalid;
    s.reason = std::move(why);
    return s;
  }
  auto stream = into ? std::move(into) : std::make_shared<RequestStream>();
  {
    std::lock_guard lock(mutex_);
    request.id = next_id_++;
    s.request_id = request.id;
    s.admission = scheduler_.submit(std::move(request), [stream](const RequestEvent& e) { stream->push(e); });
  }
  if (s.admission == Admission::kAccepted) {
    s.stream = std::move(stream);
    work_.notify_all();
  }
  return s;
}

void ModelLoop::cancel(uint64_t request_id) {
  {
    std::lock_guard lock(mutex_);
    scheduler_.cancel(request_id);
  }
  work_.notify_all();
}

SchedulerStats ModelLoop::stats() const {
  std::lock_guard lock(mutex_);
  return scheduler_.stats();
}

void ModelLoop::run() {
  auto last_beat = std::chrono::steady_clock::now();
  // The followers spin between steps; a heartbeat as soon as rank 0 has no
  // work (and once at the start) lets them sleep.
  bool followers_spin = true;
  while (true) {
    StepPlan plan;
    std::vector<DraftJob> draft_jobs;
    bool beat = false;
    {
      std::unique_lock lock(mutex_);
      const auto ready = [&] { return stop_.load() || scheduler_.has_work(); };
      // The ranks of a parallel group hear from rank 0 at least every
      // interval, so one that died or hung is found while idle too.
      if (runner_->parallel() && state_.load() != LoopState::kFaulted) {
        const auto due = followers_spin ? std::chrono::steady_clock::now() : last_beat + runner_->heartbeat_interval();
        beat = !work_.wait_until(lock, due, ready);
      } else {
        work_.wait(lock, ready);
      }
      if (stop_.load()) {
        scheduler_.fail_all(stop_reason_);
        break;
      }
      if (!beat) {
        plan = scheduler_.schedule();
        draft_jobs = scheduler_.draft_jobs();
      }
    }
    try {
      followers_spin = !beat;
      if (beat) {
        runner_->heartbeat();
      } else if (!plan.steps.empty() || !plan.finished.empty()) {  // else only cancellations were pending
        // The jobs' tokens stay put until postprocess(), the only call that changes them.
        if (draft_) draft_->propose(plan, draft_jobs);
        const StepResult result = runner_->step(plan);
        std::lock_guard lock(mutex_);
        scheduler_.postprocess(plan, result);
      }
      last_beat = std::chrono::steady_clock::now();
    } catch (const std::exception& e) {
      fault(e.what());
    }
  }
  if (state_.load() == LoopState::kFaulted) return;
  try {
    runner_->release_followers();
  } catch (const std::exception&) {
    // The followers find rank 0 gone on their own.
  }
}

void ModelLoop::fault(const std::string& what) {
  state_ = LoopState::kFaulted;
  {
    std::lock_guard lock(mutex_);
    scheduler_.fail_all("engine fault: " + what);
  }
  if (on_fault_) on_fault_(what);
}

void ModelLoop::drain(std::chrono::milliseconds timeout, const std::string& why) {
  // A reload's drain and the daemon's own may overlap: the later one waits,
  // then finds the loop stopped.
  std::lock_guard drain_lock(drain_mutex_);
  LoopState expected = LoopState::kReady;
  state_.compare_exchange_strong(expected, LoopState::kDraining);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(mutex_);
      if (!scheduler_.has_work()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  {
    std::lock_guard lock(mutex_);
    stop_reason_ = why;
  }
  stop_ = true;
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (state_.load() != LoopState::kFaulted) state_ = LoopState::kStopped;
}

}  // namespace tessera
