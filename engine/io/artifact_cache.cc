#include "engine/io/artifact_cache.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "engine/core/error.h"
#include "engine/io/content_hash.h"
#include "engine/io/tar_archive.h"

#ifndef TESSERA_KERNEL_ABI
#error "the build defines TESSERA_KERNEL_ABI (engine/CMakeLists.txt)"
#endif

namespace tessera {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'T', 'S', 'R', 'A', 'R', 'T', '0', '1'};
constexpr size_t kHexLen = 64;
constexpr size_t kHeaderBytes = 8 + kHexLen + kHexLen + 8 + 32;
// No single artifact is larger (the largest quantized matrix of a 70B model is ~1 GiB).
constexpr uint64_t kMaxEntryBytes = uint64_t(16) << 30;

bool is_hex_key(const std::string& s) {
  return s.size() == kHexLen && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_kind(const std::string& s) {
  return !s.empty() && s.size() <= 32 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

// The size comes from the opened file, not the path: a writer may rename
// another file over the path meanwhile.
std::optional<std::string> read_file(const fs::path& path, uint64_t limit) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  const std::streamoff end = in.tellg();
  if (end < 0 || uint64_t(end) > limit) return std::nullopt;
  const uint64_t size = uint64_t(end);
  in.seekg(0);
  std::string bytes(size, '\0');
  if (!in.read(bytes.data(), std::streamsize(size))) return std::nullopt;
  return bytes;
}

uint64_t read_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | uint8_t(p[i]);
  return v;
}

std::string header_abi(const std::string& file) { return file.size() >= kHeaderBytes ? file.substr(8, kHexLen) : ""; }

// A name no other writer picks: process, a counter, and a random value.
std::string temporary_name(const std::string& key) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 random{std::random_device{}()};
  return ".tmp-" + key.substr(0, 16) + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" +
         std::to_string(random() & 0xffffff);
}

}  // namespace

const std::string& build_kernel_abi() {
  static const std::string abi = TESSERA_KERNEL_ABI;
  return abi;
}

std::string artifact_file(const std::string& abi, const std::string& key, const std::string& payload) {
  std::string out(kMagic, sizeof(kMagic));
  out += abi.substr(0, kHexLen);
  out.resize(8 + kHexLen, '0');
  out += key.substr(0, kHexLen);
  out.resize(8 + 2 * kHexLen, '0');
  uint64_t n = payload.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out += char(n & 0xff);
  out += sha256_raw(payload.data(), payload.size());
  out += payload;
  return out;
}

ArtifactCache::ArtifactCache(fs::path dir, uint64_t max_bytes, std::string abi)
    : dir_(std::move(dir)), max_bytes_(max_bytes), abi_(std::move(abi)) {}

fs::path ArtifactCache::entry_path(const std::string& kind, const std::string& key) const { return dir_ / kind / key; }

std::string ArtifactCache::check(const std::string& file, const std::string& key, bool* this_build) const {
  *this_build = false;
  if (file.size() < kHeaderBytes || std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) return "not an artifact (header)";
  if (file.compare(8 + kHexLen, kHexLen, key) != 0) return "its key is not the one its name says";
  const uint64_t payload = read_u64(file.data() + 8 + 2 * kHexLen);
  if (payload != file.size() - kHeaderBytes) return "truncated or extended (" + std::to_string(file.size() - kHeaderBytes) + " payload bytes, header says " + std::to_string(payload) + ")";
  const std::string digest = sha256_raw(file.data() + kHeaderBytes, payload);
  if (file.compare(kHeaderBytes - 32, 32, digest) != 0) return "payload does not match its SHA-256";
  *this_build = header_abi(file) == abi_;
  return "";
}

std::optional<std::string> ArtifactCache::load(const std::string& kind, const std::string& key) const {
  if (!is_kind(kind) || !is_hex_key(key)) return std::nullopt;
  const fs::path path = entry_path(kind, key);
  std::optional<std::string> file = read_file(path, kMaxEntryBytes);
  if (!file) return std::nullopt;
  bool this_build = false;
  const std::string problem = check(*file, key, &this_build);
  std::error_code ec;
  if (!problem.empty()) {
    spdlog::warn("artifact cache: {} is damaged ({}); removed, made again", path.string(), problem);
    fs::remove(path, ec);
    return std::nullopt;
  }
  if (!this_build) return std::nullopt;  // a key made with another ABI cannot come from this build's keys; ignored
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);  // used now, for the LRU order
  return file->substr(kHeaderBytes);
}

void ArtifactCache::write_entry(const std::string& kind, const std::string& key, const std::string& file) const {
  std::error_code ec;
  fs::create_directories(dir_ / kind, ec);
  const fs::path tmp = dir_ / kind / temporary_name(key);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(file.data(), std::streamsize(file.size()));
    out.flush();
    if (!out) {
      spdlog::warn("artifact cache: cannot write {}; going on without it", tmp.string());
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, entry_path(kind, key), ec);  // atomic: a reader sees the old file or the whole new one
  if (ec) {
    spdlog::warn("artifact cache: cannot place {}: {}", entry_path(kind, key).string(), ec.message());
    fs::remove(tmp, ec);
  }
}

