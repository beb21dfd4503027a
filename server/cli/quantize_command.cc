// tessera quantize: writes a quantized copy of a Hugging Face model
// directory or a GGUF file (models/quantize_checkpoint.h) with a progress bar on stderr
// and, with --report, each quantized tensor's relative error on stdout and
// the perplexity of the model before and after on --eval text (or the
// calibration text).
// --method awq first runs the model on --calib text, recording the inputs of
// the linear layers, and scales them activation-aware.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "engine/core/error.h"
#include "kernels/cpu/elementwise/activation.h"
#include "kernels/cpu/linear/onednn_matmul.h"
#include "models/hf/hf_model_dir.h"
#include "models/quantize_checkpoint.h"
#include "server/cli/commands.h"
#include "server/cli/engine_options.h"
#include "server/cli/perplexity.h"
#include "server/cli/sequence_driver.h"

namespace tessera::cli {
namespace {

struct QuantizeOptions {
  std::string model;
  std::string scheme;
  int group = 0;
  std::string method = "rtn";
  std::string out;
  bool report = false;
  std::string calib;
  int calib_tokens = 2048;
  int threads = 0;
  std::string eval;
  int eval_ctx = 512;
  int eval_chunks = 0;
};

constexpr int kCalibrationChunk = 512;
constexpr int64_t kCalibrationSamples = 256;  // activation rows kept per input for the scale search

// The linear layers' inputs as the unquantized model computes them on the
// calibration text, in chunks of kCalibrationChunk tokens each starting
// with BOS (as perplexity does).
QuantizeCalibration calibrate(const QuantizeOptions& o) {
  const auto text = hf::read_text_file(o.calib);
  if (!text) throw Error(o.calib + ": not found");
  EngineOptions engine;
  engine.model = o.model;
  engine.threads = o.threads;
  const std::unique_ptr<ModelRunner> runner = make_runner(engine, kCalibrationChunk);
  const Tokenizer& tokenizer = runner->model().tokenizer();
  std::vector<int32_t> tokens = tokenizer.encode(*text, {.add_special = true, .parse_special = false});
  tokens.resize(std::min(tokens.size(), size_t(o.calib_tokens)));
  if (tokens.size() < 64) throw Error(o.calib + ": " + std::to_string(tokens.size()) + " tokens; calibration needs at least 64");
  const int64_t stride = (int64_t(tokens.size()) + kCalibrationSamples - 1) / kCalibrationSamples;
  QuantizeCalibration calibration;
  runner->set_observer([&](const char* name, int layer, const float* values, int64_t n_tokens, int64_t width) {
    const std::string point(name);
    if (point != "attn_norm" && point != "attention" && point != "ffn_norm" && point != "ffn_act") return;
    const std::string key = point + "/" + std::to_string(layer);
    auto it = calibration.inputs.try_emplace(key, width, stride, kCalibrationSamples).first;
    it->second.add(values, n_tokens);
  });
  SequenceDriver seq(*runner, SamplingParams{}, 0);
  for (size_t begin = 0; begin < tokens.size(); begin += kCalibrationChunk) {
    std::vector<int32_t> chunk(tokens.begin() + long(begin), tokens.begin() + long(std::min(tokens.size(), begin + kCalibrationChunk)));
    if (tokenizer.vocab().add_bos) chunk[0] = tokenizer.vocab().bos;
    seq.reset();
    seq.feed(chunk, kCalibrationChunk, false, false);
  }
  calibration.matmul = [](const float* w, int64_t rows, int64_t cols, const float* x, int64_t n, float* y) {
    cpu::OnednnMatmul(w, false, rows, cols).run(x, n, y);
  };
  const int threads = o.threads > 0 ? o.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  const auto pool = std::make_shared<cpu::ThreadPool>(threads);
  calibration.gated = [pool, isa = cpu::detect_isa()](ops::GatedActivation act, const float* gate, const float* up,
                                                      int64_t n, float* out) {
    cpu::gated_activation(act, gate, up, n, out, *pool, isa);
  };
  return calibration;
}

// A bar redrawn in place on a terminal; a line per tenth otherwise (logs).
class ProgressBar {
 public:
  ProgressBar() : tty_(isatty(fileno(stderr)) != 0) {}
  void update(size_t done, size_t total, const std::string& name) {
    const int width = 30, filled = int(width * done / std::max<size_t>(total, 1));
    const int tenth = int(10 * done / std::max<size_t>(total, 1));
    if (!tty_ && tenth == last_tenth_ && done != total) return;
    last_tenth_ = tenth;
    std::fprintf(stderr, "%squantizing [%s%s] %zu/%zu %s%s", tty_ ? "\r\033[K" : "", std::string(size_t(filled), '#').c_str(),
                 std::string(size_t(width - filled), '.').c_str(), done, total, name.c_str(), tty_ ? "" : "\n");
    if (tty_ && done == total) std::fputc('\n', stderr);
  }

