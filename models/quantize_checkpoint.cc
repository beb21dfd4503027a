#include "models/quantize_checkpoint.h"

#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/core/error.h"
#include "models/activation_scaling.h"
#include "models/architecture.h"
#include "models/gguf_as_hf.h"
#include "models/hf/hf_model_dir.h"
#include "models/safetensors/safetensors_file.h"
#include "models/safetensors/safetensors_writer.h"
#include "models/tensor_source.h"
#include "quant/dequantize.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

// The linear weights of decoder layers [first, end) by name; the output
// head is handled apart.
std::set<std::string> linear_names(const WeightNames& names, int first, int end) {
  std::set<std::string> out;
  for (const std::string* pattern :
       {&names.q, &names.k, &names.v, &names.o, &names.qkv, &names.gate, &names.up, &names.down, &names.gate_up}) {
    if (pattern->empty()) continue;
    for (int l = first; l < end; ++l) out.insert(layer_name(*pattern, l));
  }
  return out;
}

std::vector<float> to_f32(const std::string& name, const SourceTensor& t) {
  if (t.shape.size() != 2) throw Error("tensor '" + name + "' is not a matrix");
  return tensor_as_f32(name, t);
}

// Divides row r of `v` (rows of `width`) by d[r].
void divide_rows(std::vector<float>& v, const std::vector<float>& d) {
  const size_t width = v.size() / d.size();
  for (size_t r = 0; r < d.size(); ++r) {
    for (size_t c = 0; c < width; ++c) v[r * width + c] /= d[r];
  }
}

double relative_error(const float* w, const quant::IntMatrix& m) {
  const QuantizedLinear view = m.view("");
  std::vector<float> back(static_cast<size_t>(m.cols));
  double err = 0, ref = 0;
  for (int64_t r = 0; r < m.rows; ++r) {
    quant::dequantize_int_row(view, r, back.data());
    for (int64_t c = 0; c < m.cols; ++c) {
      const double d = double(back[size_t(c)]) - w[r * m.cols + c];
      err += d * d;
      ref += double(w[r * m.cols + c]) * w[r * m.cols + c];
    }
  }
  return ref > 0 ? std::sqrt(err / ref) : 0.0;
}

class CheckpointQuantizer {
 public:
  explicit CheckpointQuantizer(const QuantizeCheckpointJob& job) : job_(job) {
    if (fs::is_directory(job.model_dir)) {
      dir_.emplace(hf::ModelDir::open(job.model_dir));
      hf_source_.emplace(*dir_);
      source_ = &*hf_source_;
      config_ = dir_->config();
    } else {
      gguf_ = std::make_unique<GgufAsHf>(job.model_dir);
      source_ = gguf_.get();
      config_ = gguf_->config();
    }
  }

  std::vector<QuantizedTensorReport> run() {
    if (quant::read_quantization_config(config_, job_.model_dir + "/config.json")) {
      throw Error(job_.model_dir + ": the checkpoint is already quantized");
    }
    const Architecture& arch = find_architecture_for_hf(config_.value("model_type", ""));
    DecoderSpec spec;
    arch.spec_from_hf(config_, &spec);
    const std::set<std::string> linears = linear_names(arch.hf_names, 0, spec.n_layers - 1);
    const std::set<std::string> final_linears = linear_names(arch.hf_names, spec.n_layers - 1, spec.n_layers);
    if (job_.calibration) {
      plan_ = plan_activation_scaling(spec, arch.hf_names, *source_, job_.scheme, *job_.calibration);
      if (job_.scaled_inputs) *job_.scaled_inputs = plan_.reports;
    }
    norm_offset_ = spec.norm_weight_offset;
    const std::vector<std::string> names = source_->names();
    const bool has_head = source_->find(arch.hf_names.output).has_value();
    const size_t total = names.size() + (has_head ? 0 : 1);
    size_t done = 0;
    for (const std::string& name : names) {
      const SourceTensor t = *source_->find(name);
      if (linears.count(name))
        add_quantized(name, t, job_.scheme.layers);
      else if (final_linears.count(name))
        add_quantized(name, t, job_.scheme.final_layer);
      else if (name == arch.hf_names.output)
        add_quantized(name, t, job_.scheme.output_head);
      else if (plan_.norm_divisors.count(name) || plan_.row_divisors.count(name))
        add_rescaled(name, t);
      else
        add_unchanged(name, t);
      if (job_.progress) job_.progress(++done, total, name);
    }
    if (!has_head) {
      // The head was the embedding (tied): it gets its own quantized copy.
      add_quantized(arch.hf_names.output, *source_->find(arch.hf_names.token_embedding), job_.scheme.output_head);
      if (job_.progress) job_.progress(++done, total, arch.hf_names.output);
    }
    write_directory();
    return reports_;
  }

