#pragma once
// Binding a checkpoint's tensors to a decoder's weights: the Binder reads
// each tensor by name (checked against the shape the spec implies), keeps
// it in a format the backend multiplies (quantized at load when asked) and
// places it on the device. For the files in models/ that bind weights.
#include <cstring>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/io/content_hash.h"
#include "models/architecture.h"
#include "models/decoder_weights.h"
#include "models/tensor_source.h"
#include "quant/dequantize.h"
#include "quant/int_matrix_codec.h"
#include "quant/mxfp4_repack.h"
#include "quant/published_formats.h"

namespace tessera::binding {

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The artifact cache's kind for linears quantized at load.
constexpr const char* kIntMatrixArtifact = "int-matrix";

// Which of a scheme's configurations a linear takes. A router is never
// quantized at load: its scores pick the experts.
enum class LinearRole : uint8_t { kLayer, kValue, kHead, kRouter };

// Layer `layer` of `n_layers` (a16w4's last one has finer groups); v keeps
// value's activation policy.
inline quant::IntQuantConfig config_for(const quant::SchemeChoice& s, LinearRole role, int layer, int n_layers) {
  if (role == LinearRole::kHead) return s.output_head;
  quant::IntQuantConfig c = s.layer_weights(layer, n_layers);
  c.activation = role == LinearRole::kValue ? s.value.activation : c.activation;
  return c;
}

class Binder {
 public:
  Binder(const TensorSource& source, Backend& backend, DecoderWeights& out, const LinearQuantization& quantization)
      : source_(source), backend_(backend), out_(out), quantization_(quantization) {}

  std::optional<SourceTensor> find(const std::string& name) const { return name.empty() ? std::nullopt : source_.find(name); }

  SourceTensor require(const std::string& name, const std::vector<int64_t>& shape) {
    const auto t = find(name);
    if (!t) throw Error(source_.name() + ": tensor '" + (name.empty() ? "(unnamed)" : name) + "' is missing");
    if (t->shape != shape) {
      throw Error(source_.name() + ": tensor '" + name + "' has shape " + shape_text(t->shape) + ", expected " + shape_text(shape));
    }
    used_.insert(name);
    return *t;
  }

  void mark_used(const std::string& name) { used_.insert(name); }
  // The decoder layer, of n_layers, whose linears are bound next.
  void set_layer(int layer, int n_layers) { layer_ = layer, n_layers_ = n_layers; }
  bool stored_quantization() const { return quantization_.stored.has_value(); }
  const std::string& source_name() const { return source_.name(); }
  bool used(const std::string& name) const { return used_.count(name) != 0; }

  // A vector as f32 in host memory: in place when stored as f32, else converted once.
  const float* host_vector(const std::string& name, int64_t n, bool required) {
    if (!required && !find(name)) return nullptr;
    const SourceTensor t = require(name, {n});
    if (t.dtype == DType::kF32) return static_cast<const float*>(t.data);
    return converted(name, t);
  }

  // The same, resident on the device.
  const float* device_vector(const std::string& name, int64_t n, bool required) {
    const float* host = host_vector(name, n, required);
    return host ? static_cast<const float*>(place(host, size_t(n) * sizeof(float))) : nullptr;
  }

  // A matrix as a linear weight: as the checkpoint stores it quantized, in
  // place in a format the backend multiplies, quantized now when asked,
  // else converted to f32 once. The output head's and v's schemes may differ
  // from the other layers' (quant/schemes.h).
  QuantizedLinear linear(const std::string& name, int64_t rows, int64_t cols, LinearRole role = LinearRole::kLayer) {
    if (quantization_.stored && quantization_.stored->format != quant::CheckpointFormat::kTessera) {
      if (auto stored = published_int_linear(name, rows, cols)) return *stored;
    } else if (quantization_.stored) {
      if (auto stored = stored_int_linear(name, rows, cols, config_for(*quantization_.stored, role, layer_, n_layers_))) {
        return *stored;
      }
    }
    return linear_of(name, require(name, {rows, cols}), rows, cols, role);
  }

