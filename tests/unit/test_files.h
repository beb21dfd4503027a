#pragma once
// Helpers shared by the unit tests: test data paths, whole-file reads and
// seeded random inputs.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::test {

std::string data_path(const std::string& relative);
std::string read_file(const std::string& path);
std::vector<uint8_t> read_bytes(const std::string& path);
std::vector<std::string> list_files(const std::string& dir, const std::string& suffix);
// Directory with the real models (TESSERA_MODEL_DIR or ~/.cache/tessera/models).
std::string model_dir();
// n values drawn from N(0, 1) by a generator seeded with `seed`.
std::vector<float> normal_values(int64_t n, uint32_t seed);

}  // namespace tessera::test
