// The row-wise and element-wise ops of the table: embedding lookup and
// dequantization, RMSNorm, RoPE, gated activations, residual add, scaling,
// softcap, row gathering and the KV-cache write.

// One work-item per 32-element chunk of the looked-up rows; ids outside the
// table's rows (a vocabulary-parallel shard) give zeros.
__kernel void embedding(int type, __global const uchar* table, long row_bytes, long first_id, long n_rows, long dim,
                        __global const int* ids, long n_tokens, __global float* out) {
  const long chunks_per_row = dim / CHUNK;
  const long i = get_global_id(0);
  if (i >= n_tokens * chunks_per_row) return;
  const long t = i / chunks_per_row, c = i % chunks_per_row;
  const long row = (long)ids[t] - first_id;
  float v[CHUNK];
  if (row < 0 || row >= n_rows) {
    for (int j = 0; j < CHUNK; ++j) v[j] = 0.0f;
  } else {
    decode_chunk(type, table + row * row_bytes, c, v);
  }
  __global float* dst = out + t * dim + c * CHUNK;
  for (int j = 0; j < CHUNK; ++j) dst[j] = v[j];
}

// One work-item per 32-element chunk.
__kernel void dequantize(int type, __global const uchar* src, __global float* dst, long n_chunks) {
  const long c = get_global_id(0);
  if (c >= n_chunks) return;
  float v[CHUNK];
  decode_chunk(type, src, c, v);
  for (int i = 0; i < CHUNK; ++i) dst[c * CHUNK + i] = v[i];
}

#define NORM_THREADS 64

// One work-group per row: the sum of squares in double, element after
// element as the CPU sums it (another order can round the mean otherwise);
// then each work-item scales its own elements (out may be x).
__kernel __attribute__((reqd_work_group_size(NORM_THREADS, 1, 1)))
void rms_norm(__global const float* x, __global const float* weight, float weight_offset, float eps, long dim,
              __global float* out) {
  __local float scale_s;
  const int tid = get_local_id(0);
  __global const float* row = x + get_group_id(0) * dim;
  if (tid == 0) {
    wide_float sum = 0;
    for (long i = 0; i < dim; ++i) sum += (wide_float)(row[i] * row[i]);
    scale_s = 1.0f / sqrt((float)(sum / (wide_float)dim) + eps);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const float scale = scale_s;
  __global float* dst = out + get_group_id(0) * dim;
  for (long i = tid; i < dim; i += NORM_THREADS) dst[i] = (row[i] * scale) * (weight[i] + weight_offset);
}

// One work-item per (token, head, pair). The angles' cosines and sines come
// from the host's table (ops::rope_table) for positions inside it; past it,
// ggml's angles advance by repeated multiplication by theta_scale, and the
// sine and cosine are taken in double and rounded. ggml_numerics selects
// ops::RopeNumerics::kGgml, interleaved ops::RopeStyle::kInterleaved.
__kernel void rope(__global float* x, __global const int* positions, long n_tokens, int n_heads, int head_dim,
                   int rotary_dim, int interleaved, int ggml_numerics, float theta_scale, float freq_scale,
                   int has_factors, __global const float* freq_factors, __global const float* inv_freq,
                   int table_positions, __global const float* cos_table) {
  const int pairs = rotary_dim / 2;
  const long idx = get_global_id(0);
  if (idx >= n_tokens * n_heads * pairs) return;
  const int i = (int)(idx % pairs);
  const long token_head = idx / pairs;
  const long t = token_head / n_heads;
  const int position = positions[t];
  float s, c;
  if (position >= 0 && position < table_positions) {
    c = cos_table[(long)position * pairs + i];
    s = cos_table[((long)table_positions + position) * pairs + i];
  } else {
    const float pos = (float)position;
    float angle;
    if (!ggml_numerics) {
      angle = inv_freq[i] * pos;
    } else {
      float theta = pos;
      for (int k = 0; k < i; ++k) theta = theta * theta_scale;
      const float ff = has_factors ? freq_factors[i] : 1.0f;
      angle = freq_scale * (theta / ff);
    }
    wide_float cd;
    const wide_float sd = sincos((wide_float)angle, &cd);
    s = (float)sd;
    c = (float)cd;
  }
  __global float* v = x + token_head * head_dim;
  const int a = interleaved ? 2 * i : i;
  const int b = interleaved ? 2 * i + 1 : i + pairs;
  const float x0 = v[a], x1 = v[b];
  if (ggml_numerics) {
    v[a] = fma(x0, c, -(x1 * s));
    v[b] = fma(x0, s, x1 * c);
  } else {
    v[a] = x0 * c + (-x1) * s;
    v[b] = x1 * c + x0 * s;
  }
}

// The fused form builds llama.cpp's table (ACT_GELU_TANH_TABLE); the plain one is ACT_GELU_TANH.
float gelu_tanh(float x, int fused) {
  const float sqrt_2_over_pi = 0.7978845608028654f, coeff = 0.044715f;
  const float inner = fused ? fma(coeff * x, x, 1.0f) : 1.0f + (coeff * x) * x;
  return (0.5f * x) * (1.0f + tanh_rounded((sqrt_2_over_pi * x) * inner));
}

__kernel void gated_activation(int act, __global const float* gate, __global const float* up, long n,
                               __global float* out) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const float g = gate[i];
  float a;
  if (act == ACT_SILU_CLAMPED_OAI) {
    // gpt-oss's clamped SwiGLU (ops::GatedActivation::kSiluClampedOai).
    const float x = fmin(g, 7.0f), u = fmin(fmax(up[i], -7.0f), 7.0f);
    const float e = exp(1.702f * (-x));
    out[i] = x / (1.0f + e) * (u + 1.0f);
    return;
  }
  if (act == ACT_SILU) {
    a = g / (1.0f + vector_expf(-g));
  } else if (act == ACT_GELU_TANH) {
    a = gelu_tanh(g, 0);
  } else {
    // llama.cpp's table: input and result rounded to f16, the tails exact.
    a = g <= -10.0f ? 0.0f : g >= 10.0f ? g : round_half(gelu_tanh(round_half(g), 1));
  }
  out[i] = a * up[i];
}

