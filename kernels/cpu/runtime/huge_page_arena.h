#pragma once
// Weights copied into anonymous memory backed by 2 MiB pages (transparent
// huge pages, asked for with MADV_HUGEPAGE). A decode step streams every
// weight once; read in place from the checkpoint's mapping, whose pages are
// 4 KiB, the TLB misses on every page. From huge pages an MoE decode step
// ran ~20% faster on a Zen 4 (docs/performance.md).
//
// Weights are packed one after another into chunks, so small matrices (an
// expert's) share huge pages; a chunk stays mapped while any weight in it
// lives. Pages are committed as they are written, so a chunk's unused tail
// costs at most one huge page.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace tessera::cpu {

class HugePageArena {
 public:
  // A copy of `bytes` bytes of `data`, 64-byte aligned, with the chunk that
  // holds it (keep `chunk` alive while the copy is read). Null when the
  // memory cannot be mapped. The same bytes asked for again (a tied
  // embedding and output head) share one copy.
  struct Copy {
    std::shared_ptr<const void> chunk;
    const uint8_t* data = nullptr;
  };
  Copy copy(const void* data, size_t bytes);

  // `bytes` of zeroed, 64-byte-aligned memory to fill once (weights packed
  // in place), with the chunk that holds it. Null when the memory cannot be
  // mapped.
  struct Space {
    std::shared_ptr<const void> chunk;
    uint8_t* data = nullptr;
  };
  Space reserve(size_t bytes);

  // Whether weights should be copied here: the kernel grants huge pages to
  // memory that asks for them (/sys/kernel/mm/transparent_hugepage/enabled
  // is not "never") and TESSERA_CPU_HUGE_PAGES is not 0 (1 or unset; any
  // other value is an error naming it). With 0 weights are read in place
  // from the checkpoint's mapping.
  static bool wanted();

 private:
  struct Chunk;
  // Space for `bytes` in the current chunk, or a new one (mutex_ held).
  std::shared_ptr<Chunk> take(size_t bytes, size_t& at);
  std::mutex mutex_;
  // The chunk being filled, held only by its weights: once a model's weights
  // are gone, so is their memory.
  std::weak_ptr<Chunk> current_;
  size_t used_ = 0;                 // bytes of it taken
  // Copies made, by source and size; reused only while their chunk lives and
  // their bytes still equal the source's (an address can be mapped again).
  struct Made {
    std::weak_ptr<Chunk> chunk;
    const uint8_t* data;
  };
  std::map<std::pair<const void*, size_t>, Made> made_;
};

}  // namespace tessera::cpu
