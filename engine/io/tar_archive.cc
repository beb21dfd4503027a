#include "engine/io/tar_archive.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "engine/core/error.h"

namespace tessera {
namespace {

constexpr size_t kBlock = 512;
using Block = std::array<char, kBlock>;

// Header fields: offset and width (ustar).
constexpr size_t kName = 0, kNameLen = 100, kMode = 100, kUid = 108, kGid = 116, kSize = 124, kMtime = 136,
                 kChecksum = 148, kType = 156, kMagic = 257, kVersion = 263, kPrefix = 345, kPrefixLen = 155;

void put_octal(Block& b, size_t at, size_t width, uint64_t value) {
  // width - 1 digits and a NUL.
  for (size_t i = width - 1; i-- > 0;) {
    b[at + i] = char('0' + (value & 7));
    value >>= 3;
  }
  b[at + width - 1] = '\0';
}

uint32_t checksum_of(const Block& b) {
  uint32_t sum = 0;
  for (size_t i = 0; i < kBlock; ++i) sum += (i >= kChecksum && i < kChecksum + 8) ? uint32_t(' ') : uint32_t(uint8_t(b[i]));
  return sum;
}

// An octal field: digits, optionally space- or NUL-padded on either side.
bool read_octal(const Block& b, size_t at, size_t width, uint64_t* out) {
  size_t i = at, end = at + width;
  while (i < end && b[i] == ' ') ++i;
  uint64_t v = 0;
  size_t digits = 0;
  for (; i < end && b[i] >= '0' && b[i] <= '7'; ++i, ++digits) {
    if (v >> 60) return false;
    v = v * 8 + uint64_t(b[i] - '0');
  }
  for (; i < end; ++i) {
    if (b[i] != ' ' && b[i] != '\0') return false;
  }
  *out = v;
  return digits > 0;
}

std::string field(const Block& b, size_t at, size_t width) {
  const size_t n = strnlen(b.data() + at, width);
  return std::string(b.data() + at, n);
}

bool safe_name(const std::string& name) {
  if (name.empty() || name.front() == '/') return false;
  size_t start = 0;
  while (start <= name.size()) {
    const size_t slash = std::min(name.find('/', start), name.size());
    if (name.compare(start, slash - start, "..") == 0) return false;
    start = slash + 1;
  }
  return true;
}

}  // namespace

TarWriter::TarWriter(const std::string& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
  if (!out_) throw Error(path + ": cannot create");
}

void TarWriter::add(const std::string& name, const std::string& bytes, int64_t mtime) {
  if (name.size() > kNameLen || !safe_name(name)) throw Error(path_ + ": '" + name + "' cannot be an archive name");
  Block h{};
  std::memcpy(h.data() + kName, name.data(), name.size());
  put_octal(h, kMode, 8, 0644);
  put_octal(h, kUid, 8, 0);
  put_octal(h, kGid, 8, 0);
  put_octal(h, kSize, 12, bytes.size());
  put_octal(h, kMtime, 12, uint64_t(std::max<int64_t>(mtime, 0)));
  h[kType] = '0';
  std::memcpy(h.data() + kMagic, "ustar", 6);
  std::memcpy(h.data() + kVersion, "00", 2);
  const uint32_t sum = checksum_of(h);
  put_octal(h, kChecksum, 7, sum);  // six digits, NUL, then a space
  h[kChecksum + 7] = ' ';
  out_.write(h.data(), kBlock);
  out_.write(bytes.data(), std::streamsize(bytes.size()));
  const size_t pad = (kBlock - bytes.size() % kBlock) % kBlock;
  const Block zeros{};
  out_.write(zeros.data(), std::streamsize(pad));
}

void TarWriter::finish() {
  const Block zeros{};
  out_.write(zeros.data(), kBlock);
  out_.write(zeros.data(), kBlock);
  out_.flush();
  if (!out_) throw Error(path_ + ": write failed");
  out_.close();
}

void read_tar(std::istream& in, const std::string& what, uint64_t max_file_bytes,
              const std::function<void(const std::string&, std::string&&)>& on_file) {
  uint64_t offset = 0;
  const auto fail = [&](const std::string& why) { throw Error(what + ": at byte " + std::to_string(offset) + ": " + why); };
  for (;;) {
    Block h;
    if (!in.read(h.data(), kBlock)) fail("the archive ends inside a header (no end-of-archive blocks)");
    if (std::all_of(h.begin(), h.end(), [](char c) { return c == '\0'; })) return;  // end of archive
    uint64_t stored_sum = 0, size = 0;
    if (!read_octal(h, kChecksum, 8, &stored_sum) || stored_sum != checksum_of(h)) fail("header checksum does not match");
    if (!read_octal(h, kSize, 12, &size)) fail("size field is not octal");
    if (size > max_file_bytes) fail("an entry of " + std::to_string(size) + " bytes, more than " + std::to_string(max_file_bytes));
    std::string name = field(h, kName, kNameLen);
    if (field(h, kMagic, 5) == "ustar") {
      const std::string prefix = field(h, kPrefix, kPrefixLen);
      if (!prefix.empty()) name = prefix + "/" + name;
    }
    const char type = h[kType];
    std::string bytes(size, '\0');
    if (size > 0 && !in.read(bytes.data(), std::streamsize(size))) fail("the archive ends inside '" + name.substr(0, 100) + "'");
    const size_t pad = (kBlock - size % kBlock) % kBlock;
    Block skip;
    if (pad > 0 && !in.read(skip.data(), std::streamsize(pad))) fail("the archive ends inside its padding");
    offset += kBlock + size + pad;
    if (type != '0' && type != '\0') continue;  // directories, links, extended headers: not ours
    if (!safe_name(name)) fail("entry name '" + name.substr(0, 100) + "' leaves the archive's folder");
    on_file(name, std::move(bytes));
  }
}

}  // namespace tessera
