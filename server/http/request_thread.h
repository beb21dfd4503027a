#pragma once
// Request handlers run on threads whose stack size is set here, not
// inherited from `ulimit -s` (which may be anything, or unlimited): every
// recursive walk over a request is bounded in depth, and those bounds are
// checked against this size (tests/python/test_attacks.py sends the
// deepest input each limit allows down every route).
#include <cstddef>
#include <functional>

namespace tessera {

constexpr size_t kRequestThreadStackBytes = size_t(8) << 20;

// Runs `work` on a new detached thread with `stack_bytes` of stack; throws
// std::system_error when the thread cannot be started.
void start_request_thread(std::function<void()> work, size_t stack_bytes = kRequestThreadStackBytes);

}  // namespace tessera
