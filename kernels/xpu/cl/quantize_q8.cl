// Activations quantized to 8 bits per 32-element chunk, as the CPU backend
// quantizes them before multiplying GGUF block weights (kernels/cpu/
// quantize_rows.cc): Q8_0 for Q4_0/Q5_0/Q8_0 weights, Q8_1 for Q4_1 and
// Q8_K for the k-quants. One array per field: qs (n_tokens, cols) values,
// d and s (n_tokens, cols / 32) per-chunk scales and sums.

// One work-item per 32-element chunk: Q8_0, and Q8_1 with sums.
__kernel void quantize_q8_0(__global const float* x, long n_chunks, int with_sums, __global char* qs,
                            __global float* d, __global float* s) {
  const long c = get_global_id(0);
  if (c >= n_chunks) return;
  __global const float* v = x + c * CHUNK;
  float amax = 0.0f;
  for (int i = 0; i < CHUNK; ++i) amax = fmax(amax, fabs(v[i]));
  const float scale = amax / 127.0f;
  const float inverse = amax != 0.0f ? 127.0f / amax : 0.0f;
  int sum = 0;
  for (int i = 0; i < CHUNK; ++i) {
    const int q = convert_int_rte(v[i] * inverse);
    qs[c * CHUNK + i] = (char)q;
    sum += q;
  }
  d[c] = round_half(scale);
  if (with_sums) s[c] = round_half(scale * (float)sum);
}

// One work-item per 256-element super-block: Q8_K, scaled by the element of
// largest magnitude (the first such), as the CPU does.
__kernel void quantize_q8_k(__global const float* x, long n_blocks, __global char* qs, __global float* d,
                            __global float* s) {
  const long block = get_global_id(0);
  if (block >= n_blocks) return;
  __global const float* v = x + block * 256;
  float amax = 0.0f;
  int best = 0;
  for (int i = 0; i < 256; ++i) {
    if (fabs(v[i]) > amax) {
      amax = fabs(v[i]);
      best = i;
    }
  }
  if (amax == 0.0f) {
    for (int i = 0; i < 256; ++i) qs[block * 256 + i] = 0;
    for (int c = 0; c < 8; ++c) d[block * 8 + c] = 0.0f, s[block * 8 + c] = 0.0f;
    return;
  }
  const float iscale = -127.0f / v[best];
  for (int c = 0; c < 8; ++c) {
    int sum = 0;
    for (int i = c * CHUNK; i < (c + 1) * CHUNK; ++i) {
      const int q = min(127, convert_int_rte(iscale * v[i]));
      qs[block * 256 + i] = (char)q;
      sum += q;
    }
    d[block * 8 + c] = 1.0f / iscale;
    s[block * 8 + c] = (float)sum;
  }
}