void ArtifactCache::store(const std::string& kind, const std::string& key, const std::string& payload) const {
  if (!is_kind(kind) || !is_hex_key(key)) throw Error("artifact cache: bad kind '" + kind + "' or key");
  const std::string file = artifact_file(abi_, key, payload);
  write_entry(kind, key, file);
  if (max_bytes_ > 0) keep_under_limit(file.size());
}

void ArtifactCache::keep_under_limit(uint64_t added) const {
  std::lock_guard lock(size_mutex_);
  const auto total_bytes = [this] {
    uint64_t total = 0;
    for (const Entry& e : list()) total += e.bytes;
    return total;
  };
  // A replaced entry counts twice: errs toward scanning sooner.
  approximate_bytes_ = approximate_bytes_ ? *approximate_bytes_ + added : total_bytes();
  if (*approximate_bytes_ <= max_bytes_) return;
  prune(max_bytes_, false);
  approximate_bytes_ = total_bytes();
}

std::vector<ArtifactCache::Entry> ArtifactCache::list() const {
  std::vector<Entry> out;
  std::error_code ec;
  for (const auto& kind_dir : fs::directory_iterator(dir_, ec)) {
    if (!kind_dir.is_directory(ec) || !is_kind(kind_dir.path().filename().string())) continue;
    for (const auto& f : fs::directory_iterator(kind_dir.path(), ec)) {
      const std::string key = f.path().filename().string();
      if (!is_hex_key(key) || !f.is_regular_file(ec)) continue;
      Entry e{kind_dir.path().filename().string(), key, f.file_size(ec), f.last_write_time(ec), false, ""};
      std::ifstream in(f.path(), std::ios::binary);
      std::string header(kHeaderBytes, '\0');
      e.this_build = in.read(header.data(), std::streamsize(header.size())) && header_abi(header) == abi_;
      out.push_back(std::move(e));
    }
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.last_used > b.last_used; });
  return out;
}

std::vector<ArtifactCache::Entry> ArtifactCache::verify() const {
  std::vector<Entry> out = list();
  for (Entry& e : out) {
    const std::optional<std::string> file = read_file(entry_path(e.kind, e.key), kMaxEntryBytes);
    e.problem = file ? check(*file, e.key, &e.this_build) : "cannot be read";
  }
  return out;
}

uint64_t ArtifactCache::prune(uint64_t max_bytes, bool check_payloads) const {
  uint64_t freed = 0, kept = 0;
  std::error_code ec;
  const auto remove = [&](const fs::path& p, uint64_t bytes) {
    if (fs::remove(p, ec)) freed += bytes;
  };
  const auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& kind_dir : fs::directory_iterator(dir_, ec)) {
    if (!kind_dir.is_directory(ec)) continue;
    for (const auto& f : fs::directory_iterator(kind_dir.path(), ec)) {
      const std::string name = f.path().filename().string();
      if (name.rfind(".tmp-", 0) == 0 && f.last_write_time(ec) < an_hour_ago) remove(f.path(), f.file_size(ec));
    }
  }
  for (const Entry& e : check_payloads ? verify() : list()) {  // most recently used first
    if (!e.this_build || !e.problem.empty() || kept + e.bytes > max_bytes) {
      remove(entry_path(e.kind, e.key), e.bytes);
    } else {
      kept += e.bytes;
    }
  }
  return freed;
}

ArtifactCache::Transfer ArtifactCache::export_to(const fs::path& archive) const {
  Transfer t;
  TarWriter tar(archive.string());
  for (const Entry& e : list()) {
    const std::optional<std::string> file = read_file(entry_path(e.kind, e.key), kMaxEntryBytes);
    bool this_build = false;
    if (!file || !check(*file, e.key, &this_build).empty()) {
      ++t.damaged;
    } else if (!this_build) {
      ++t.other_build;
    } else {
      tar.add(e.kind + "/" + e.key, *file, std::chrono::duration_cast<std::chrono::seconds>(e.last_used.time_since_epoch()).count());
      ++t.copied;
    }
  }
  tar.finish();
  return t;
}

ArtifactCache::Transfer ArtifactCache::import_from(const fs::path& archive) const {
  std::ifstream in(archive, std::ios::binary);
  if (!in) throw Error(archive.string() + ": cannot open");
  Transfer t;
  uint64_t imported_bytes = 0;
  read_tar(in, archive.string(), kMaxEntryBytes, [&](const std::string& name, std::string&& file) {
    const size_t slash = name.find('/');
    const std::string kind = name.substr(0, slash), key = slash == std::string::npos ? "" : name.substr(slash + 1);
    bool this_build = false;
    if (!is_kind(kind) || !is_hex_key(key) || !check(file, key, &this_build).empty()) {
      ++t.damaged;
    } else if (!this_build) {
      ++t.other_build;
    } else {
      write_entry(kind, key, file);
      imported_bytes += file.size();
      ++t.copied;
    }
  });
  if (max_bytes_ > 0) keep_under_limit(imported_bytes);
  return t;
}

}  // namespace tessera
