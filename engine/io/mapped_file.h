#pragma once
// A read-only memory mapping of a whole file. Weights are used in place from
// the mapping; the file stays mapped as long as the object lives.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tessera {

class MappedFile {
 public:
  // Throws tessera::Error naming the path when the file cannot be opened or mapped.
  static MappedFile open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void release();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace tessera
