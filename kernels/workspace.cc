#include "kernels/workspace.h"

#include "engine/core/checked_math.h"
#include "engine/core/error.h"

namespace tessera {

Workspace::Region Workspace::reserve_bytes(size_t count, size_t elem_bytes) {
  if (buffer_.data()) throw Error("workspace: reserve after commit");
  const auto bytes = checked_mul(count, elem_bytes);
  const auto padded = bytes ? checked_align_up(*bytes, kAlignment) : std::nullopt;
  const auto end = padded ? checked_add(total_, *padded) : std::nullopt;
  if (!end) throw Error("workspace: size overflows");
  const Region region{total_, *bytes};
  // Successive regions start at different offsets within a 4 KiB page, so
  // that buffers read and written together do not alias in the store buffer.
  const size_t stagger = (++regions_ % 16) * kAlignment;
  total_ = size_t(*end) + stagger;
  return region;
}

void Workspace::commit(Backend& backend) {
  buffer_ = DeviceBuffer(backend, total_);
  // Zeroed at load: every region starts defined, and its pages are mapped
  // before the first step rather than faulted in by the kernels.
  backend.fill_zero(buffer_.data(), total_, backend.default_stream());
  backend.default_stream().synchronize();
}

void* Workspace::address(const Region& region) const {
  if (!buffer_.data() && total_ > 0) throw Error("workspace: used before commit");
  return static_cast<uint8_t*>(buffer_.data()) + region.offset;
}

}  // namespace tessera
