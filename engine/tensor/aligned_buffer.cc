#include "engine/tensor/aligned_buffer.h"

#include <cstdlib>
#include <new>

namespace tessera {

void AlignedBuffer::Free::operator()(void* p) const { std::free(p); }

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  const size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  if (rounded < bytes) throw std::bad_alloc();
  void* p = std::aligned_alloc(kHostAlignment, rounded);
  if (!p) throw std::bad_alloc();
  data_.reset(p);
}

}  // namespace tessera
