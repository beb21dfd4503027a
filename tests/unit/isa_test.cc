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

// AMX is reported only where the kernel granted the tile state; on a CPU or
// VM that refuses, detection falls back to the vector kernels.
TEST(Isa, AmxOnlyWhenTheKernelGrantsTiles) {
  const cpu::IsaFeatures f = cpu::detect_isa();
  const bool granted = cpu::os_grants_amx_tiles();
  if (!granted) {
    EXPECT_FALSE(f.amx_tile || f.amx_int8 || f.amx_bf16);
  }
  EXPECT_FALSE(f.amx_int8 && !f.amx_tile);
  EXPECT_FALSE(f.amx_bf16 && !f.amx_tile);
  EXPECT_EQ(f.best_level() == "scalar", !(f.avx2 && f.fma && f.f16c));
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
