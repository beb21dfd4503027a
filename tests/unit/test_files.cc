#include "tests/unit/test_files.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace tessera::test {

// TESSERA_TEST_DATA_DIR in the environment names the data folder where the
// tests run from a copy of the tree (the GPU kit), not from this build's.
std::string data_path(const std::string& relative) {
  const char* moved = std::getenv("TESSERA_TEST_DATA_DIR");
  return std::string(moved && *moved ? moved : TESSERA_TEST_DATA_DIR) + "/" + relative;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  const std::string s = read_file(path);
  return {s.begin(), s.end()};
}

std::vector<std::string> list_files(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string p = entry.path().string();
    if (p.size() >= suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string model_dir() {
  if (const char* dir = std::getenv("TESSERA_MODEL_DIR")) return dir;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") + "/.cache/tessera/models";
}

std::vector<float> normal_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace tessera::test
