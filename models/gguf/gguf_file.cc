#include "models/gguf/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "engine/core/checked_math.h"
#include "engine/core/error.h"

namespace tessera::gguf {

// Reads the file front to back with a bounds check on every read.
class Parser {
 public:
  Parser(File& file) : file_(file), bytes_(file.bytes_) {}

  void run() {
    read_header();
    read_metadata();
    read_alignment();
    read_tensor_infos();
    place_data_section();
    check_tensor_ranges();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw Error(file_.name_ + ": " + what); }

  void need(uint64_t n, const char* what) const {
    if (n > bytes_.size() - pos_) {
      fail("truncated: " + std::string(what) + " needs " + std::to_string(n) + " bytes at offset " +
           std::to_string(pos_) + ", file has " + std::to_string(bytes_.size()));
    }
  }

  template <typename T>
  T read(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const char* what) {
    const uint64_t len = read<uint64_t>(what);
    if (len > kMaxStringBytes) {
      fail(std::string(what) + ": string of " + std::to_string(len) + " bytes exceeds the limit of " +
           std::to_string(kMaxStringBytes));
    }
    need(len, what);
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), size_t(len));
    pos_ += len;
    return s;
  }

  void read_header() {
    need(4, "magic");
    if (std::memcmp(bytes_.data(), "GGUF", 4) != 0) fail("not a GGUF file (bad magic)");
    pos_ = 4;
    const uint32_t version = read<uint32_t>("version");
    if (version == 1) fail("GGUF version 1 is not supported (versions 2 and 3 are)");
    if (version != 2 && version != 3) {
      if ((version & 0xffff) == 0 && version != 0) fail("big-endian GGUF files are not supported");
      fail("unsupported GGUF version " + std::to_string(version) + " (versions 2 and 3 are)");
    }
    file_.version_ = version;
    n_tensors_ = read<uint64_t>("tensor count");
    n_kv_ = read<uint64_t>("metadata count");
    // Each tensor info takes at least 24 bytes and each key/value at least 13:
    // counts beyond what the file can hold are corrupt.
    if (n_tensors_ > (bytes_.size() - pos_) / 24) fail("tensor count " + std::to_string(n_tensors_) + " exceeds what the file can hold");
    if (n_kv_ > (bytes_.size() - pos_) / 13) fail("metadata count " + std::to_string(n_kv_) + " exceeds what the file can hold");
  }

  Value read_value(ValueType type, const std::string& key, uint32_t depth) {
    Value v;
    v.type = type;
    const char* what = "metadata value";
    switch (type) {
      case ValueType::kUint8: v.data = uint64_t(read<uint8_t>(what)); break;
      case ValueType::kInt8: v.data = int64_t(read<int8_t>(what)); break;
      case ValueType::kUint16: v.data = uint64_t(read<uint16_t>(what)); break;
      case ValueType::kInt16: v.data = int64_t(read<int16_t>(what)); break;
      case ValueType::kUint32: v.data = uint64_t(read<uint32_t>(what)); break;
      case ValueType::kInt32: v.data = int64_t(read<int32_t>(what)); break;
      case ValueType::kUint64: v.data = read<uint64_t>(what); break;
      case ValueType::kInt64: v.data = read<int64_t>(what); break;
      case ValueType::kFloat32: v.data = double(read<float>(what)); break;
      case ValueType::kFloat64: v.data = read<double>(what); break;
      case ValueType::kBool: {
        const uint8_t b = read<uint8_t>(what);
        if (b > 1) fail("key '" + key + "': bool value " + std::to_string(b) + " is neither 0 nor 1");
        v.data = b == 1;
        break;
      }
      case ValueType::kString: v.data = read_string(what); break;
      case ValueType::kArray: v.data = read_array(key, depth); break;
    }
    return v;
  }

  std::shared_ptr<Array> read_array(const std::string& key, uint32_t depth) {
    if (depth >= kMaxArrayNesting) fail("key '" + key + "': arrays nested deeper than " + std::to_string(kMaxArrayNesting));
    const uint32_t raw_type = read<uint32_t>("array type");
    if (!is_known_value_type(raw_type)) fail("key '" + key + "': unknown array element type " + std::to_string(raw_type));
    const uint64_t count = read<uint64_t>("array length");
    if (count > kMaxArrayElements) {
      fail("key '" + key + "': array of " + std::to_string(count) + " elements exceeds the limit of " +
           std::to_string(kMaxArrayElements));
    }
    if (count > bytes_.size() - pos_) fail("key '" + key + "': array of " + std::to_string(count) + " elements runs past the end of the file");
    auto array = std::make_shared<Array>();
    array->element_type = ValueType(raw_type);
    array->items.reserve(size_t(count));
    for (uint64_t i = 0; i < count; ++i) array->items.push_back(read_value(array->element_type, key, depth + 1));
    return array;
  }

  void read_metadata() {
    std::unordered_set<std::string> seen;
    for (uint64_t i = 0; i < n_kv_; ++i) {
      std::string key = read_string("metadata key");
      if (key.empty()) fail("metadata entry " + std::to_string(i) + " has an empty key");
      if (!seen.insert(key).second) fail("duplicate metadata key '" + key + "'");
      const uint32_t raw_type = read<uint32_t>("metadata type");
      if (!is_known_value_type(raw_type)) fail("key '" + key + "': unknown value type " + std::to_string(raw_type));
      Value value = read_value(ValueType(raw_type), key, 0);
      file_.metadata_.push_back({std::move(key), std::move(value)});
    }
  }

  void read_alignment() {
    const Value* v = file_.find("general.alignment");
    if (!v) return;
    if (v->type != ValueType::kUint32) fail("key 'general.alignment': type " + std::string(value_type_name(v->type)) + ", expected uint32");
    const uint64_t a = *v->as_uint();
    if (!is_power_of_two(a) || a > kMaxAlignment) {
      fail("key 'general.alignment': " + std::to_string(a) + " is not a power of two up to " + std::to_string(kMaxAlignment));
    }
    file_.alignment_ = a;
  }

  void read_tensor_infos() {
    std::unordered_set<std::string> seen;
    file_.tensors_.reserve(size_t(n_tensors_));
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      TensorInfo t;
      t.name = read_string("tensor name");
      if (!seen.insert(t.name).second) fail("tensor '" + t.name + "': duplicate name");
      const uint32_t n_dims = read<uint32_t>("tensor dimension count");
      if (n_dims == 0 || n_dims > kMaxDims) fail("tensor '" + t.name + "': " + std::to_string(n_dims) + " dimensions (1 to 4 allowed)");
      uint64_t n_elems = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        const uint64_t dim = read<uint64_t>("tensor dimension");
        auto product = checked_mul(n_elems, dim);
        if (dim == 0 || dim > uint64_t(INT64_MAX) || !product || *product > uint64_t(INT64_MAX)) {
          fail("tensor '" + t.name + "': dimension " + std::to_string(d) + " = " + std::to_string(dim) + " is zero or overflows");
        }
        n_elems = *product;
        t.shape.push_back(int64_t(dim));
      }
      const uint32_t raw_type = read<uint32_t>("tensor type");
      const auto dtype = dtype_from_gguf(raw_type);
      if (!dtype) fail("tensor '" + t.name + "': unknown tensor type " + std::to_string(raw_type));
      t.dtype = *dtype;
      t.offset = read<uint64_t>("tensor offset");
      if (t.offset % file_.alignment_ != 0) {
        fail("tensor '" + t.name + "': offset " + std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(file_.alignment_));
      }
      const DTypeInfo& info = dtype_info(t.dtype);
      if (uint64_t(t.shape[0]) % info.block_elems != 0) {
        fail("tensor '" + t.name + "': row of " + std::to_string(t.shape[0]) + " elements is not a whole number of " +
             std::string(info.name) + " blocks of " + std::to_string(info.block_elems));
      }
      const auto n_bytes = dtype_bytes(t.dtype, n_elems);
      if (!n_bytes) fail("tensor '" + t.name + "': byte size overflows");
      t.n_elems = n_elems;
      t.n_bytes = *n_bytes;
      file_.tensors_.push_back(std::move(t));
    }
  }

  void place_data_section() {
    const auto start = checked_align_up(pos_, file_.alignment_);
    if (!start) fail("data section offset overflows");
    if (!file_.tensors_.empty() && *start > bytes_.size()) fail("truncated: data section starts past the end of the file");
    file_.data_offset_ = *start;
  }

  void check_tensor_ranges() {
    const uint64_t data_size = bytes_.size() >= file_.data_offset_ ? bytes_.size() - file_.data_offset_ : 0;
    std::vector<const TensorInfo*> by_offset;
    for (const TensorInfo& t : file_.tensors_) {
      const auto end = checked_add(t.offset, t.n_bytes);
      if (!end || *end > data_size) {
        fail("tensor '" + t.name + "': data [" + std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
             ") lies outside the data section of " + std::to_string(data_size) + " bytes");
      }
      by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const TensorInfo& prev = *by_offset[i - 1];
      if (prev.offset + prev.n_bytes > by_offset[i]->offset) {
        fail("tensor '" + by_offset[i]->name + "': data overlaps tensor '" + prev.name + "'");
      }
    }
  }

  File& file_;
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

