#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/core/error.h"
#include "engine/io/artifact_cache.h"
#include "engine/io/content_hash.h"
#include "engine/io/tar_archive.h"
#include "quant/int_matrix_codec.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

class ArtifactCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tessera-cache-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string key_of(const std::string& text) { return ContentHash().add(text).hex(); }
  std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  void write(const fs::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  fs::path dir_;
};

TEST_F(ArtifactCacheTest, StoredPayloadsComeBackAndMissesAreEmpty) {
  const ArtifactCache cache(dir_);
  const std::string key = key_of("a");
  EXPECT_FALSE(cache.load("int-matrix", key));
  cache.store("int-matrix", key, std::string("payload\0with\0zeros", 18));
  ASSERT_TRUE(cache.load("int-matrix", key));
  EXPECT_EQ(*cache.load("int-matrix", key), std::string("payload\0with\0zeros", 18));
  EXPECT_FALSE(cache.load("other-kind", key));
  EXPECT_FALSE(cache.load("int-matrix", key_of("b")));
  EXPECT_FALSE(cache.load("../x", key));  // kinds and keys are never paths
}

TEST_F(ArtifactCacheTest, KeysHashEveryPieceAndItsBoundaries) {
  EXPECT_NE(ContentHash().add("ab").add("c").hex(), ContentHash().add("a").add("bc").hex());
  EXPECT_EQ(ContentHash().add("ab").add("c").hex(), ContentHash().add("ab").add("c").hex());
  EXPECT_EQ(ContentHash().add("").hex().size(), 64u);
}

TEST_F(ArtifactCacheTest, DamagedEntriesAreDeletedNeverTrusted) {
  const ArtifactCache cache(dir_);
  const std::string key = key_of("a");
  cache.store("int-matrix", key, std::string(1000, 'x'));
  const fs::path file = dir_ / "int-matrix" / key;
  std::string bytes = read(file);
  bytes[bytes.size() - 10] ^= 1;  // one bit of the payload
  write(file, bytes);
  EXPECT_EQ(cache.verify().at(0).problem, "payload does not match its SHA-256");
  EXPECT_FALSE(cache.load("int-matrix", key));
  EXPECT_FALSE(fs::exists(file));
  cache.store("int-matrix", key, std::string(1000, 'x'));
  write(file, read(file).substr(0, 500));  // truncated
  EXPECT_FALSE(cache.load("int-matrix", key));
  cache.store("int-matrix", key, "right");
  fs::copy_file(file, dir_ / "int-matrix" / key_of("b"));  // an entry under another entry's name
  EXPECT_FALSE(cache.load("int-matrix", key_of("b")));
  EXPECT_EQ(*cache.load("int-matrix", key), "right");
}

TEST_F(ArtifactCacheTest, EntriesOfAnotherBuildAreIgnored) {
  const std::string key = key_of("a");
  ArtifactCache(dir_, 0, std::string(64, '1')).store("int-matrix", key, "old layout");
  const ArtifactCache cache(dir_, 0, std::string(64, '2'));
  EXPECT_FALSE(cache.load("int-matrix", key));
  const auto entries = cache.verify();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(entries[0].problem.empty());
  EXPECT_FALSE(entries[0].this_build);
  EXPECT_EQ(cache.prune(UINT64_MAX), entries[0].bytes);  // prune drops them
  EXPECT_TRUE(cache.list().empty());
}

TEST_F(ArtifactCacheTest, PruneKeepsTheMostRecentlyUsedWithinTheLimit) {
  const ArtifactCache cache(dir_);
  const auto now = fs::file_time_type::clock::now();
  for (int i = 0; i < 4; ++i) {
    cache.store("int-matrix", key_of(std::to_string(i)), std::string(1000, char('a' + i)));
    fs::last_write_time(dir_ / "int-matrix" / key_of(std::to_string(i)), now - std::chrono::minutes(10 - i));
  }
  ASSERT_TRUE(cache.load("int-matrix", key_of("0")));  // the oldest, used now
  const uint64_t entry = cache.list().at(0).bytes;
  cache.prune(2 * entry);
  std::vector<std::string> kept;
  for (const auto& e : cache.list()) kept.push_back(e.key);
  EXPECT_EQ(kept, (std::vector<std::string>{key_of("0"), key_of("3")}));
  cache.prune(0);
  EXPECT_TRUE(cache.list().empty());
}

TEST_F(ArtifactCacheTest, ASizeLimitHoldsAsEntriesAreStored) {
  const ArtifactCache cache(dir_, 3000);
  for (int i = 0; i < 10; ++i) cache.store("int-matrix", key_of(std::to_string(i)), std::string(1000, 'x'));
  uint64_t total = 0;
  for (const auto& e : cache.list()) total += e.bytes;
  EXPECT_LE(total, 3000u);
  EXPECT_EQ(cache.list().size(), 2u);  // each entry is its payload plus a 176-byte header
}

