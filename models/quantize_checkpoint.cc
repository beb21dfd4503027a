#include "models/quantize_checkpoint.h"

#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/error.h"
#include "models/architecture.h"
#include "models/hf/hf_model_dir.h"
#include "models/safetensors/safetensors_writer.h"
#include "models/tensor_source.h"
#include "quant/dequantize.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;

// The decoder's linear weights by name; the output head is handled apart.
std::set<std::string> linear_names(const WeightNames& names, int n_layers) {
  std::set<std::string> out;
  for (const std::string* pattern : {&names.q, &names.k, &names.v, &names.o, &names.qkv, &names.gate, &names.up,
                                     &names.down, &names.gate_up}) {
    if (pattern->empty()) continue;
    for (int l = 0; l < n_layers; ++l) out.insert(layer_name(*pattern, l));
  }
  return out;
}

std::vector<float> to_f32(const std::string& name, const SourceTensor& t) {
  if (t.shape.size() != 2) throw Error("tensor '" + name + "' is not a matrix");
  if (!can_dequantize(t.dtype)) throw Error("tensor '" + name + "': format " + std::string(dtype_name(t.dtype)) + " is not supported");
  std::vector<float> v(static_cast<size_t>(t.shape[0] * t.shape[1]));
  dequantize_row(t.dtype, t.data, v.data(), t.shape[0] * t.shape[1]);
  return v;
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
  explicit CheckpointQuantizer(const QuantizeCheckpointJob& job) : job_(job), dir_(hf::ModelDir::open(job.model_dir)), source_(dir_) {}

  std::vector<QuantizedTensorReport> run() {
    if (quant::read_quantization_config(dir_.config(), job_.model_dir + "/config.json")) {
      throw Error(job_.model_dir + ": the checkpoint is already quantized");
    }
    const Architecture& arch = find_architecture_for_hf(dir_.config().value("model_type", ""));
    DecoderSpec spec;
    arch.spec_from_hf(dir_.config(), &spec);
    const std::set<std::string> linears = linear_names(arch.hf_names, spec.n_layers);
    const std::vector<std::string> names = source_.names();
    const bool has_head = source_.find(arch.hf_names.output).has_value();
    const size_t total = names.size() + (has_head ? 0 : 1);
    size_t done = 0;
    for (const std::string& name : names) {
      const SourceTensor t = *source_.find(name);
      if (linears.count(name)) add_quantized(name, t, job_.scheme.layers);
      else if (name == arch.hf_names.output) add_quantized(name, t, job_.scheme.output_head);
      else writer_.add(name, t.dtype, t.shape, t.data, t.n_bytes);
      if (job_.progress) job_.progress(++done, total, name);
    }
    if (!has_head) {
      // The head was the embedding (tied): it gets its own quantized copy.
      add_quantized(arch.hf_names.output, *source_.find(arch.hf_names.token_embedding), job_.scheme.output_head);
      if (job_.progress) job_.progress(++done, total, arch.hf_names.output);
    }
    write_directory();
    return reports_;
  }

 private:
  void add_quantized(const std::string& name, const SourceTensor& t, const quant::IntQuantConfig& config) {
    const std::vector<float> w = to_f32(name, t);
    quant::IntMatrix& m = matrices_.emplace_back(quant::quantize_rtn(name, w.data(), t.shape[0], t.shape[1], config));
    const int64_t groups = m.n_groups();
    const bool four = config.bits == 4;
    writer_.add(name, four ? DType::kU8 : DType::kI8, {m.rows, four ? m.cols / 2 : m.cols}, m.data.data(), m.data.size());
    writer_.add(name + "_scale", DType::kF32, {m.rows, groups}, m.scales.data(), m.scales.size() * sizeof(float));
    if (m.scheme.has_zero_points) writer_.add(name + "_zero_point", DType::kI8, {m.rows, groups}, m.zeros.data(), m.zeros.size());
    reports_.push_back({name, config.bits, m.scheme.group_size == m.cols ? 0 : m.scheme.group_size, relative_error(w.data(), m)});
  }

  void write_directory() {
    fs::create_directories(job_.out_dir);
    for (const auto& entry : fs::directory_iterator(job_.model_dir)) {
      const std::string file = entry.path().filename().string();
      const bool weights = entry.path().extension() == ".safetensors" || file == "model.safetensors.index.json";
      if (!entry.is_regular_file() || weights || file == "config.json") continue;
      fs::copy_file(entry.path(), fs::path(job_.out_dir) / file, fs::copy_options::overwrite_existing);
    }
    writer_.write((fs::path(job_.out_dir) / "model.safetensors").string(), {{"format", "pt"}});
    nlohmann::json config = dir_.config();
    config["quantization_config"] = quant::quantization_config_json(job_.scheme);
    config["tie_word_embeddings"] = false;
    const std::string path = (fs::path(job_.out_dir) / "config.json").string();
    std::ofstream out(path, std::ios::trunc);
    out << config.dump(2) << "\n";
    if (!out) throw Error(path + ": cannot be written");
  }

  const QuantizeCheckpointJob& job_;
  hf::ModelDir dir_;
  HfTensorSource source_;
  safetensors::Writer writer_;
  std::deque<quant::IntMatrix> matrices_;
  std::vector<QuantizedTensorReport> reports_;
};

}  // namespace

std::vector<QuantizedTensorReport> quantize_checkpoint(const QuantizeCheckpointJob& job) {
  return CheckpointQuantizer(job).run();
}

}  // namespace tessera