  // Expert `expert` of `pattern`: its own (rows, cols) matrix where the name
  // has "{x}", else its part of one (n_experts, rows, cols) tensor.
  QuantizedLinear expert_linear(const std::string& pattern, int expert, int n_experts, int64_t rows, int64_t cols) {
    if (pattern.find("{x}") != std::string::npos) return linear(expert_name(pattern, expert), rows, cols);
    const SourceTensor all = require(pattern, {n_experts, rows, cols});
    const uint64_t bytes = all.n_bytes / uint64_t(n_experts);
    const SourceTensor one{all.dtype, static_cast<const uint8_t*>(all.data) + bytes * uint64_t(expert), {rows, cols}, bytes};
    return linear_of(pattern + "[expert " + std::to_string(expert) + "]", one, rows, cols, LinearRole::kLayer);
  }

  // A floating-point or GGUF-block matrix as a linear weight: quantized now
  // when asked, in place where the backend multiplies its format, else
  // converted to f32 once.
  // `loader_owned`: t's bytes are a copy this binder made (QuantizedLinear::loader_owned).
  QuantizedLinear linear_of(const std::string& name, const SourceTensor& t, int64_t rows, int64_t cols, LinearRole role,
                            bool loader_owned = false) {
    if (quantization_.at_load && role != LinearRole::kRouter) {
      const quant::SchemeChoice& s = *quantization_.at_load;
      return quantize_now(name, t, rows, cols, config_for(s, role, layer_, n_layers_));
    }
    if (backend_.supports(Op::kLinear, t.dtype)) {
      QuantizedLinear w = linear_from_tensor(name, t.dtype, t.data, rows, cols);
      w.loader_owned = loader_owned;
      return w;
    }
    QuantizedLinear w = linear_from_tensor(name, DType::kF32, converted(name, t), rows, cols);
    w.loader_owned = true;
    return w;
  }

  // Output rows [first, first + count) of a column-parallel weight, with
  // their part of the bias.
  std::unique_ptr<PreparedLinear> rows_of(const QuantizedLinear& full, int64_t first, int64_t count, const std::string& bias_name,
                                          bool with_bias) {
    return rows_with_bias(full, first, count, with_bias ? host_vector(bias_name, full.rows, true) : nullptr);
  }

  // The same with the whole bias (full.rows) given, or null.
  std::unique_ptr<PreparedLinear> rows_with_bias(const QuantizedLinear& full, int64_t first, int64_t count, const float* bias) {
    QuantizedLinear w = count == full.rows ? full : full.row_slice(full.name + "[rows " + std::to_string(first) + "+]", first, count);
    if (bias) w.bias = bias + first;
    return backend_.prepare_linear(w);
  }

  // Input columns [first, first + count) of a row-parallel weight, copied
  // out of the checkpoint; the bias goes to one rank only.
  std::unique_ptr<PreparedLinear> columns_of(const QuantizedLinear& full, int64_t first, int64_t count, const std::string& bias_name,
                                             bool with_bias, bool adds_bias) {
    return columns_with_bias(full, first, count, with_bias ? host_vector(bias_name, full.rows, true) : nullptr, adds_bias);
  }

  // The same with the bias (full.rows) given, or null.
  std::unique_ptr<PreparedLinear> columns_with_bias(const QuantizedLinear& full, int64_t first, int64_t count, const float* bias,
                                                    bool adds_bias) {
    QuantizedLinear w = count == full.cols ? full : column_copy(full, first, count);
    if (bias) w.bias = adds_bias ? bias : nullptr;
    return backend_.prepare_linear(w);
  }

  // Expert `expert` of an input-major (n_experts, cols, rows * step) tensor:
  // the (rows, cols) matrix of its output channels offset, offset + step, …,
  // transposed once into f32 (WeightNames::experts_input_major).
  QuantizedLinear input_major_expert(const std::string& name, int expert, int n_experts, int64_t rows, int64_t cols, int step,
                                     int offset) {
    const SourceTensor all = require(name, {n_experts, cols, rows * step});
    const float* values = all.dtype == DType::kF32 ? static_cast<const float*>(all.data) : converted_once(name, all);
    const float* mine = values + size_t(expert) * size_t(cols) * size_t(rows * step);
    std::vector<uint8_t>& buf = out_.converted.emplace_back(size_t(rows * cols) * sizeof(float));
    float* out = reinterpret_cast<float*>(buf.data());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = mine[c * rows * step + r * step + offset];
    }
    const SourceTensor one{DType::kF32, out, {rows, cols}, uint64_t(buf.size())};
    return linear_of(name + "[expert " + std::to_string(expert) + ", " + std::to_string(offset) + " of " + std::to_string(step) + "]",
                     one, rows, cols, LinearRole::kLayer, true);
  }

