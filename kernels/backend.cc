#include "kernels/backend.h"

#include <utility>

namespace tessera {

std::unique_ptr<Communicator> Backend::create_communicator(const CommunicatorOptions&) {
  throw CollectiveError(describe() + ": no collective transport for this backend");
}

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kDequantize: return "dequantize";
    case Op::kEmbedding: return "embedding";
    case Op::kRmsNorm: return "rms_norm";
    case Op::kRope: return "rope";
    case Op::kLinear: return "linear";
    case Op::kKvWrite: return "kv_write";
    case Op::kAttention: return "attention";
    case Op::kGatedActivation: return "gated_activation";
    case Op::kAdd: return "add";
    case Op::kScale: return "scale";
    case Op::kSoftcap: return "softcap";
    case Op::kGatherRows: return "gather_rows";
    case Op::kScatterAddRows: return "scatter_add_rows";
  }
  return "unknown";
}

DeviceBuffer::DeviceBuffer(Backend& backend, size_t bytes)
    : backend_(&backend), data_(bytes ? backend.allocate(bytes) : nullptr), size_(bytes) {}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : backend_(other.backend_), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    backend_ = other.backend_;
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() { release(); }

void DeviceBuffer::release() {
  if (data_ && backend_) backend_->deallocate(data_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace tessera
