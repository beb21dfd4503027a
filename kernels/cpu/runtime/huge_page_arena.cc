#include "kernels/cpu/runtime/huge_page_arena.h"

#include "engine/core/error.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace tessera::cpu {
namespace {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kChunkBytes = size_t(64) << 20;
constexpr size_t kAlignment = 64;

size_t round_up(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }

}  // namespace

// One mapping, its usable span starting on a 2 MiB boundary.
struct HugePageArena::Chunk {
  void* mapping = nullptr;
  size_t mapped = 0;
  uint8_t* base = nullptr;
  size_t size = 0;

  explicit Chunk(size_t bytes) {
    const size_t span = round_up(bytes, kHugePage) + kHugePage;  // room to align the start
    void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    mapping = p;
    mapped = span;
    base = reinterpret_cast<uint8_t*>(round_up(reinterpret_cast<uintptr_t>(p), kHugePage));
    size = round_up(bytes, kHugePage);
    madvise(base, size, MADV_HUGEPAGE);
  }
  ~Chunk() {
    if (mapping) munmap(mapping, mapped);
  }
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;
};

bool HugePageArena::wanted() {
  if (const char* choice = std::getenv("TESSERA_CPU_HUGE_PAGES")) {
    const std::string value = choice;
    if (value == "0") return false;
    if (value != "1") throw Error("TESSERA_CPU_HUGE_PAGES: '" + value + "' (0 or 1)");
  }
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(f, modes);
  return !modes.empty() && modes.find("[never]") == std::string::npos;
}

std::shared_ptr<HugePageArena::Chunk> HugePageArena::take(size_t bytes, size_t& at) {
  std::shared_ptr<Chunk> chunk = current_.lock();
  at = round_up(used_, kAlignment);
  if (!chunk || at + bytes > chunk->size) {
    chunk = std::make_shared<Chunk>(std::max(bytes, kChunkBytes));
    if (!chunk->base) return nullptr;
    current_ = chunk;
    at = 0;
    std::erase_if(made_, [](const auto& entry) { return entry.second.chunk.expired(); });
  }
  used_ = at + bytes;
  return chunk;
}

HugePageArena::Space HugePageArena::reserve(size_t bytes) {
  if (bytes == 0) return {};
  std::lock_guard lock(mutex_);
  size_t at = 0;
  std::shared_ptr<Chunk> chunk = take(bytes, at);
  if (!chunk) return {};
  uint8_t* data = chunk->base + at;
  return {std::move(chunk), data};
}

HugePageArena::Copy HugePageArena::copy(const void* data, size_t bytes) {
  if (!data || bytes == 0) return {};
  std::shared_ptr<Chunk> chunk;
  size_t at = 0;
  {
    std::lock_guard lock(mutex_);  // loads of several models may run at once
    const auto key = std::make_pair(data, bytes);
    if (const auto it = made_.find(key); it != made_.end()) {
      if (auto alive = it->second.chunk.lock(); alive && std::memcmp(it->second.data, data, bytes) == 0) {
        return {std::move(alive), it->second.data};
      }
      made_.erase(it);
    }
    chunk = take(bytes, at);
    if (!chunk) return {};
    // Copied under the lock: a second request for the same bytes must not
    // find the copy before it is whole.
    std::memcpy(chunk->base + at, data, bytes);
    made_[key] = {chunk, chunk->base + at};
  }
  return {chunk, chunk->base + at};
}

}  // namespace tessera::cpu
