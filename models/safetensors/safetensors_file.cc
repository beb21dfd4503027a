#include "models/safetensors/safetensors_file.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/core/checked_math.h"
#include "engine/core/error.h"

namespace tessera::safetensors {

using nlohmann::json;

std::optional<DType> dtype_from_safetensors(std::string_view name) {
  static constexpr std::string_view kNames[] = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8",
                                                "U64", "U32", "U16", "U8", "BOOL", "F8_E4M3", "F8_E5M2"};
  if (std::find(std::begin(kNames), std::end(kNames), name) == std::end(kNames)) return std::nullopt;
  return dtype_from_name(name);
}

class HeaderParser {
 public:
  explicit HeaderParser(File& file) : file_(file) {}

  void run() {
    const std::span<const uint8_t> bytes = file_.bytes_;
    if (bytes.size() < 8) fail("truncated: shorter than the 8-byte header length");
    uint64_t header_len;
    std::memcpy(&header_len, bytes.data(), 8);
    if (header_len > kMaxHeaderBytes) {
      fail("header of " + std::to_string(header_len) + " bytes exceeds the limit of " + std::to_string(kMaxHeaderBytes));
    }
    if (header_len > bytes.size() - 8) fail("truncated: header of " + std::to_string(header_len) + " bytes runs past the end of the file");
    file_.data_offset_ = 8 + header_len;
    const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 8), size_t(header_len));
    const json header = parse_json(text);
    if (!header.is_object()) fail("header is not a JSON object");
    for (const auto& [key, value] : header.items()) {
      if (key == "__metadata__") read_metadata(value);
      else file_.tensors_.push_back(read_tensor(key, value));
    }
    check_ranges(bytes.size() - file_.data_offset_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error(file_.name_ + ": " + what); }
  [[noreturn]] void fail_tensor(const std::string& name, const std::string& what) const {
    fail("tensor '" + name + "': " + what);
  }

  json parse_json(std::string_view text) const {
    auto limit_depth = [this](int depth, json::parse_event_t, json&) {
      if (depth > kMaxJsonDepth) fail("header JSON nested deeper than " + std::to_string(kMaxJsonDepth));
      return true;
    };
    try {
      return json::parse(text, limit_depth);
    } catch (const json::exception& e) {
      fail(std::string("header is not valid JSON: ") + e.what());
    }
  }

  void read_metadata(const json& value) {
    if (!value.is_object()) fail("__metadata__ is not an object");
    for (const auto& [k, v] : value.items()) {
      if (!v.is_string()) fail("__metadata__ key '" + k + "' is not a string");
      file_.metadata_[k] = v.get<std::string>();
    }
  }

  static bool is_count(const json& v) { return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0); }

  TensorInfo read_tensor(const std::string& name, const json& entry) const {
    if (!entry.is_object()) fail_tensor(name, "entry is not an object");
    TensorInfo t;
    t.name = name;
    const auto dtype_it = entry.find("dtype");
    if (dtype_it == entry.end() || !dtype_it->is_string()) fail_tensor(name, "missing string 'dtype'");
    const auto dtype = dtype_from_safetensors(dtype_it->get<std::string>());
    if (!dtype) fail_tensor(name, "unknown dtype '" + dtype_it->get<std::string>() + "'");
    t.dtype = *dtype;
    const auto shape_it = entry.find("shape");
    if (shape_it == entry.end() || !shape_it->is_array()) fail_tensor(name, "missing array 'shape'");
    if (shape_it->size() > kMaxDims) fail_tensor(name, std::to_string(shape_it->size()) + " dimensions (at most 8)");
    uint64_t n_elems = 1;
    for (const json& dim : *shape_it) {
      if (!is_count(dim)) fail_tensor(name, "shape entry " + dim.dump() + " is not a non-negative integer");
      const auto product = checked_mul(n_elems, dim.get<uint64_t>());
      if (!product || *product > uint64_t(INT64_MAX)) fail_tensor(name, "element count overflows");
      n_elems = *product;
      t.shape.push_back(dim.get<int64_t>());
    }
    const auto offsets_it = entry.find("data_offsets");
    if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2 || !is_count((*offsets_it)[0]) ||
        !is_count((*offsets_it)[1])) {
      fail_tensor(name, "'data_offsets' must be two non-negative integers");
    }
    t.begin = (*offsets_it)[0].get<uint64_t>();
    t.end = (*offsets_it)[1].get<uint64_t>();
    if (t.end < t.begin) fail_tensor(name, "data_offsets end before they begin");
    const auto n_bytes = dtype_bytes(t.dtype, n_elems);
    if (!n_bytes) fail_tensor(name, "byte size overflows");
    if (*n_bytes != t.end - t.begin) {
      fail_tensor(name, "shape and dtype need " + std::to_string(*n_bytes) + " bytes but data_offsets span " +
                            std::to_string(t.end - t.begin));
    }
    return t;
  }

  void check_ranges(uint64_t data_size) const {
    std::vector<const TensorInfo*> sorted;
    for (const TensorInfo& t : file_.tensors_) {
      if (t.end > data_size) {
        fail_tensor(t.name, "data [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ") lies outside the " +
                                std::to_string(data_size) + " data bytes");
      }
      sorted.push_back(&t);
    }
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
    for (size_t i = 1; i < sorted.size(); ++i) {
      if (sorted[i - 1]->end > sorted[i]->begin) fail_tensor(sorted[i]->name, "data overlaps tensor '" + sorted[i - 1]->name + "'");
    }
  }

  File& file_;
};

File File::open(const std::string& path) {
  File file;
  file.mapping_ = MappedFile::open(path);
  file.bytes_ = file.mapping_.bytes();
  file.name_ = path;
  HeaderParser(file).run();
  return file;
}

File File::parse(std::span<const uint8_t> bytes, std::string name) {
  File file;
  file.bytes_ = bytes;
  file.name_ = std::move(name);
  HeaderParser(file).run();
  return file;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  for (const TensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::span<const uint8_t> File::tensor_bytes(const TensorInfo& tensor) const {
  return bytes_.subspan(size_t(data_offset_ + tensor.begin), size_t(tensor.end - tensor.begin));
}

}  // namespace tessera::safetensors
