#pragma once
// Software prefetch of the weights the integer kernels stream.
//
// A decode step reads each weight once from memory, in calls too short for
// the hardware prefetchers to ramp up (SmolLM2's 576 x 576 4-bit projection
// is 166 KB, 83 KB a thread): without help such a call ran at under half
// the read bandwidth. A kernel's reads advance through one contiguous range
// (the rows of a tile, and the row groups of a task, lie one after another),
// so each kernel asks for the line this many bytes beyond where it reads.
#include <xmmintrin.h>

#include <cstdint>

namespace tessera::cpu {

constexpr int64_t kWeightPrefetchBytes = 4096;

inline void prefetch_weights_ahead(const uint8_t* reading) {
  // Past the end of the weights the hint is dropped: prefetches never fault.
  _mm_prefetch(reinterpret_cast<const char*>(reading + kWeightPrefetchBytes), _MM_HINT_T0);
}

}  // namespace tessera::cpu
