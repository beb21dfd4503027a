#pragma once
// Quantisation of f32 activation rows into the 8-bit blocks that the
// quantised dot products consume. Rounding follows llama.cpp's x86 path
// (round half to even), so results agree with it bit for bit.
#include <cstdint>

#include "quant/gguf_blocks.h"

namespace tessera::cpu {

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n);
void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n);
void convert_row_f16(const float* x, uint16_t* y, int64_t n);
void convert_row_bf16(const float* x, uint16_t* y, int64_t n);  // round to nearest even

}  // namespace tessera::cpu
