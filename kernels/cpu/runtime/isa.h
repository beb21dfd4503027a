#pragma once
// x86 instruction-set features detected at run time, so one binary picks the
// best kernels on any x86-64 machine.
#include <string>

namespace tessera::cpu {

struct IsaFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool avx_vnni = false;
  bool amx_tile = false;
  bool amx_int8 = false;
  bool amx_bf16 = false;

  // The widest kernel family these features allow: "avx512", "avx2" or "scalar".
  std::string best_level() const;
  std::string to_string() const;
};

// Reads CPUID and XGETBV: a feature counts only when the OS saves its
// registers. The environment variable TESSERA_MAX_CPU_ISA, where set, caps
// the result (cap_isa), as oneDNN's ONEDNN_MAX_CPU_ISA does: to compare the
// kernel families on one machine, or to keep off one a host runs badly.
IsaFeatures detect_isa();

// `isa` without the features above `level`: "amx" (all), "avx512" (no AMX
// tiles), "avx2" (no AVX-512 either) or "scalar" (the portable kernels).
// Throws tessera::Error naming the accepted levels for any other value.
IsaFeatures cap_isa(IsaFeatures isa, const std::string& level);

// Asks Linux for the AMX tile-data state (arch_prctl ARCH_REQ_XCOMP_PERM)
// and reads back whether this process holds it. False where the kernel,
// the hypervisor or the CPU refuses.
bool os_grants_amx_tiles();

}  // namespace tessera::cpu
