#include "quant/int_matrix_codec.h"

#include "engine/core/checked_math.h"
#include "engine/core/error.h"
#include "engine/io/byte_codec.h"

namespace tessera::quant {
namespace {

constexpr uint32_t kVersion = 1;

}  // namespace

std::string encode_int_matrix(const IntMatrix& m) {
  ByteWriter out;
  out.put<uint32_t>(kVersion);
  out.put<uint8_t>(uint8_t(m.scheme.storage));
  out.put<int32_t>(m.scheme.group_size);
  out.put<uint8_t>(m.scheme.has_zero_points);
  out.put<uint8_t>(uint8_t(m.scheme.activation));
  out.put<int64_t>(m.rows);
  out.put<int64_t>(m.cols);
  out.put_array(m.data);
  out.put_array(m.scales);
  out.put_array(m.zeros);
  return out.take();
}

IntMatrix decode_int_matrix(const std::string& bytes) {
  ByteReader r(bytes, "cached int matrix");
  if (r.get<uint32_t>() != kVersion) r.fail("unknown version");
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
    r.fail("not an int8 or int4 matrix of a valid shape");
  }
  const std::optional<uint64_t> cells = checked_mul(uint64_t(m.rows), uint64_t(m.cols));
  const std::optional<uint64_t> groups = checked_mul(uint64_t(m.rows), uint64_t(m.n_groups()));
  if (!cells || !groups) r.fail("shape overflows");
  m.data = r.get_array<uint8_t>();
  m.scales = r.get_array<float>();
  m.zeros = r.get_array<int8_t>();
  if (m.data.size() != (int4 ? *cells / 2 : *cells) || m.scales.size() != *groups ||
      m.zeros.size() != (m.scheme.has_zero_points ? *groups : 0)) {
    r.fail("its arrays do not match its shape");
  }
  if (!r.done()) r.fail("bytes after the end");
  return m;
}

std::string int_quant_config_bytes(const IntQuantConfig& c) {
  ByteWriter out;
  out.put<int32_t>(c.bits);
  out.put<int64_t>(c.group_size);
  out.put<uint8_t>(c.symmetric);
  out.put<uint8_t>(uint8_t(c.activation));
  out.put<float>(c.clip);
  out.put<uint8_t>(uint8_t(c.range_fit));
  out.put_array(c.row_clips);
  out.put_array(c.row_fits);
  out.put_array(c.column_importance);
  return out.take();
}

}  // namespace tessera::quant
