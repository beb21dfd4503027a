#pragma once
// Plain values and arrays to bytes and back (host byte order), for the
// artifact cache's payloads. The reader checks every length against what
// is left, with checked arithmetic, and throws tessera::Error naming `what`.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/core/checked_math.h"
#include "engine/core/error.h"

namespace tessera {

class ByteWriter {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  // A count, then the elements.
  template <typename T>
  void put_array(const std::vector<T>& v) {
    put<uint64_t>(v.size());
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_ += s;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  ByteReader(const std::string& bytes, std::string what) : bytes_(bytes), what_(std::move(what)) {}

  template <typename T>
  T get() {
    T v;
    take(&v, sizeof(v));
    return v;
  }
  template <typename T>
  std::vector<T> get_array() {
    const uint64_t n = get<uint64_t>();
    const std::optional<uint64_t> n_bytes = checked_mul(n, sizeof(T));
    if (!n_bytes || *n_bytes > left()) fail("ends early");
    std::vector<T> v(n);
    take(v.data(), *n_bytes);
    return v;
  }
  std::string get_string() {
    const uint64_t n = get<uint64_t>();
    if (n > left()) fail("ends early");
    std::string s(n, '\0');
    take(s.data(), n);
    return s;
  }
  bool done() const { return at_ == bytes_.size(); }
  [[noreturn]] void fail(const std::string& why) const { throw Error(what_ + ": " + why); }

 private:
  uint64_t left() const { return bytes_.size() - at_; }
  void take(void* out, uint64_t n) {
    if (n > left()) fail("ends early");
    if (n == 0) return;  // an empty array's data() may be null
    std::memcpy(out, bytes_.data() + at_, n);
    at_ += n;
  }

  const std::string& bytes_;
  std::string what_;
  size_t at_ = 0;
};

}  // namespace tessera
