// Device kinds are names the backend folders register
// (kernels/*/device_kinds.cmake), read into the core at build time.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "engine/core/error.h"
#include "engine/tensor/device.h"

namespace tessera {
namespace {

// The kinds the backend folders' device_kinds.cmake files register, read
// here from the source tree: what the build must have compiled in.
std::vector<std::string> kinds_in_the_backend_folders() {
  std::vector<std::string> kinds;
  const std::filesystem::path kernels = std::filesystem::path(TESSERA_SOURCE_DIR) / "kernels";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(kernels)) {
    if (std::filesystem::exists(entry.path() / "device_kinds.cmake")) files.push_back(entry.path() / "device_kinds.cmake");
  }
  std::sort(files.begin(), files.end());
  const std::regex call(R"(tessera_device_kinds\(([a-z ]+)\))");
  for (const auto& file : files) {
    std::ifstream in(file);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::smatch m;
    EXPECT_TRUE(std::regex_search(text, m, call)) << file;
    std::istringstream names(m[1].str());
    for (std::string name; names >> name;) kinds.push_back(name);
  }
  return kinds;
}

TEST(DeviceKind, EveryFolderRegisteredKindParsesAndNamesItself) {
  const std::vector<std::string> registered = kinds_in_the_backend_folders();
  ASSERT_GE(registered.size(), 4u);  // cpu, cuda, hip, xpu
  EXPECT_EQ(known_device_kinds(), registered);
  for (const std::string& kind : registered) {
    const Device bare = parse_device(kind);
    EXPECT_EQ(bare.kind.name(), kind);
    EXPECT_EQ(bare.index, 0);
    const Device third = parse_device(kind + ":3");
    EXPECT_EQ(third, (Device{DeviceKind(kind), 3}));
    EXPECT_EQ(device_name(third), kind + ":3");
  }
}

TEST(DeviceKind, UnknownKindsAndBadIndicesAreRefusedListingTheForms) {
  EXPECT_EQ(device_forms(), "cpu, cuda, cuda:N, hip:N or xpu:N");
  for (const char* text : {"tpu", "tpu:0", "cuda:-1", "cuda:", "cuda:x", "", "CPU", "cpu0"}) {
    try {
      parse_device(text);
      ADD_FAILURE() << "'" << text << "' parsed";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), "device '" + std::string(text) + "': expected " + device_forms());
    }
  }
}

TEST(DeviceKind, KindsCompareByName) {
  EXPECT_EQ(DeviceKind(), kCpuDevice);
  EXPECT_EQ(DeviceKind("xpu"), DeviceKind(std::string("xpu")));
  EXPECT_FALSE(DeviceKind("cuda") == DeviceKind("hip"));
  EXPECT_EQ(Device{}.kind.name(), "cpu");
}

}  // namespace
}  // namespace tessera
