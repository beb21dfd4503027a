#include "engine/tensor/device.h"

#include <algorithm>
#include <charconv>

#include "engine/core/error.h"

// "cpu,cuda,hip,xpu": set by CMake from the backend folders' device_kinds.cmake.
#ifndef TESSERA_DEVICE_KINDS
#error "TESSERA_DEVICE_KINDS names the device kinds the backend folders register"
#endif

namespace tessera {

std::string device_name(const Device& device) {
  return std::string(device.kind.name()) + ":" + std::to_string(device.index);
}

std::vector<std::string> known_device_kinds() {
  std::vector<std::string> kinds{"cpu"};
  const std::string_view listed = TESSERA_DEVICE_KINDS;
  size_t at = 0;
  while (at <= listed.size()) {
    const size_t comma = std::min(listed.find(',', at), listed.size());
    const std::string kind(listed.substr(at, comma - at));
    if (!kind.empty() && kind != "cpu") kinds.push_back(kind);
    at = comma + 1;
  }
  return kinds;
}

std::string device_forms() {
  // The first accelerator is also shown without its index (cuda is cuda:0).
  const std::vector<std::string> kinds = known_device_kinds();
  std::vector<std::string> forms{kinds[0]};
  if (kinds.size() > 1) forms.push_back(kinds[1]);
  for (size_t i = 1; i < kinds.size(); ++i) forms.push_back(kinds[i] + ":N");
  std::string text;
  for (size_t i = 0; i < forms.size(); ++i) {
    if (i > 0) text += i + 1 == forms.size() ? " or " : ", ";
    text += forms[i];
  }
  return text;
}

Device parse_device(const std::string& text) {
  const std::string_view view(text);
  const size_t colon = view.find(':');
  const std::string_view kind = view.substr(0, colon);
  for (const std::string& name : known_device_kinds()) {
    if (kind != name || name.size() > DeviceKind::kMaxName) continue;
    Device device{DeviceKind(name), 0};
    if (colon == std::string_view::npos) return device;
    const std::string_view index = view.substr(colon + 1);
    const auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), device.index);
    if (ec == std::errc() && end == index.data() + index.size() && !index.empty() && device.index >= 0) return device;
    break;
  }
  throw Error("device '" + text + "': expected " + device_forms());
}

}  // namespace tessera
