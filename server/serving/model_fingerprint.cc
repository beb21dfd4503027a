#include "server/serving/model_fingerprint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <vector>

namespace tessera {
namespace {

// FNV-1a, 64 bits: a stable identity, not a defence against forgery.
struct Fnv1a {
  uint64_t h = 14695981039346656037ull;
  void add(const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // a separator, so "ab","c" and "a","bc" differ
  }
};

// Name, size and modification time of the file, or of each file of the
// folder (sorted, so the order the folder lists them in does not matter).
void add_files(Fnv1a& hash, const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_directory(path, ec)) {
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (entry.is_regular_file(ec)) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  for (const fs::path& f : files) {
    hash.add(f.filename().string());
    hash.add(std::to_string(fs::file_size(f, ec)));
    hash.add(std::to_string(fs::last_write_time(f, ec).time_since_epoch().count()));
  }
}

}  // namespace

std::string model_fingerprint(const ModelConfig& config, const std::string& chat_template_source) {
  Fnv1a hash;
  hash.add(TESSERA_VERSION);
  hash.add(config.path);
  add_files(hash, config.path);
  hash.add(config.device);
  hash.add(chat_template_source);
  hash.add(std::to_string(config.max_model_len));
  char out[24];
  std::snprintf(out, sizeof out, "fp_%016llx", static_cast<unsigned long long>(hash.h));
  return out;
}

}  // namespace tessera
