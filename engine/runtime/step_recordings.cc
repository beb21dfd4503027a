#include "engine/runtime/step_recordings.h"

namespace tessera {

void StepRecordings::run(const StepShape& shape, Backend& backend, Stream& stream, const std::function<void()>& enqueue) {
  if (!recordable(shape)) {
    enqueue();
    return;
  }
  Entry& entry = entries_[shape];
  if (!entry.recording && (!entry.seen || entry.unsupported)) {
    entry.seen = true;
    enqueue();
    return;
  }
  if (!entry.recording) {
    entry.recording = backend.record(stream, enqueue);
    if (!entry.recording) {
      entry.unsupported = true;
      enqueue();
      return;
    }
  }
  entry.recording->replay(stream);
}

size_t StepRecordings::recorded() const {
  size_t n = 0;
  for (const auto& [shape, entry] : entries_) n += entry.recording != nullptr;
  return n;
}

}  // namespace tessera
