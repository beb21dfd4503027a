// libFuzzer target: decoding a step plan (what a worker receives every step)
// must turn any bytes into either a plan that encodes back to the same bytes
// or a tessera::Error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "engine/core/error.h"
#include "engine/runtime/step_plan_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const tessera::StepPlan plan = tessera::decode_step_plan(std::span(data, size));
    const std::vector<uint8_t> again = tessera::encode_step_plan(plan);
    if (again.size() != size || !std::equal(again.begin(), again.end(), data)) std::abort();
  } catch (const tessera::Error&) {
  }
  return 0;
}