File File::open(const std::string& path) {
  File file;
  file.mapping_ = MappedFile::open(path);
  file.bytes_ = file.mapping_.bytes();
  file.name_ = path;
  Parser(file).run();
  return file;
}

File File::parse(std::span<const uint8_t> bytes, std::string name) {
  File file;
  file.bytes_ = bytes;
  file.name_ = std::move(name);
  Parser(file).run();
  return file;
}

const Value* File::find(std::string_view key) const {
  for (const KeyValue& kv : metadata_) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

void File::fail_key(std::string_view key, const std::string& what) const {
  throw Error(name_ + ": key '" + std::string(key) + "': " + what);
}

std::optional<std::string> File::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (const std::string* s = v->as_string()) return *s;
  fail_key(key, "type " + std::string(value_type_name(v->type)) + ", expected string");
}

std::optional<uint64_t> File::get_uint(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (auto u = v->as_uint()) return u;
  fail_key(key, "type " + std::string(value_type_name(v->type)) + ", expected a non-negative integer");
}

std::optional<double> File::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (auto f = v->as_float()) return f;
  fail_key(key, "type " + std::string(value_type_name(v->type)) + ", expected a number");
}

std::optional<bool> File::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return std::nullopt;
  if (auto b = v->as_bool()) return b;
  fail_key(key, "type " + std::string(value_type_name(v->type)) + ", expected bool");
}

const Array* File::get_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return nullptr;
  if (const Array* a = v->as_array()) return a;
  fail_key(key, "type " + std::string(value_type_name(v->type)) + ", expected array");
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  for (const TensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::span<const uint8_t> File::tensor_bytes(const TensorInfo& tensor) const {
  return bytes_.subspan(size_t(data_offset_ + tensor.offset), size_t(tensor.n_bytes));
}

}  // namespace tessera::gguf
