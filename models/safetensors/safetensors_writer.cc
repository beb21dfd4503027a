#include "models/safetensors/safetensors_writer.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/core/checked_math.h"
#include "engine/core/error.h"
#include "models/safetensors/safetensors_file.h"

namespace tessera::safetensors {

void Writer::add(const std::string& name, DType dtype, std::vector<int64_t> shape, const void* data, uint64_t bytes) {
  if (index_.count(name)) throw Error("safetensors: tensor '" + name + "' added twice");
  if (!dtype_from_safetensors(dtype_name(dtype))) {
    throw Error("safetensors: tensor '" + name + "': " + std::string(dtype_name(dtype)) + " is not a safetensors type");
  }
  uint64_t elems = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("safetensors: tensor '" + name + "' has a negative dimension");
    elems *= uint64_t(d);
  }
  const auto expected = dtype_bytes(dtype, elems);
  if (!expected || *expected != bytes) {
    throw Error("safetensors: tensor '" + name + "': " + std::to_string(bytes) + " bytes do not hold its shape");
  }
  index_[name] = entries_.size();
  entries_.push_back({name, dtype, std::move(shape), data, bytes});
  total_ += bytes;
}

void Writer::write(const std::string& path, const std::map<std::string, std::string>& metadata) const {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const Entry& e : entries_) {
    header[e.name] = {{"dtype", dtype_name(e.dtype)}, {"shape", e.shape}, {"data_offsets", {offset, offset + e.bytes}}};
    offset += e.bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(partial + ": cannot be written");
    uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
    out.write(reinterpret_cast<const char*>(length), 8);
    out.write(text.data(), std::streamsize(text.size()));
    for (const Entry& e : entries_) out.write(static_cast<const char*>(e.data), std::streamsize(e.bytes));
    out.flush();
    if (!out) throw Error(partial + ": write failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) throw Error(path + ": " + ec.message());
}

}  // namespace tessera::safetensors
