#include "kernels/cpu/runtime/resident_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace tessera::cpu {

void make_resident(const void* data, size_t bytes) {
  if (!data || bytes == 0) return;
  const long page_size = sysconf(_SC_PAGESIZE);
  const uintptr_t page = page_size > 0 ? uintptr_t(page_size) : 4096;
  const uintptr_t begin = uintptr_t(data) / page * page;
  const uintptr_t end = (uintptr_t(data) + bytes - 1) / page * page + page;
  void* const first = reinterpret_cast<void*>(begin);
#ifdef MADV_POPULATE_READ
  // One call maps the whole range (Linux 5.14 and later).
  if (madvise(first, end - begin, MADV_POPULATE_READ) == 0) return;
#endif
  madvise(first, end - begin, MADV_WILLNEED);
  unsigned sink = 0;
  for (uintptr_t p = begin; p < end; p += page) sink += *reinterpret_cast<const volatile uint8_t*>(p);
  (void)sink;
}

void release_pages(const void* data, size_t bytes) {
#ifdef MADV_PAGEOUT
  if (!data || bytes == 0) return;
  const long page_size = sysconf(_SC_PAGESIZE);
  const uintptr_t page = page_size > 0 ? uintptr_t(page_size) : 4096;
  const uintptr_t begin = (uintptr_t(data) + page - 1) / page * page, end = (uintptr_t(data) + bytes) / page * page;
  if (begin < end) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace tessera::cpu