 private:
  bool tty_;
  int last_tenth_ = -1;
};

// Perplexity of the model in `dir` on the evaluation text.
PerplexityResult evaluate(const QuantizeOptions& o, const std::string& dir, const std::string& text) {
  EngineOptions engine;
  engine.model = dir;
  engine.threads = o.threads;
  const std::unique_ptr<ModelRunner> runner = make_runner(engine, std::min(o.eval_ctx, kMaxCliBatch));
  try {
    return measure_perplexity(*runner, text, o.eval_ctx, o.eval_chunks, std::min(o.eval_ctx, kMaxCliBatch));
  } catch (const Error& e) {
    throw Error(o.eval + ": " + e.what());
  }
}

void report_perplexity(const QuantizeOptions& o) {
  const std::string file = o.eval.empty() ? o.calib : o.eval;
  if (file.empty()) {
    std::fprintf(stderr, "no perplexity in the report: give --eval FILE (or --calib FILE)\n");
    return;
  }
  const auto text = hf::read_text_file(file);
  if (!text) throw Error(file + ": not found");
  std::fprintf(stderr, "perplexity on %s, before and after\n", file.c_str());
  const PerplexityResult before = evaluate(o, o.model, *text), after = evaluate(o, o.out, *text);
  std::printf("perplexity (%s, ctx %d, %lld chunks): before %.4f +/- %.4f, after %.4f +/- %.4f (%+.2f%%)\n", file.c_str(),
              o.eval_ctx, (long long)before.chunks, before.ppl, before.error, after.ppl, after.error,
              100.0 * (after.ppl / before.ppl - 1.0));
}

int run_quantize(const QuantizeOptions& o) {
  if (!std::filesystem::exists(o.model)) throw Error(o.model + ": no such model directory or GGUF file");
  if (std::filesystem::exists(std::filesystem::path(o.out) / "model.safetensors")) {
    throw Error(o.out + ": already holds a model.safetensors; choose an empty directory");
  }
  QuantizeCheckpointJob job;
  job.model_dir = o.model;
  job.out_dir = o.out;
  job.scheme = quant::scheme_choice(o.scheme, o.group);
  job.scheme.method = o.method;
  QuantizeCalibration calibration;
  std::vector<ScaledInputReport> scaled;
  if (o.method == "awq") {
    if (o.calib.empty()) throw Error("--method awq needs --calib FILE (text to run the model on)");
    std::fprintf(stderr, "calibrating on %s\n", o.calib.c_str());
    calibration = calibrate(o);
    job.calibration = &calibration;
    job.scaled_inputs = &scaled;
  }
  ProgressBar bar;
  job.progress = [&bar](size_t done, size_t total, const std::string& name) { bar.update(done, total, name); };
  const std::vector<QuantizedTensorReport> reports = quantize_checkpoint(job);
  if (o.report && !scaled.empty()) {
    std::printf("%-16s %6s %14s %14s\n", "scaled input", "alpha", "error", "error (rtn)");
    for (const ScaledInputReport& s : scaled) std::printf("%-16s %6.2f %14.6g %14.6g\n", s.input.c_str(), s.alpha, s.error, s.plain_error);
  }
  if (o.report) {
    std::printf("%-60s %4s %6s %12s\n", "tensor", "bits", "group", "rel. error");
    for (const QuantizedTensorReport& r : reports) {
      std::printf("%-60s %4d %6s %12.6f\n", r.name.c_str(), r.bits, r.group_size ? std::to_string(r.group_size).c_str() : "row",
                  r.relative_error);
    }
  }
  std::fprintf(stderr, "wrote %s (%s, %zu tensors quantized)\n", o.out.c_str(), job.scheme.name.c_str(), reports.size());
  if (o.report) report_perplexity(o);
  return 0;
}

}  // namespace

Runner add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand("quantize", "Write a quantized copy of a Hugging Face model directory or a GGUF file");
  cmd->add_option("--model,-m", o->model, "Hugging Face model directory (bf16, f16 or f32 safetensors) or GGUF file (dequantized first)")->required();
  cmd->add_option("--scheme", o->scheme, "a16w8, a16w4 or da8w8")->required()->check(CLI::IsMember({"a16w8", "a16w4", "da8w8"}));
  cmd->add_option("--group", o->group, "a16w4 group size")->check(CLI::IsMember({32, 64, 128}));
  cmd->add_option("--method", o->method, "rtn (round to nearest) or awq (activation-aware scaling, needs --calib)")
      ->check(CLI::IsMember({"rtn", "awq"}))
      ->capture_default_str();
  cmd->add_option("--calib", o->calib, "Calibration text for --method awq");
  cmd->add_option("--calib-tokens", o->calib_tokens, "Calibration tokens at most")->check(CLI::Range(64, 1 << 20))->capture_default_str();
  cmd->add_option("--threads,-t", o->threads, "CPU threads for calibration (0: all)")->check(CLI::Range(0, 1024));
  cmd->add_option("--out,-o", o->out, "Output directory")->required();
  cmd->add_flag("--report", o->report, "Print each quantized tensor's relative error and the perplexity before and after");
  cmd->add_option("--eval", o->eval, "Text for the report's perplexity (default: the --calib text)");
  cmd->add_option("--eval-ctx", o->eval_ctx, "Tokens per perplexity chunk")->check(CLI::Range(16, 1 << 16))->capture_default_str();
  cmd->add_option("--eval-chunks", o->eval_chunks, "Perplexity chunks at most (0: all)")->check(CLI::Range(0, 1 << 30));
  return [o] { return run_quantize(*o); };
}

}  // namespace tessera::cli
