#pragma once
// Decoder::timed, for the files that define the decoder's steps.
#include "engine/core/op_profile.h"
#include "models/decoder.h"

namespace tessera {

// Runs one step of the pass. With a profile, the stream is drained around
// the step so its wall time (and the weights it read) is charged to `name`.
template <class Run>
void Decoder::timed(const Pass& pass, const char* name, const Run& run, uint64_t weight_bytes) const {
  if (!profile_) {
    run();
    return;
  }
  pass.stream.synchronize();
  const auto t0 = ProfileClock::now();
  run();
  pass.stream.synchronize();
  profile_->add(name, seconds_between(t0, ProfileClock::now()), weight_bytes);
}

}  // namespace tessera
