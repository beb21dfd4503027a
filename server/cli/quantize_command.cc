// tessera quantize: writes a quantized copy of a Hugging Face model
// directory (models/quantize_checkpoint.h) with a progress bar on stderr
// and, with --report, each quantized tensor's relative error on stdout.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "engine/error.h"
#include "models/quantize_checkpoint.h"
#include "server/cli/commands.h"

namespace tessera::cli {
namespace {

struct QuantizeOptions {
  std::string model;
  std::string scheme;
  int group = 0;
  std::string method = "rtn";
  std::string out;
  bool report = false;
};

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

int run_quantize(const QuantizeOptions& o) {
  if (!std::filesystem::is_directory(o.model)) {
    throw Error(o.model + ": not a Hugging Face model directory (GGUF input is not supported by quantize)");
  }
  if (std::filesystem::exists(std::filesystem::path(o.out) / "model.safetensors")) {
    throw Error(o.out + ": already holds a model.safetensors; choose an empty directory");
  }
  QuantizeCheckpointJob job;
  job.model_dir = o.model;
  job.out_dir = o.out;
  job.scheme = quant::scheme_choice(o.scheme, o.group);
  job.scheme.method = o.method;
  ProgressBar bar;
  job.progress = [&bar](size_t done, size_t total, const std::string& name) { bar.update(done, total, name); };
  const std::vector<QuantizedTensorReport> reports = quantize_checkpoint(job);
  if (o.report) {
    std::printf("%-60s %4s %6s %12s\n", "tensor", "bits", "group", "rel. error");
    for (const QuantizedTensorReport& r : reports) {
      std::printf("%-60s %4d %6s %12.6f\n", r.name.c_str(), r.bits, r.group_size ? std::to_string(r.group_size).c_str() : "row",
                  r.relative_error);
    }
  }
  std::fprintf(stderr, "wrote %s (%s, %zu tensors quantized)\n", o.out.c_str(), job.scheme.name.c_str(), reports.size());
  return 0;
}

}  // namespace

Runner add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<QuantizeOptions>();
  CLI::App* cmd = app.add_subcommand("quantize", "Write a quantized copy of a Hugging Face model directory");
  cmd->add_option("--model,-m", o->model, "Hugging Face model directory (bf16, f16 or f32 safetensors)")->required();
  cmd->add_option("--scheme", o->scheme, "a16w8, a16w4 or da8w8")->required()->check(CLI::IsMember({"a16w8", "a16w4", "da8w8"}));
  cmd->add_option("--group", o->group, "a16w4 group size")->check(CLI::IsMember({32, 64, 128}));
  cmd->add_option("--method", o->method, "How weights are rounded")->check(CLI::IsMember({"rtn"}))->capture_default_str();
  cmd->add_option("--out,-o", o->out, "Output directory")->required();
  cmd->add_flag("--report", o->report, "Print each quantized tensor's relative error");
  return [o] { return run_quantize(*o); };
}

}  // namespace tessera::cli
