#include <gtest/gtest.h>

#include <cstdlib>

#include "engine/core/error.h"
#include "kernels/cpu/runtime/isa.h"

namespace tessera {
namespace {

// The detector must agree with the compiler's own CPUID reading, capped as
// TESSERA_MAX_CPU_ISA says when it is set (make test-avx2 sets it).
TEST(Isa, AgreesWithCompilerBuiltins) {
  const cpu::IsaFeatures f = cpu::detect_isa();
  __builtin_cpu_init();
  cpu::IsaFeatures builtin;
  builtin.avx2 = __builtin_cpu_supports("avx2");
  builtin.fma = __builtin_cpu_supports("fma");
  builtin.avx512f = __builtin_cpu_supports("avx512f");
  builtin.avx512bw = __builtin_cpu_supports("avx512bw");
  builtin.avx512_vnni = __builtin_cpu_supports("avx512vnni");
  const char* cap = std::getenv("TESSERA_MAX_CPU_ISA");
  const cpu::IsaFeatures expected = cap && *cap ? cpu::cap_isa(builtin, cap) : builtin;
  EXPECT_EQ(f.avx2, expected.avx2);
  EXPECT_EQ(f.fma, expected.fma);
  EXPECT_EQ(f.avx512f, expected.avx512f);
  EXPECT_EQ(f.avx512bw, expected.avx512bw);
  EXPECT_EQ(f.avx512_vnni, expected.avx512_vnni);
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

cpu::IsaFeatures everything() {
  cpu::IsaFeatures f;
  f.avx2 = f.fma = f.f16c = f.avx_vnni = true;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512_vnni = f.avx512_bf16 = true;
  f.amx_tile = f.amx_int8 = f.amx_bf16 = true;
  return f;
}

TEST(Isa, CapKeepsOnlyTheLevelsAtOrBelowIt) {
  EXPECT_EQ(cpu::cap_isa(everything(), "amx").to_string(), everything().to_string());
  const cpu::IsaFeatures avx512 = cpu::cap_isa(everything(), "avx512");
  EXPECT_TRUE(avx512.avx512_vnni);
  EXPECT_FALSE(avx512.amx_tile || avx512.amx_int8 || avx512.amx_bf16);
  const cpu::IsaFeatures avx2 = cpu::cap_isa(everything(), "avx2");
  EXPECT_EQ(avx2.best_level(), "avx2");
  EXPECT_FALSE(avx2.avx512f || avx2.avx512_vnni || avx2.amx_int8);
  EXPECT_EQ(cpu::cap_isa(everything(), "scalar").to_string(), "none");
  // A cap never adds what the machine lacks.
  EXPECT_EQ(cpu::cap_isa(cpu::IsaFeatures{}, "amx").to_string(), "none");
  EXPECT_THROW(cpu::cap_isa(everything(), "avx1024"), Error);
  EXPECT_THROW(cpu::cap_isa(everything(), "AVX2"), Error);
}

TEST(Isa, EnvironmentCapsDetection) {
  ::setenv("TESSERA_MAX_CPU_ISA", "avx2", 1);
  const cpu::IsaFeatures capped = cpu::detect_isa();
  ::setenv("TESSERA_MAX_CPU_ISA", "bogus", 1);
  EXPECT_THROW(cpu::detect_isa(), Error);
  ::unsetenv("TESSERA_MAX_CPU_ISA");
  const cpu::IsaFeatures full = cpu::detect_isa();
  EXPECT_FALSE(capped.avx512f || capped.amx_tile);
  EXPECT_EQ(capped.avx2, full.avx2);
}

}  // namespace
}  // namespace tessera
