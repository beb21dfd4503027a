#include "kernels/backend.h"

#include "engine/error.h"

namespace tessera {

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kDequantize: return "dequantize";
  }
  return "unknown";
}

DeviceBuffer::DeviceBuffer(Backend& backend, size_t bytes)
    : backend_(backend), data_(bytes ? backend.allocate(bytes) : nullptr), size_(bytes) {}

DeviceBuffer::~DeviceBuffer() {
  if (data_) backend_.deallocate(data_);
}

}  // namespace tessera
