#pragma once
// A device's ordered queue of work and the points in it others wait for.
// Every backend implements both; the collectives take a stream to order
// their transfers after the kernels that produce the data.

namespace tessera {

// A point in a stream's work that other streams, or the host, can wait for.
class Event {
 public:
  virtual ~Event() = default;
  // Blocks the host until the work before the recording point has finished.
  virtual void synchronize() = 0;
};

class Stream {
 public:
  virtual ~Stream() = default;
  // Blocks until every kernel queued on the stream has finished.
  virtual void synchronize() = 0;
  virtual void record(Event& event) = 0;
  // Work queued after this waits for the event's recording point.
  virtual void wait(Event& event) = 0;
};

}  // namespace tessera
