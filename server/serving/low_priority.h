#pragma once
// Work a client asks for that may take long (parsing a large body,
// lowering and compiling an output grammar) runs on a thread of lower CPU
// priority than the model loops, so that on a busy machine the loops win
// the cores and other clients' tokens keep coming. The caller waits for it.
#include <functional>

namespace tessera {

// How much lower (in nice levels) such work runs than the rest of the process.
constexpr int kLowPriorityNice = 19;

// Runs `work` on a new thread at kLowPriorityNice and waits; an exception
// it throws is rethrown here. The calling thread's own priority is untouched.
void run_at_low_priority(const std::function<void()>& work);

}  // namespace tessera
