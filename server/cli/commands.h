#pragma once
// Subcommands of the tessera binary. Each registers its options on the app
// and returns the function that runs it (exit code as result).
#include <functional>

namespace CLI {
class App;
}

namespace tessera::cli {

using Runner = std::function<int()>;

Runner add_inspect_command(CLI::App& app);
Runner add_tokenize_command(CLI::App& app);
Runner add_generate_command(CLI::App& app);
Runner add_logits_command(CLI::App& app);
Runner add_perplexity_command(CLI::App& app);
Runner add_quantize_command(CLI::App& app);
Runner add_serve_command(CLI::App& app);
Runner add_worker_command(CLI::App& app);
Runner add_trace_collectives_command(CLI::App& app);
Runner add_backends_command(CLI::App& app);
Runner add_cache_command(CLI::App& app);

}  // namespace tessera::cli
