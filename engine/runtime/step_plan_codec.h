#pragma once
// A StepPlan as bytes and back: what a leader sends each worker every step.
// Little-endian, versioned, every count checked against the bytes left, so a
// truncated or corrupted message is a clear error and never a crash.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/runtime/step_plan.h"

namespace tessera {

std::vector<uint8_t> encode_step_plan(const StepPlan& plan);
// Throws tessera::Error naming what is malformed and where.
StepPlan decode_step_plan(std::span<const uint8_t> bytes);

}  // namespace tessera
