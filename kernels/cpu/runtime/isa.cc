#include "kernels/cpu/runtime/isa.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

#include "engine/core/error.h"

namespace tessera::cpu {
namespace {

struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs cpuid(uint32_t leaf, uint32_t subleaf) {
  CpuidRegs r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

uint64_t read_xcr0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

bool bit(uint32_t reg, int index) { return (reg >> index) & 1u; }

// Linux's arch_prctl requests for dynamically enabled state components.
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr unsigned kXfeatureTileData = 18;

}  // namespace

bool os_grants_amx_tiles() {
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureTileData) != 0) return false;
  uint64_t permitted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) != 0) return false;
  return (permitted >> kXfeatureTileData) & 1u;
}

IsaFeatures detect_isa() {
  IsaFeatures f;
  const uint32_t max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 1) return f;
  const CpuidRegs leaf1 = cpuid(1, 0);
  const bool osxsave = bit(leaf1.ecx, 27);
  if (!osxsave) return f;
  const uint64_t xcr0 = read_xcr0();
  const bool os_avx = (xcr0 & 0x6) == 0x6;            // XMM and YMM state
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;  // opmask, ZMM halves
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;    // tile config and data
  f.fma = os_avx && bit(leaf1.ecx, 12);
  f.f16c = os_avx && bit(leaf1.ecx, 29);
  if (max_leaf < 7) return f;
  const CpuidRegs leaf7 = cpuid(7, 0);
  const CpuidRegs leaf7_1 = cpuid(7, 1);
  f.avx2 = os_avx && bit(leaf7.ebx, 5);
  f.avx_vnni = os_avx && bit(leaf7_1.eax, 4);
  f.avx512f = os_avx512 && bit(leaf7.ebx, 16);
  f.avx512bw = os_avx512 && bit(leaf7.ebx, 30);
  f.avx512vl = os_avx512 && bit(leaf7.ebx, 31);
  f.avx512_vnni = os_avx512 && bit(leaf7.ecx, 11);
  f.avx512_bf16 = os_avx512 && bit(leaf7_1.eax, 5);
  // CPUID and XCR0 can both report AMX where tile instructions fault: the
  // tiles count only once the kernel has granted this process their state.
  const bool amx = os_amx && bit(leaf7.edx, 24) && os_grants_amx_tiles();
  f.amx_bf16 = amx && bit(leaf7.edx, 22);
  f.amx_tile = amx;
  f.amx_int8 = amx && bit(leaf7.edx, 25);
  const char* cap = std::getenv("TESSERA_MAX_CPU_ISA");
  return cap && *cap ? cap_isa(f, cap) : f;
}

IsaFeatures cap_isa(IsaFeatures isa, const std::string& level) {
  if (level == "amx") return isa;
  if (level != "avx512" && level != "avx2" && level != "scalar") {
    throw Error("TESSERA_MAX_CPU_ISA: unknown level '" + level + "' (amx, avx512, avx2 or scalar)");
  }
  isa.amx_tile = isa.amx_int8 = isa.amx_bf16 = false;
  if (level == "avx512") return isa;
  isa.avx512f = isa.avx512bw = isa.avx512vl = isa.avx512_vnni = isa.avx512_bf16 = false;
  if (level == "avx2") return isa;
  return IsaFeatures{};
}

std::string IsaFeatures::best_level() const {
  if (avx512f && avx512bw && avx512vl) return "avx512";
  if (avx2 && fma && f16c) return "avx2";
  return "scalar";
}

std::string IsaFeatures::to_string() const {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx_vnni, "avx-vnni");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512_vnni, "avx512-vnni");
  add(avx512_bf16, "avx512-bf16");
  add(amx_tile, "amx-tile");
  add(amx_int8, "amx-int8");
  add(amx_bf16, "amx-bf16");
  return s.empty() ? "none" : s;
}

}  // namespace tessera::cpu
