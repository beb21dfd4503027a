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
#include <memory>
#include <mutex>

namespace tessera::cpu {

class HugePageArena {
 public:
  // A copy of `bytes` bytes of `data`, 64-byte aligned, with the chunk that
  // holds it (keep `chunk` alive while the copy is read). Null when the
  // system grants no huge pages or the memory cannot be mapped.
  struct Copy {
    std::shared_ptr<const void> chunk;
    const uint8_t* data = nullptr;
  };
  Copy copy(const void* data, size_t bytes);

  // Whether the kernel grants huge pages to memory that asks for them
  // (/sys/kernel/mm/transparent_hugepage/enabled is not "never").
  static bool available();

 private:
  struct Chunk;
  std::mutex mutex_;
  // The chunk being filled, held only by its weights: once a model's weights
  // are gone, so is their memory.
  std::weak_ptr<Chunk> current_;
  size_t used_ = 0;                 // bytes of it taken
};

}  // namespace tessera::cpu
