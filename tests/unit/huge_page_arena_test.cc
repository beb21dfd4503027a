// Weights copied into huge-page chunks: the bytes are the source's, each
// copy 64-byte aligned, small copies share a chunk, the same bytes share a
// copy, a chunk is unmapped once no copy in it is held, and bytes the loader
// owns are read in place; space reserved for packing is zeroed and its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "kernels/cpu/runtime/cpu_prepared.h"
#include "kernels/cpu/runtime/huge_page_arena.h"

namespace tessera::cpu {
namespace {

std::vector<uint8_t> counting_bytes(size_t n) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), uint8_t(7));
  return v;
}

TEST(HugePageArena, CopiesAreAlignedAndSmallOnesShareAChunk) {
  HugePageArena arena;
  const std::vector<uint8_t> a = counting_bytes(1000), b = counting_bytes(3000), big = counting_bytes(size_t(70) << 20);
  const HugePageArena::Copy ca = arena.copy(a.data(), a.size()), cb = arena.copy(b.data(), b.size());
  ASSERT_TRUE(ca.data && cb.data);
  EXPECT_EQ(std::memcmp(ca.data, a.data(), a.size()), 0);
  EXPECT_EQ(std::memcmp(cb.data, b.data(), b.size()), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ca.data) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(cb.data) % 64, 0u);
  EXPECT_EQ(ca.chunk, cb.chunk);
  EXPECT_EQ(cb.data, ca.data + 1024);  // the next 64-byte boundary
  // Larger than a chunk: a chunk of its own, and the next copy follows it.
  const HugePageArena::Copy cbig = arena.copy(big.data(), big.size());
  ASSERT_TRUE(cbig.data);
  EXPECT_NE(cbig.chunk, ca.chunk);
  EXPECT_EQ(std::memcmp(cbig.data, big.data(), big.size()), 0);
}

// Space reserved for packing in place: zeroed, aligned, in the chunk the
// copies use, never handed out twice.
TEST(HugePageArena, ReservedSpaceIsZeroedAlignedAndItsOwn) {
  HugePageArena arena;
  const std::vector<uint8_t> a = counting_bytes(1000);
  const HugePageArena::Copy ca = arena.copy(a.data(), a.size());
  const HugePageArena::Space first = arena.reserve(3000), second = arena.reserve(100);
  ASSERT_TRUE(ca.data && first.data && second.data);
  EXPECT_EQ(first.chunk, ca.chunk);
  EXPECT_EQ(first.data, ca.data + 1024);
  EXPECT_EQ(second.data, first.data + 3008);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(second.data) % 64, 0u);
  EXPECT_TRUE(std::all_of(first.data, first.data + 3000, [](uint8_t b) { return b == 0; }));
  std::memset(first.data, 0xab, 3000);  // writable; the copy before it is untouched
  EXPECT_EQ(std::memcmp(ca.data, a.data(), a.size()), 0);
  EXPECT_EQ(arena.reserve(0).data, nullptr);
}

// A tied embedding and output head ask for the same bytes: one copy, while
// the bytes at that address are unchanged.
TEST(HugePageArena, TheSameBytesShareOneCopy) {
  HugePageArena arena;
  std::vector<uint8_t> a = counting_bytes(5000);
  const HugePageArena::Copy first = arena.copy(a.data(), a.size()), second = arena.copy(a.data(), a.size());
  EXPECT_EQ(first.data, second.data);
  a[100] ^= 0xff;  // other bytes at the same address: a copy of them
  const HugePageArena::Copy third = arena.copy(a.data(), a.size());
  EXPECT_NE(third.data, first.data);
  EXPECT_EQ(std::memcmp(third.data, a.data(), a.size()), 0);
}

TEST(HugePageArena, AChunkLivesOnlyWhileACopyInItIsHeld) {
  HugePageArena arena;
  const std::vector<uint8_t> a = counting_bytes(4096);
  std::weak_ptr<const void> first;
  {
    const HugePageArena::Copy c = arena.copy(a.data(), a.size());
    first = c.chunk;
    EXPECT_FALSE(first.expired());
  }
  EXPECT_TRUE(first.expired());
  const HugePageArena::Copy again = arena.copy(a.data(), a.size());  // a fresh chunk, from its start
  ASSERT_TRUE(again.data);
  EXPECT_EQ(std::memcmp(again.data, a.data(), a.size()), 0);
}

TEST(HugePageArena, CpuLinearCopiesCheckpointBytesAndReadsLoaderOwnedOnesInPlace) {
  const int64_t rows = 64, cols = 256;
  std::vector<float> w(size_t(rows * cols));
  std::iota(w.begin(), w.end(), 0.0f);
  HugePageArena arena;
  for (const bool owned : {false, true}) {
    QuantizedLinear desc = linear_from_tensor("test.weight", DType::kF32, w.data(), rows, cols);
    desc.loader_owned = owned;
    const CpuLinear linear(desc, detect_isa(), &arena);
    const uint8_t* row0 = linear.weight()->row(0);
    EXPECT_EQ(row0 == reinterpret_cast<const uint8_t*>(w.data()), owned);
    EXPECT_EQ(std::memcmp(row0, w.data(), w.size() * sizeof(float)), 0);
  }
}

}  // namespace
}  // namespace tessera::cpu
