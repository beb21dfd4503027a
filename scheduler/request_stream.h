#pragma once
// The events of one request, handed from the model loop's thread to whoever
// serves the client. The last event carries a finish reason.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "scheduler/request.h"

namespace tessera {

class RequestStream {
 public:
  void push(const RequestEvent& event) {
    {
      std::lock_guard lock(mutex_);
      events_.push_back(event);
    }
    ready_.notify_all();
  }

  // The next event, or nullopt if none arrives within `timeout`.
  std::optional<RequestEvent> pop(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
    RequestEvent e = events_.front();
    events_.pop_front();
    return e;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<RequestEvent> events_;
};

}  // namespace tessera
