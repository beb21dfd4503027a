#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// A device kind is its name. "cpu" is the core's; every other name is
// registered by the backend folder that serves it
// (kernels/<backend>/device_kinds.cmake), so a new backend adds its name
// without touching a list here. Names are 1 to 7 lowercase letters.
class DeviceKind {
 public:
  static constexpr size_t kMaxName = 7;

  constexpr DeviceKind() : DeviceKind("cpu") {}
  explicit constexpr DeviceKind(std::string_view name) {
    for (size_t i = 0; i < name.size() && i < kMaxName; ++i) name_[i] = name[i];
  }
  constexpr std::string_view name() const { return std::string_view(name_.data()); }
  constexpr bool operator==(const DeviceKind&) const = default;

 private:
  std::array<char, kMaxName + 1> name_{};  // NUL-terminated
};

// The host, which every daemon has.
inline constexpr DeviceKind kCpuDevice{"cpu"};

struct Device {
  DeviceKind kind = kCpuDevice;
  int index = 0;

  bool operator==(const Device&) const = default;
};

std::string device_name(const Device& device);

// The kinds this build knows ("cpu" first, then the backend folders' in
// order), whether or not their backends are built or load here.
std::vector<std::string> known_device_kinds();

// How a device is written: "cpu, cuda, cuda:N, hip:N or xpu:N" for the
// kinds this build knows.
std::string device_forms();

// "cpu", "cuda", "cuda:1", "hip:0", "xpu:0" …: a known kind and an optional
// index; throws tessera::Error naming the text and device_forms() otherwise.
Device parse_device(const std::string& text);

}  // namespace tessera
