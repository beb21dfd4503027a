#pragma once
// POSIX ustar archives of regular files, as `tar` reads and writes them:
// the artifact cache's export format. Written here because the packaged
// library (libarchive) pulls in libxml2 and ICU, tens of MiB the
// self-contained GPU kit would have to carry, for the few lines below.
#include <cstdint>
#include <fstream>
#include <functional>
#include <istream>
#include <string>

namespace tessera {

class TarWriter {
 public:
  // Throws tessera::Error naming `path` when it cannot be created.
  explicit TarWriter(const std::string& path);
  // One regular file: `name` (at most 100 bytes, no "..") holding `bytes`.
  void add(const std::string& name, const std::string& bytes, int64_t mtime);
  // The end-of-archive blocks; throws when anything failed to write.
  void finish();

 private:
  std::string path_;
  std::ofstream out_;
};

// Calls `on_file(name, bytes)` for each regular file of the archive in
// order; other entry types are skipped. Throws tessera::Error naming `what`
// and the byte offset on a damaged header (checksum, size field, a name
// with ".." or a leading '/'), a file larger than `max_file_bytes`, or an
// archive that ends early.
void read_tar(std::istream& in, const std::string& what, uint64_t max_file_bytes,
              const std::function<void(const std::string& name, std::string&& bytes)>& on_file);

}  // namespace tessera