TEST_F(ArtifactCacheTest, TwoWritersOfOneKeyLeaveOneSoundEntry) {
  const ArtifactCache cache(dir_);
  const std::string key = key_of("shared");
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&] {
      for (int i = 0; i < 20; ++i) cache.store("int-matrix", key, std::string(100000, 'z'));
    });
  }
  std::thread reader([&] {
    for (int i = 0; i < 200; ++i) {
      const auto got = cache.load("int-matrix", key);
      if (got) EXPECT_EQ(*got, std::string(100000, 'z'));  // whole or absent, never torn
    }
  });
  for (auto& t : writers) t.join();
  reader.join();
  const auto entries = cache.verify();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(entries[0].problem.empty());
  size_t files = 0;
  for ([[maybe_unused]] const auto& f : fs::directory_iterator(dir_ / "int-matrix")) ++files;
  EXPECT_EQ(files, 1u);  // no temporary file left behind
}

TEST_F(ArtifactCacheTest, ExportAndImportMoveSoundEntriesOfThisBuildOnly) {
  const ArtifactCache source(dir_ / "a");
  source.store("int-matrix", key_of("1"), "one");
  source.store("int-matrix", key_of("2"), "two");
  ArtifactCache(dir_ / "a", 0, std::string(64, '9')).store("int-matrix", key_of("3"), "another build");
  const ArtifactCache::Transfer out = source.export_to(dir_ / "cache.tar");
  EXPECT_EQ(out.copied, 2u);
  EXPECT_EQ(out.other_build, 1u);
  const ArtifactCache target(dir_ / "b");
  const ArtifactCache::Transfer in = target.import_from(dir_ / "cache.tar");
  EXPECT_EQ(in.copied, 2u);
  EXPECT_EQ(*target.load("int-matrix", key_of("1")), "one");
  EXPECT_EQ(*target.load("int-matrix", key_of("2")), "two");
  // The same archive read by a build with another kernel ABI: nothing is taken.
  const ArtifactCache::Transfer foreign = ArtifactCache(dir_ / "c", 0, std::string(64, '7')).import_from(dir_ / "cache.tar");
  EXPECT_EQ(foreign.copied, 0u);
  EXPECT_EQ(foreign.other_build, 2u);
  EXPECT_FALSE(fs::exists(dir_ / "c" / "int-matrix" / key_of("1")));
}

TEST_F(ArtifactCacheTest, TarArchivesRoundTripAndRefuseDamage) {
  fs::create_directories(dir_);
  TarWriter tar((dir_ / "t.tar").string());
  tar.add("kind/a", "hello", 1700000000);
  tar.add("kind/b", std::string(1500, 'q'), 1700000000);
  tar.add("empty", "", 0);
  tar.finish();
  const std::string archive = read(dir_ / "t.tar");
  EXPECT_EQ(archive.size() % 512, 0u);
  std::vector<std::pair<std::string, std::string>> files;
  std::istringstream in(archive);
  read_tar(in, "t.tar", 1 << 20, [&](const std::string& n, std::string&& b) { files.emplace_back(n, b); });
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0], (std::pair<std::string, std::string>{"kind/a", "hello"}));
  EXPECT_EQ(files[1].second, std::string(1500, 'q'));
  const auto refused = [](std::string bytes, uint64_t limit = 1 << 20) {
    std::istringstream s(bytes);
    try {
      read_tar(s, "t.tar", limit, [](const std::string&, std::string&&) {});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string bad_sum = archive;
  bad_sum[0] = 'K';
  EXPECT_NE(refused(bad_sum).find("checksum"), std::string::npos);
  EXPECT_NE(refused(archive.substr(0, 700)).find("ends"), std::string::npos);
  EXPECT_NE(refused(archive, 1000).find("more than 1000"), std::string::npos);
  EXPECT_THROW(tar.add("../escape", "x", 0), Error);
}

TEST_F(ArtifactCacheTest, IntMatricesRoundTripAndBadBytesAreRefused) {
  quant::IntMatrix m;
  m.scheme = quant::int_scheme("w", {4, 32, false}, 64);
  m.rows = 3;
  m.cols = 64;
  m.data.assign(3 * 32, 0x5a);
  m.scales.assign(3 * 2, 0.25f);
  m.zeros.assign(3 * 2, -3);
  const std::string bytes = quant::encode_int_matrix(m);
  const quant::IntMatrix back = quant::decode_int_matrix(bytes);
  EXPECT_EQ(back.rows, 3);
  EXPECT_EQ(back.cols, 64);
  EXPECT_EQ(back.scheme.storage, DType::kInt4);
  EXPECT_EQ(back.scheme.group_size, 32);
  EXPECT_TRUE(back.scheme.has_zero_points);
  EXPECT_EQ(back.data, m.data);
  EXPECT_EQ(back.scales, m.scales);
  EXPECT_EQ(back.zeros, m.zeros);
  EXPECT_THROW(quant::decode_int_matrix(bytes.substr(0, bytes.size() - 1)), Error);
  EXPECT_THROW(quant::decode_int_matrix(bytes + "x"), Error);
  std::string wrong_rows = bytes;
  wrong_rows[4 + 1 + 4 + 1 + 1] = 4;  // rows 4: the arrays no longer match
  EXPECT_THROW(quant::decode_int_matrix(wrong_rows), Error);
  EXPECT_NE(quant::int_quant_config_bytes({4, 32, false}), quant::int_quant_config_bytes({4, 64, false}));
}

}  // namespace
}  // namespace tessera
