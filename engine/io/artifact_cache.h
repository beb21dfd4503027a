#pragma once
// A folder of artifacts that are costly to make at load and the same every
// time (weights quantized at load, …), so a warm start reads them instead.
//
// An entry is found by its kind and its key: a content hash of everything
// it was made from (its inputs' bytes, the settings, the CPU ISA or device
// it was made for), the caller's to compute. Each file carries the build's
// kernel ABI (a hash of the layouts the artifacts are in), its key and a
// SHA-256 of its payload, and is checked against all three on every read:
// a damaged entry is deleted and one of another build ignored, so the
// caller makes the artifact again. Entries are written to a temporary file
// and renamed into place, so two daemons may share a folder; reads mark an
// entry used (its mtime), and the folder is kept under its size limit by
// deleting the least recently used entries.
//
// Layout: DIR/KIND/KEY, each file:
//   magic "TSRART01" | build ABI (64 hex) | key (64 hex) | payload bytes (u64 LE)
//   | payload SHA-256 (32) | payload
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

// The build's kernel ABI: a hash of the sources that define the cached
// layouts, set by the build (TESSERA_KERNEL_ABI).
const std::string& build_kernel_abi();

class ArtifactCache {
 public:
  // `max_bytes` 0: no limit. `abi` is build_kernel_abi() but for tests.
  explicit ArtifactCache(std::filesystem::path dir, uint64_t max_bytes = 0, std::string abi = build_kernel_abi());

  const std::filesystem::path& dir() const { return dir_; }

  // The payload stored under (kind, key), checked; nullopt when absent,
  // damaged (the file is deleted) or made by another build.
  std::optional<std::string> load(const std::string& kind, const std::string& key) const;
  // Stores `payload` (atomically; a failure to write is logged, not
  // thrown: the cache is an optimisation), then prunes to the size limit.
  void store(const std::string& kind, const std::string& key, const std::string& payload) const;

  struct Entry {
    std::string kind, key;
    uint64_t bytes = 0;                             // the whole file
    std::filesystem::file_time_type last_used;
    bool this_build = false;                        // made by this build's ABI
    std::string problem;                            // from verify(): empty when sound
  };
  // Every entry, headers only (problem left empty).
  std::vector<Entry> list() const;
  // Every entry, each read and checked in full.
  std::vector<Entry> verify() const;
  // Deletes damaged entries (read in full unless `check_payloads` is
  // false), those of other builds, temporary files older than an hour, then
  // the least recently used entries until at most `max_bytes` remain.
  // Returns the bytes freed.
  uint64_t prune(uint64_t max_bytes, bool check_payloads = true) const;

  struct Transfer {
    size_t copied = 0, other_build = 0, damaged = 0;
  };
  // Every sound entry of this build into one ustar archive at `archive`.
  Transfer export_to(const std::filesystem::path& archive) const;
  // The entries of an archive `export_to` wrote: sound ones of this build
  // are stored, the others counted and left out. Throws tessera::Error on
  // an archive that cannot be read.
  Transfer import_from(const std::filesystem::path& archive) const;

  // Checks a whole entry file as read: empty when sound, else what is wrong.
  // `kind`/`key` are those its path names.
  std::string check(const std::string& file, const std::string& key, bool* this_build) const;

 private:
  std::filesystem::path entry_path(const std::string& kind, const std::string& key) const;
  void write_entry(const std::string& kind, const std::string& key, const std::string& file) const;

  // Keeps the folder under max_bytes_ after `added` more bytes, scanning it
  // only when a running count (seeded by one scan) says it may be over.
  void keep_under_limit(uint64_t added) const;

  std::filesystem::path dir_;
  uint64_t max_bytes_;
  std::string abi_;
  mutable std::mutex size_mutex_;
  mutable std::optional<uint64_t> approximate_bytes_;  // guarded by size_mutex_
};

// An entry file holding `payload` under `key` for build `abi`.
std::string artifact_file(const std::string& abi, const std::string& key, const std::string& payload);

}  // namespace tessera
