// tessera: the inference server and its tools, one binary with subcommands.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>
#include <map>
#include <string>

#include "server/cli/commands.h"
#include "server/cli/fatal_signals.h"

int main(int argc, char** argv) {
  tessera::cli::install_fatal_signal_handlers();
  // Logs go to stderr: stdout carries each command's output (JSON, text, ids).
  spdlog::set_default_logger(spdlog::stderr_color_mt("tessera"));
  CLI::App app{"Tessera: LLM inference server"};
  app.require_subcommand(1);
  std::map<std::string, tessera::cli::Runner> runners;
  runners["inspect"] = tessera::cli::add_inspect_command(app);
  runners["tokenize"] = tessera::cli::add_tokenize_command(app);
  runners["generate"] = tessera::cli::add_generate_command(app);
  runners["logits"] = tessera::cli::add_logits_command(app);
  runners["perplexity"] = tessera::cli::add_perplexity_command(app);
  runners["quantize"] = tessera::cli::add_quantize_command(app);
  runners["serve"] = tessera::cli::add_serve_command(app);
  runners["worker"] = tessera::cli::add_worker_command(app);
  runners["trace-collectives"] = tessera::cli::add_trace_collectives_command(app);
  runners["backends"] = tessera::cli::add_backends_command(app);
  runners["cache"] = tessera::cli::add_cache_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (auto& [name, run] : runners) {
    if (!app.got_subcommand(name)) continue;
    try {
      return run();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "tessera %s: error: %s\n", name.c_str(), e.what());
      return 1;
    }
  }
  return 1;
}
