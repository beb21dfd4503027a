#pragma once
#include <cstdint>
#include <string>

namespace tessera {

enum class DeviceKind : uint8_t { kCpu, kCuda, kHip, kXpu };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;

  bool operator==(const Device&) const = default;
};

std::string device_name(const Device& device);

// "cpu", "cuda", "cuda:1", "hip:0", "xpu:0" …; throws tessera::Error naming
// the text otherwise.
Device parse_device(const std::string& text);

}  // namespace tessera
