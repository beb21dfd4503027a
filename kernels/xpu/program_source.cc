#include "kernels/xpu/program_source.h"

#include "engine/tensor/dtype.h"
#include "kernels/op_types.h"

namespace tessera::xpu {
namespace {

template <typename Enum>
std::string define(const char* name, Enum value) {
  return "#define " + std::string(name) + " " + std::to_string(int(value)) + "\n";
}

}  // namespace

std::string program_source() {
  std::string text;
  text += define("WT_F32", DType::kF32) + define("WT_F16", DType::kF16) + define("WT_BF16", DType::kBF16);
  text += define("WT_Q4_0", DType::kQ4_0) + define("WT_Q4_1", DType::kQ4_1) + define("WT_Q5_0", DType::kQ5_0);
  text += define("WT_Q8_0", DType::kQ8_0) + define("WT_Q4_K", DType::kQ4_K) + define("WT_Q6_K", DType::kQ6_K);
  text += define("ACT_SILU", ops::GatedActivation::kSilu) + define("ACT_GELU_TANH", ops::GatedActivation::kGeluTanh);
  text += define("ACT_SILU_CLAMPED_OAI", ops::GatedActivation::kSiluClampedOai);
  text += define("MASK_SLIDING_WINDOW", ops::MaskMod::kSlidingWindow) + define("MASK_PREFIX_LM", ops::MaskMod::kPrefixLm);
  text += define("SCORE_SOFTCAP", ops::ScoreMod::kSoftcap) + define("SCORE_ALIBI", ops::ScoreMod::kAlibi);
  return text + kKernelSource;
}

}  // namespace tessera::xpu
