#pragma once
// One model's serving loop: a thread that repeatedly schedules a step, runs
// it on the engine and hands the events to each request's stream. Submission
// and cancellation are thread-safe and take effect at the next step. An
// engine fault ends every request with an error and leaves the loop faulted,
// which health checks report.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/runtime/model_runner.h"
#include "scheduler/draft_model.h"
#include "scheduler/request_stream.h"
#include "scheduler/scheduler.h"

namespace tessera {

enum class LoopState : uint8_t { kReady, kDraining, kStopped, kFaulted };

struct Submission {
  Admission admission = Admission::kAccepted;
  uint64_t request_id = 0;
  std::shared_ptr<RequestStream> stream;  // set when accepted
  std::string reason;                     // kInvalid: what is wrong
};

class ModelLoop {
 public:
  // Called on the loop's thread once the engine faults, after every request
  // has been ended with the error.
  using FaultListener = std::function<void(const std::string& what)>;

  // With `draft`, decoding sequences take their speculative proposals from
  // it (limits.speculative.method draft_model).
  ModelLoop(std::unique_ptr<ModelRunner> runner, const SchedulerLimits& limits, FaultListener on_fault = {},
            std::unique_ptr<DraftModel> draft = nullptr);
  ~ModelLoop();
  ModelLoop(const ModelLoop&) = delete;
  ModelLoop& operator=(const ModelLoop&) = delete;

  // The request's id is assigned here. A loop that is draining, stopped or
  // faulted refuses with kQueueFull. Events go to `into` when given (several
  // requests may share one stream), else to a stream of their own. A
  // request naming a token id outside the model is refused (kInvalid) here,
  // so that it never reaches a step it would fault for everyone.
  Submission submit(Request request, std::shared_ptr<RequestStream> into = nullptr);
  void cancel(uint64_t request_id);

  // Stops accepting, lets running and queued requests finish for up to
  // `timeout`, then ends the rest with an error and stops the thread.
  // `why` ends the requests still running at the timeout.
  void drain(std::chrono::milliseconds timeout, const std::string& why = "the server is shutting down");

  LoopState state() const { return state_.load(); }
  SchedulerStats stats() const;
  const ModelRunner& runner() const { return *runner_; }

 private:
  void run();
  void fault(const std::string& what);

  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<DraftModel> draft_;
  FaultListener on_fault_;
  mutable std::mutex mutex_;  // guards scheduler_ and next_id_
  std::condition_variable work_;
  Scheduler scheduler_;
  uint64_t next_id_ = 1;
  std::atomic<LoopState> state_{LoopState::kReady};
  std::atomic<bool> stop_{false};
  std::mutex drain_mutex_;  // one drain at a time
  std::string stop_reason_ = "the server is shutting down";  // written before stop_ is set
  std::thread thread_;
};

}  // namespace tessera
