#include "quant/int_matrix_codec.h"

#include <cstring>

#include "engine/core/checked_math.h"
#include "engine/core/error.h"

namespace tessera::quant {
namespace {

constexpr uint32_t kVersion = 1;

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

template <typename T>
void put_array(std::string& out, const std::vector<T>& v) {
  put<uint64_t>(out, v.size());
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    T v;
    take(&v, sizeof(v));
    return v;
  }
  template <typename T>
  std::vector<T> get_array(uint64_t expected, const char* what) {
    const uint64_t n = get<uint64_t>();
    if (n != expected) throw Error("cached int matrix: " + std::string(what) + " holds " + std::to_string(n) + ", the shape needs " + std::to_string(expected));
    const std::optional<uint64_t> n_bytes = checked_mul(n, sizeof(T));
    if (!n_bytes || *n_bytes > bytes_.size() - at_) throw Error("cached int matrix: ends early");
    std::vector<T> v(n);
    take(v.data(), *n_bytes);
    return v;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  void take(void* out, uint64_t n) {
    if (n > bytes_.size() - at_) throw Error("cached int matrix: ends early");
    if (n == 0) return;  // an empty array's data() may be null
    std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
  }
  const std::string& bytes_;
  size_t at_ = 0;
};

}  // namespace

std::string encode_int_matrix(const IntMatrix& m) {
  std::string out;
  put<uint32_t>(out, kVersion);
  put<uint8_t>(out, uint8_t(m.scheme.storage));
  put<int32_t>(out, m.scheme.group_size);
  put<uint8_t>(out, m.scheme.has_zero_points);
  put<uint8_t>(out, uint8_t(m.scheme.activation));
  put<int64_t>(out, m.rows);
  put<int64_t>(out, m.cols);
  put_array(out, m.data);
  put_array(out, m.scales);
  put_array(out, m.zeros);
  return out;
}

IntMatrix decode_int_matrix(const std::string& bytes) {
  Reader r(bytes);
  if (r.get<uint32_t>() != kVersion) throw Error("cached int matrix: unknown version");
  IntMatrix m;
  m.scheme.storage = DType(r.get<uint8_t>());
  m.scheme.group_size = r.get<int32_t>();
  m.scheme.has_zero_points = r.get<uint8_t>() != 0;
  m.scheme.activation = ActivationPolicy(r.get<uint8_t>());
  m.scheme.scale_dtype = DType::kF32;
  m.rows = r.get<int64_t>();
  m.cols = r.get<int64_t>();
  const bool int4 = m.scheme.storage == DType::kInt4;
  // No real matrix has a side of 2^31; bounding them keeps the arithmetic below in range.
  constexpr int64_t kMaxSide = int64_t(1) << 31;
  if ((!int4 && m.scheme.storage != DType::kI8) || m.rows <= 0 || m.cols <= 0 || m.rows > kMaxSide || m.cols > kMaxSide ||
      m.scheme.group_size <= 0 || (int4 && m.cols % 2)) {
    throw Error("cached int matrix: not an int8 or int4 matrix of a valid shape");
  }
  const std::optional<uint64_t> cells = checked_mul(uint64_t(m.rows), uint64_t(m.cols));
  const std::optional<uint64_t> groups = checked_mul(uint64_t(m.rows), uint64_t(m.n_groups()));
  if (!cells || !groups) throw Error("cached int matrix: shape overflows");
  m.data = r.get_array<uint8_t>(int4 ? *cells / 2 : *cells, "data");
  m.scales = r.get_array<float>(*groups, "scales");
  m.zeros = r.get_array<int8_t>(m.scheme.has_zero_points ? *groups : 0, "zero points");
  if (!r.done()) throw Error("cached int matrix: bytes after the end");
  return m;
}

std::string int_quant_config_bytes(const IntQuantConfig& c) {
  std::string out;
  put<int32_t>(out, c.bits);
  put<int64_t>(out, c.group_size);
  put<uint8_t>(out, c.symmetric);
  put<uint8_t>(out, uint8_t(c.activation));
  put<float>(out, c.clip);
  put<uint8_t>(out, uint8_t(c.range_fit));
  put_array(out, c.row_clips);
  put_array(out, c.row_fits);
  put_array(out, c.column_importance);
  return out;
}

}  // namespace tessera::quant