  // The same matrix from Hugging Face's MXFP4 form of `name`: NAME_blocks
  // (n_experts, rows * step, cols / 32, 16) and NAME_scales, output-major,
  // repacked into GGUF's MXFP4 blocks (quant/mxfp4_repack.h).
  QuantizedLinear mxfp4_expert(const std::string& name, int expert, int n_experts, int64_t rows, int64_t cols, int step, int offset) {
    if (cols % kQK != 0) {
      throw Error(source_.name() + ": tensor '" + name + "_blocks': " + std::to_string(cols) + " inputs are not whole MXFP4 blocks");
    }
    const int64_t blocks = cols / kQK, all_rows = rows * step;
    const SourceTensor packed = require(name + "_blocks", {n_experts, all_rows, blocks, kQK / 2});
    const SourceTensor exponents = require(name + "_scales", {n_experts, all_rows, blocks});
    for (const auto& [t, suffix] : {std::pair{&packed, "_blocks"}, {&exponents, "_scales"}}) {
      if (t->dtype != DType::kU8) throw Error(source_.name() + ": tensor '" + name + suffix + "' must be U8 (MXFP4)");
    }
    std::vector<uint8_t>& buf = out_.converted.emplace_back(size_t(rows * blocks) * sizeof(BlockMXFP4));
    auto* out = reinterpret_cast<BlockMXFP4*>(buf.data());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t from = int64_t(expert) * all_rows + r * step + offset;
      quant::hf_mxfp4_row_to_blocks(static_cast<const uint8_t*>(packed.data) + from * blocks * (kQK / 2),
                                    static_cast<const uint8_t*>(exponents.data) + from * blocks, blocks, out + r * blocks);
    }
    const SourceTensor one{DType::kMXFP4, out, {rows, cols}, uint64_t(buf.size())};
    return linear_of(name + "[expert " + std::to_string(expert) + ", " + std::to_string(offset) + " of " + std::to_string(step) + "]",
                     one, rows, cols, LinearRole::kLayer, true);
  }

  // A one-row linear stored as (1, cols) or as a vector (cols), kept in
  // floating point (a shared expert's gate).
  QuantizedLinear single_row(const std::string& name, int64_t cols) {
    const auto t = find(name);
    if (t && t->shape.size() == 1) {
      const SourceTensor row = require(name, {cols});
      return linear_of(name, {row.dtype, row.data, {1, cols}, row.n_bytes}, 1, cols, LinearRole::kRouter);
    }
    return linear(name, 1, cols, LinearRole::kRouter);
  }

  // Entries offset, offset + step, … of expert `expert`'s row of an
  // (n_experts, rows * step) bias.
  const float* strided_expert_bias(const std::string& name, int expert, int n_experts, int64_t rows, int step, int offset) {
    const SourceTensor all = require(name, {n_experts, rows * step});
    const float* values = all.dtype == DType::kF32 ? static_cast<const float*>(all.data) : converted_once(name, all);
    if (step == 1) return values + size_t(expert) * size_t(rows);
    std::vector<uint8_t>& buf = out_.converted.emplace_back(size_t(rows) * sizeof(float));
    float* out = reinterpret_cast<float*>(buf.data());
    for (int64_t r = 0; r < rows; ++r) out[r] = values[size_t(expert) * size_t(rows * step) + size_t(r * step + offset)];
    return out;
  }

  // Expert `expert`'s bias of `rows`: its own vector where the name has
  // "{x}", else its row of one (n_experts, rows) tensor.
  const float* expert_bias(const std::string& pattern, int expert, int n_experts, int64_t rows) {
    if (pattern.find("{x}") != std::string::npos) return host_vector(expert_name(pattern, expert), rows, true);
    return strided_expert_bias(pattern, expert, n_experts, rows, 1, 0);
  }

  const void* place(const void* host, size_t bytes) {
    out_.resident.push_back(backend_.place_weights(host, bytes));
    return out_.resident.back().get();
  }

 private:
  // NAME as int8 (rows, cols) or packed int4 (rows, cols / 2) with NAME_scale
  // (rows, groups) and NAME_zero_point; nullopt when NAME is stored as floats.
  std::optional<QuantizedLinear> stored_int_linear(const std::string& name, int64_t rows, int64_t cols,
                                                   const quant::IntQuantConfig& config) {
    const auto t = find(name);
    if (!t || (t->dtype != DType::kI8 && t->dtype != DType::kU8)) return std::nullopt;
    const int bits = t->dtype == DType::kI8 ? 8 : 4;
    if (bits != config.bits) {
      throw Error(source_.name() + ": tensor '" + name + "' holds " + std::to_string(bits) +
                  "-bit weights but quantization_config says " + std::to_string(config.bits));
    }
    if (cols % 2 != 0) throw Error(source_.name() + ": tensor '" + name + "': odd number of input features");
    require(name, {rows, bits == 8 ? cols : cols / 2});
    WeightScheme scheme;
    try {
      scheme = quant::int_scheme(name, config, cols);
    } catch (const Error& e) {
      throw Error(source_.name() + ": " + e.what());
    }
    const int64_t groups = quant::group_count(cols, scheme.group_size);
    QuantizedLinear w;
    w.name = name;
    w.scheme = scheme;
    w.rows = rows;
    w.cols = cols;
    w.data = t->data;
    w.row_stride = uint64_t(bits == 8 ? cols : cols / 2);
    const SourceTensor scales = require(name + "_scale", {rows, groups});
    w.scales = scales.dtype == DType::kF32 ? scales.data : converted(name + "_scale", scales);
    if (scheme.has_zero_points) {
      const SourceTensor zeros = require(name + "_zero_point", {rows, groups});
      if (zeros.dtype != DType::kI8) throw Error(source_.name() + ": tensor '" + name + "_zero_point' must be I8");
      w.zero_points = zeros.data;
    }
    return w;
  }

  // An AutoAWQ (GEMM) or AutoGPTQ linear: PREFIX.qweight, .qzeros, .scales
  // (and GPTQ's .g_idx) for NAME = PREFIX.weight, unpacked into the integer
  // layout; nullopt when the layer is stored in floating point.
  std::optional<QuantizedLinear> published_int_linear(const std::string& name, int64_t rows, int64_t cols) {
    const std::string suffix = ".weight";
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return std::nullopt;
    const std::string prefix = name.substr(0, name.size() - suffix.size());
    if (!find(prefix + ".qweight")) return std::nullopt;
    const quant::SchemeChoice& s = *quantization_.stored;
    const bool awq = s.format == quant::CheckpointFormat::kAwq;
    const int64_t group = s.layers.group_size == 0 ? cols : s.layers.group_size;
    if (rows % 8 != 0 || cols % group != 0 || (!awq && cols % 8 != 0)) {
      throw Error(source_.name() + ": tensor '" + prefix + ".qweight': " + std::to_string(rows) + "x" + std::to_string(cols) +
                  " does not pack into 32-bit words in groups of " + std::to_string(group));
    }
    const int64_t groups = cols / group;
    quant::PackedLinear packed{};
    packed.qweight = int32_tensor(prefix + ".qweight", awq ? std::vector<int64_t>{cols, rows / 8} : std::vector<int64_t>{cols / 8, rows});
    packed.qzeros = int32_tensor(prefix + ".qzeros", {groups, rows / 8});
    const SourceTensor scales = require(prefix + ".scales", {groups, rows});
    packed.scales = scales.dtype == DType::kF32 ? static_cast<const float*>(scales.data) : converted(prefix + ".scales", scales);
    if (!awq && find(prefix + ".g_idx")) packed.g_idx = int32_tensor(prefix + ".g_idx", {cols});
    quant::UnpackedLinear u;
    try {
      u = awq ? quant::unpack_awq(name, packed, rows, cols, group) : quant::unpack_gptq(name, packed, rows, cols, group, s.gptq_zero_offset);
    } catch (const Error& e) {
      throw Error(source_.name() + ": " + e.what());
    }
    out_.quantized.push_back(std::move(u.matrix));
    QuantizedLinear w = out_.quantized.back().view(name);
    if (!u.input_order.empty()) w.input_order = out_.input_orders.emplace_back(std::move(u.input_order)).data();
    return w;
  }

  // Columns [first, first + count) of every row, in whole blocks or groups,
  // as a weight of its own held in `out_.converted`.
  QuantizedLinear column_copy(const QuantizedLinear& w, int64_t first, int64_t count) {
    const std::string part = w.name + "[cols " + std::to_string(first) + ".." + std::to_string(first + count) + ")";
    if (w.input_order) throw Error(source_.name() + ": tensor '" + w.name + "': act-order weights cannot be split by input channel");
    const bool int_scheme = quant::is_int_scheme(w.scheme);
    const int64_t unit = int_scheme ? w.scheme.group_size : int64_t(dtype_info(w.scheme.storage).block_elems);
    if (first % unit != 0 || count % unit != 0 || first + count > w.cols) {
      throw Error(source_.name() + ": tensor '" + w.name + "': columns [" + std::to_string(first) + ", " + std::to_string(first + count) +
                  ") are not whole blocks of " + std::to_string(unit) + "; the model does not split over this many ranks");
    }
    // Bytes of `n` stored elements.
    const auto bytes = [&](int64_t n) -> uint64_t {
      if (int_scheme) return w.scheme.storage == DType::kI8 ? uint64_t(n) : uint64_t(n) / 2;
      return *dtype_bytes(w.scheme.storage, uint64_t(n));
    };
    const uint64_t skip = bytes(first), row_bytes = bytes(count);
    std::vector<uint8_t>& data = out_.converted.emplace_back(row_bytes * uint64_t(w.rows));
    for (int64_t r = 0; r < w.rows; ++r) {
      std::memcpy(data.data() + uint64_t(r) * row_bytes, static_cast<const uint8_t*>(w.data) + uint64_t(r) * w.row_stride + skip, row_bytes);
    }
    QuantizedLinear sliced = w;
    sliced.name = part;
    sliced.loader_owned = true;
    sliced.cols = count;
    sliced.data = data.data();
    sliced.row_stride = row_bytes;
    if (int_scheme) {
      const int64_t groups = quant::group_count(w.cols, unit), kept = count / unit, skipped = first / unit;
      sliced.scales = copy_groups<float>(static_cast<const float*>(w.scales), w.rows, groups, skipped, kept);
      if (w.zero_points) sliced.zero_points = copy_groups<int8_t>(static_cast<const int8_t*>(w.zero_points), w.rows, groups, skipped, kept);
    }
    return sliced;
  }

  // Groups [skipped, skipped + kept) of each row of a (rows, groups) table.
  template <class T>
  const T* copy_groups(const T* table, int64_t rows, int64_t groups, int64_t skipped, int64_t kept) {
    std::vector<uint8_t>& out = out_.converted.emplace_back(size_t(rows * kept) * sizeof(T));
    T* dst = reinterpret_cast<T*>(out.data());
    for (int64_t r = 0; r < rows; ++r) std::memcpy(dst + r * kept, table + r * groups + skipped, size_t(kept) * sizeof(T));
    return dst;
  }

  const int32_t* int32_tensor(const std::string& name, const std::vector<int64_t>& shape) {
    const SourceTensor t = require(name, shape);
    if (t.dtype != DType::kI32) throw Error(source_.name() + ": tensor '" + name + "' must be I32");
    return static_cast<const int32_t*>(t.data);
  }

  QuantizedLinear quantize_now(const std::string& name, const SourceTensor& t, int64_t rows, int64_t cols,
                               const quant::IntQuantConfig& config) {
    try {
      const std::string key = quantization_.cache ? int_matrix_key(t, rows, cols, config) : "";
      if (!key.empty() && cached_int_matrix(key, rows, cols)) {
        ++out_.cached_linears;
        return out_.quantized.back().view(name);
      }
      const std::vector<float> values = tensor_as_f32(name, t);
      out_.quantized.push_back(quant::quantize_rtn(name, values.data(), rows, cols, config));
      ++out_.quantized_linears;
      if (!key.empty()) quantization_.cache->store(kIntMatrixArtifact, key, quant::encode_int_matrix(out_.quantized.back()));
    } catch (const Error& e) {
      throw Error(source_.name() + ": " + e.what());
    }
    return out_.quantized.back().view(name);
  }

  // The content key of a linear quantized at load: its stored bytes and
  // format, its shape, every quantization setting and the host ISA.
  std::string int_matrix_key(const SourceTensor& t, int64_t rows, int64_t cols, const quant::IntQuantConfig& config) const {
    return ContentHash()
        .add(kIntMatrixArtifact)
        .add(dtype_name(t.dtype))
        .add_number(rows)
        .add_number(cols)
        .add(t.data, size_t(t.n_bytes))
        .add(quant::int_quant_config_bytes(config))
        .add(quantization_.cache_isa)
        .hex();
  }

  // Appends the cached matrix under `key` to out_.quantized; false when
  // there is none (or it does not decode to this shape: made again).
  bool cached_int_matrix(const std::string& key, int64_t rows, int64_t cols) {
    const std::optional<std::string> bytes = quantization_.cache->load(kIntMatrixArtifact, key);
    if (!bytes) return false;
    try {
      quant::IntMatrix m = quant::decode_int_matrix(*bytes);
      if (m.rows != rows || m.cols != cols) return false;
      out_.quantized.push_back(std::move(m));
      return true;
    } catch (const Error&) {
      return false;
    }
  }

  // converted(), made once for a tensor read several times.
  const float* converted_once(const std::string& name, const SourceTensor& t) {
    auto [at, fresh] = converted_by_name_.try_emplace(name, nullptr);
    if (fresh) at->second = converted(name, t);
    return at->second;
  }

  const float* converted(const std::string& name, const SourceTensor& t) {
    if (!can_dequantize(t.dtype)) {
      throw Error(source_.name() + ": tensor '" + name + "': format " + std::string(dtype_name(t.dtype)) + " is not supported");
    }
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    std::vector<uint8_t>& buf = out_.converted.emplace_back(size_t(n) * sizeof(float));
    dequantize_row(t.dtype, t.data, reinterpret_cast<float*>(buf.data()), n);
    return reinterpret_cast<const float*>(buf.data());
  }

  const TensorSource& source_;
  Backend& backend_;
  DecoderWeights& out_;
  const LinearQuantization& quantization_;
  std::set<std::string> used_;
  std::map<std::string, const float*> converted_by_name_;
  int layer_ = 0, n_layers_ = 0;  // set_layer; before it (the head) no layer is the last
};