 private:
  // GGUF block formats have no safetensors type: they are written as f32.
  void add_unchanged(const std::string& name, const SourceTensor& t) {
    if (safetensors::dtype_from_safetensors(dtype_name(t.dtype))) {
      writer_.add(name, t.dtype, t.shape, t.data, t.n_bytes);
      return;
    }
    const std::vector<float>& v = floats_.emplace_back(tensor_as_f32(name, t));
    writer_.add(name, DType::kF32, t.shape, v.data(), v.size() * sizeof(float));
  }

  // A norm or bias that takes an input scale's inverse, written as f32.
  void add_rescaled(const std::string& name, const SourceTensor& t) {
    std::vector<float>& v = floats_.emplace_back(tensor_as_f32(name, t));
    if (const auto norm = plan_.norm_divisors.find(name); norm != plan_.norm_divisors.end()) {
      if (v.size() != norm->second.size()) throw Error("tensor '" + name + "' does not match its input's width");
      for (size_t i = 0; i < v.size(); ++i) v[i] = (v[i] + norm_offset_) / norm->second[i] - norm_offset_;
    } else {
      divide_rows(v, plan_.row_divisors.at(name));
    }
    writer_.add(name, DType::kF32, t.shape, v.data(), v.size() * sizeof(float));
  }

  void add_quantized(const std::string& name, const SourceTensor& t, const quant::IntQuantConfig& config) {
    std::vector<float> w = to_f32(name, t);
    if (const auto rows = plan_.row_divisors.find(name); rows != plan_.row_divisors.end()) divide_rows(w, rows->second);
    // Scaled inputs: the matrix stored is W diag(s); its input arrives as x / s.
    if (const auto columns = plan_.column_scales.find(name); columns != plan_.column_scales.end()) {
      const std::vector<float>& s = columns->second;
      for (size_t i = 0; i < w.size(); ++i) w[i] *= s[i % s.size()];
    }
    quant::IntQuantConfig c = config;
    if (const auto clip = plan_.clips.find(name); clip != plan_.clips.end()) c.row_clips = clip->second;
    if (const auto fits = plan_.fits.find(name); fits != plan_.fits.end()) {
      c.row_fits = fits->second;
      c.column_importance = plan_.importance.at(name);
    }
    quant::IntMatrix& m = matrices_.emplace_back(quant::quantize_rtn(name, w.data(), t.shape[0], t.shape[1], c));
    const int64_t groups = m.n_groups();
    const bool four = config.bits == 4;
    writer_.add(name, four ? DType::kU8 : DType::kI8, {m.rows, four ? m.cols / 2 : m.cols}, m.data.data(),
                m.data.size());
    writer_.add(name + "_scale", DType::kF32, {m.rows, groups}, m.scales.data(), m.scales.size() * sizeof(float));
    if (m.scheme.has_zero_points)
      writer_.add(name + "_zero_point", DType::kI8, {m.rows, groups}, m.zeros.data(), m.zeros.size());
    reports_.push_back(
        {name, config.bits, m.scheme.group_size == m.cols ? 0 : m.scheme.group_size, relative_error(w.data(), m)});
  }

  // The source directory's other files (tokenizer, generation config …), or
  // those written for a GGUF file.
  void write_side_files() {
    if (gguf_) {
      for (const auto& [file, text] : gguf_->text_files()) write_text((fs::path(job_.out_dir) / file).string(), text);
      return;
    }
    for (const auto& entry : fs::directory_iterator(job_.model_dir)) {
      const std::string file = entry.path().filename().string();
      const bool weights = entry.path().extension() == ".safetensors" || file == "model.safetensors.index.json";
      if (!entry.is_regular_file() || weights || file == "config.json") continue;
      fs::copy_file(entry.path(), fs::path(job_.out_dir) / file, fs::copy_options::overwrite_existing);
    }
  }

  static void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out) throw Error(path + ": cannot be written");
  }

  void write_directory() {
    fs::create_directories(job_.out_dir);
    write_side_files();
    writer_.write((fs::path(job_.out_dir) / "model.safetensors").string(), {{"format", "pt"}});
    nlohmann::json config = config_;
    config["quantization_config"] = quant::quantization_config_json(job_.scheme);
    config["tie_word_embeddings"] = false;
    write_text((fs::path(job_.out_dir) / "config.json").string(), config.dump(2) + "\n");
  }

  const QuantizeCheckpointJob& job_;
  ScalingPlan plan_;
  float norm_offset_ = 0;
  std::deque<std::vector<float>> floats_;
  std::optional<hf::ModelDir> dir_;
  std::optional<HfTensorSource> hf_source_;
  std::unique_ptr<GgufAsHf> gguf_;
  const TensorSource* source_ = nullptr;
  nlohmann::json config_;
  safetensors::Writer writer_;
  std::deque<quant::IntMatrix> matrices_;
  std::vector<QuantizedTensorReport> reports_;
};

}  // namespace

std::vector<QuantizedTensorReport> quantize_checkpoint(const QuantizeCheckpointJob& job) {
  return CheckpointQuantizer(job).run();
}

}  // namespace tessera