__kernel void add(__global float* x, __global const float* y, long n) {
  const long i = get_global_id(0);
  if (i < n) x[i] = x[i] + y[i];
}

__kernel void scale(__global float* x, long n, float factor) {
  const long i = get_global_id(0);
  if (i < n) x[i] = x[i] * factor;
}

__kernel void softcap(__global float* x, long n, float cap) {
  const long i = get_global_id(0);
  if (i < n) x[i] = cap * tanh_rounded(x[i] / cap);
}

__kernel void gather_rows(__global const float* x, long width, __global const int* rows, long n_rows,
                          __global float* out) {
  const long i = get_global_id(0);
  if (i >= n_rows * width) return;
  const long r = i / width, c = i % width;
  out[i] = x[(long)rows[r] * width + c];
}

__kernel void scatter_add_rows(__global float* x, long width, __global const int* rows, __global const float* scales,
                               long n_rows, __global const float* y) {
  const long i = get_global_id(0);
  if (i >= n_rows * width) return;
  const long r = i / width, c = i % width;
  const float term = scales[r] * y[i];
  x[(long)rows[r] * width + c] += term;
}

// One work-item per element of the tokens' rows; f16 pages hold half bits.
__kernel void kv_write(__global uchar* k_pages, __global uchar* v_pages, int f16, long row, __global const long* slots,
                       long n_tokens, __global const float* k, __global const float* v) {
  const long i = get_global_id(0);
  if (i >= n_tokens * row) return;
  const long t = i / row, j = i % row;
  const long dst = slots[t] * row + j;
  if (f16) {
    ((__global ushort*)k_pages)[dst] = float_to_half_bits(k[i]);
    ((__global ushort*)v_pages)[dst] = float_to_half_bits(v[i]);
  } else {
    ((__global float*)k_pages)[dst] = k[i];
    ((__global float*)v_pages)[dst] = v[i];
  }
}