// O or down: this rank's output rows (exact layout), or its input columns
// [first, first + count) (all-reduce layout).
inline std::unique_ptr<PreparedLinear> output_projection(Binder& b, const TensorShard& shard, const QuantizedLinear& full,
                                                         int64_t first, int64_t count, const float* bias) {
  if (!shard.sharded() || shard.exact()) {
    const int64_t rows = shard.sharded() ? shard.count(shard.model) : full.rows;
    return b.rows_with_bias(full, shard.sharded() ? shard.first(shard.model) : 0, rows, bias);
  }
  return b.columns_with_bias(full, first, count, bias, shard.adds_row_parallel_bias());
}

inline std::unique_ptr<PreparedLinear> output_projection(Binder& b, const TensorShard& shard, const QuantizedLinear& full,
                                                         int64_t first, int64_t count, const std::string& bias_name, bool with_bias) {
  return output_projection(b, shard, full, first, count, with_bias ? b.host_vector(bias_name, full.rows, true) : nullptr);
}

// A mixture-of-experts layer's router and experts, and its shared expert
// where the spec has one (models/bind_experts.cc).
void bind_experts(const DecoderSpec& spec, const WeightNames& names, const TensorShard& shard, int l, Binder& b,
                  LayerWeights& layer);
void bind_shared_expert(const DecoderSpec& spec, const WeightNames& names, const TensorShard& shard, int l, Binder& b,
                        LayerWeights& layer);

}  // namespace tessera::binding
