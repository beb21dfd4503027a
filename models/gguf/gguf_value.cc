#include "models/gguf/gguf_value.h"

#include <cstdio>

namespace tessera::gguf {

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::kUint8: return "uint8";
    case ValueType::kInt8: return "int8";
    case ValueType::kUint16: return "uint16";
    case ValueType::kInt16: return "int16";
    case ValueType::kUint32: return "uint32";
    case ValueType::kInt32: return "int32";
    case ValueType::kFloat32: return "float32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "string";
    case ValueType::kArray: return "array";
    case ValueType::kUint64: return "uint64";
    case ValueType::kInt64: return "int64";
    case ValueType::kFloat64: return "float64";
  }
  return "unknown";
}

bool is_known_value_type(uint32_t raw) { return raw <= uint32_t(ValueType::kFloat64); }

std::optional<uint64_t> Value::as_uint() const {
  if (auto* u = std::get_if<uint64_t>(&data)) return *u;
  if (auto* i = std::get_if<int64_t>(&data); i && *i >= 0) return uint64_t(*i);
  return std::nullopt;
}

std::optional<int64_t> Value::as_int() const {
  if (auto* i = std::get_if<int64_t>(&data)) return *i;
  if (auto* u = std::get_if<uint64_t>(&data); u && *u <= uint64_t(INT64_MAX)) return int64_t(*u);
  return std::nullopt;
}

std::optional<double> Value::as_float() const {
  if (auto* d = std::get_if<double>(&data)) return *d;
  if (auto* u = std::get_if<uint64_t>(&data)) return double(*u);
  if (auto* i = std::get_if<int64_t>(&data)) return double(*i);
  return std::nullopt;
}

std::optional<bool> Value::as_bool() const {
  if (auto* b = std::get_if<bool>(&data)) return *b;
  return std::nullopt;
}

const std::string* Value::as_string() const { return std::get_if<std::string>(&data); }

const Array* Value::as_array() const {
  auto* a = std::get_if<std::shared_ptr<Array>>(&data);
  return a ? a->get() : nullptr;
}

std::string Value::summary() const {
  if (auto* u = std::get_if<uint64_t>(&data)) return std::to_string(*u);
  if (auto* i = std::get_if<int64_t>(&data)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&data)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", *d);
    return buf;
  }
  if (auto* b = std::get_if<bool>(&data)) return *b ? "true" : "false";
  if (auto* s = std::get_if<std::string>(&data)) {
    if (s->size() <= 60) return "\"" + *s + "\"";
    return "\"" + s->substr(0, 57) + "...\" (" + std::to_string(s->size()) + " bytes)";
  }
  const Array* a = as_array();
  return "[" + std::string(value_type_name(a->element_type)) + " x " + std::to_string(a->items.size()) + "]";
}

}  // namespace tessera::gguf
