#pragma once
// GGUF metadata values. The numeric type tags are the file format's own.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tessera::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5,
  kFloat32 = 6, kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};

std::string_view value_type_name(ValueType type);
bool is_known_value_type(uint32_t raw);

struct Value;

struct Array {
  ValueType element_type = ValueType::kUint8;
  std::vector<Value> items;
};

struct Value {
  ValueType type = ValueType::kUint8;
  std::variant<uint64_t, int64_t, double, bool, std::string, std::shared_ptr<Array>> data;

  std::optional<uint64_t> as_uint() const;  // any non-negative integer
  std::optional<int64_t> as_int() const;    // any integer that fits
  std::optional<double> as_float() const;   // any number
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;
  const Array* as_array() const;
  // Short rendering for `tessera inspect`: arrays show their length.
  std::string summary() const;
};

struct KeyValue {
  std::string key;
  Value value;
};

}  // namespace tessera::gguf
