#include <gtest/gtest.h>

#include "kernels/cpu/isa.h"

namespace tessera {
namespace {

// The detector must agree with the compiler's own CPUID reading.
TEST(Isa, AgreesWithCompilerBuiltins) {
  const cpu::IsaFeatures f = cpu::detect_isa();
  __builtin_cpu_init();
  EXPECT_EQ(f.avx2, bool(__builtin_cpu_supports("avx2")));
  EXPECT_EQ(f.fma, bool(__builtin_cpu_supports("fma")));
  EXPECT_EQ(f.avx512f, bool(__builtin_cpu_supports("avx512f")));
  EXPECT_EQ(f.avx512bw, bool(__builtin_cpu_supports("avx512bw")));
  EXPECT_EQ(f.avx512_vnni, bool(__builtin_cpu_supports("avx512vnni")));
  EXPECT_FALSE(f.to_string().empty());
}

TEST(Isa, BestLevelFollowsFeatures) {
  cpu::IsaFeatures f;
  EXPECT_EQ(f.best_level(), "scalar");
  f.avx2 = f.fma = f.f16c = true;
  EXPECT_EQ(f.best_level(), "avx2");
  f.avx512f = f.avx512bw = f.avx512vl = true;
  EXPECT_EQ(f.best_level(), "avx512");
}

}  // namespace
}  // namespace tessera
