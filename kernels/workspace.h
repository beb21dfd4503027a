#pragma once
// Scratch memory for a forward pass: one backend allocation carved into
// aligned regions, laid out once for the largest batch, so every region has
// a fixed address for the life of the runner (a GPU backend can capture
// graphs over them) and nothing is allocated while a step runs.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/backend.h"

namespace tessera {

class Workspace {
 public:
  // A region's place, valid once the workspace is committed.
  struct Region {
    size_t offset = 0;
    size_t bytes = 0;
  };

  // Before commit(): reserves `count` elements of T. Throws on overflow.
  template <typename T>
  Region reserve(size_t count) {
    return reserve_bytes(count, sizeof(T));
  }
  // Allocates every reserved region in one buffer.
  void commit(Backend& backend);

  template <typename T>
  T* get(const Region& region) const {
    return static_cast<T*>(address(region));
  }

 private:
  static constexpr size_t kAlignment = 256;  // enough for any vector load and GPU coalescing

  Region reserve_bytes(size_t count, size_t elem_bytes);
  void* address(const Region& region) const;

  size_t total_ = 0;
  size_t regions_ = 0;
  DeviceBuffer buffer_;
};

}  // namespace tessera
