#pragma once
// Weights read in place from a file mapping are brought into memory when
// they are placed, not by page faults in the middle of the first request
// (which would stall every thread of its forward pass in turn).
#include <cstddef>

namespace tessera::cpu {

// Maps every page of [data, data + bytes) into this process, reading it from
// the file if it is not in the page cache. Best effort: memory that cannot
// be populated ahead is left to fault in on first use.
void make_resident(const void* data, size_t bytes);

// Asks the kernel to reclaim the whole pages of [data, data + bytes) once
// they have been copied (MADV_PAGEOUT): a checkpoint mapping's pages leave
// the process's resident memory, so a model is not counted twice. The bytes
// stay as they are (a file's are read again on demand; anonymous memory
// without swap stays put).
void release_pages(const void* data, size_t bytes);

}  // namespace tessera::cpu
