// tessera serve: the daemon. HTTP (OpenAI API, health, metrics) and gRPC on
// one process; models from a config file, from --model, or the embedded
// default. SIGTERM drains: health turns 503, new work is refused, in-flight
// requests get --drain-timeout to finish, then the process exits 0; a second
// SIGTERM exits at once. SIGHUP reads the config again and applies its model
// list (server/serving/config_reload.h); server settings are read at start
// only.
#include <malloc.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "config/config.h"
#include "engine/core/error.h"
#include "kernels/backend_plugins.h"
#include "server/cli/commands.h"
#include "server/grpc/grpc_server.h"
#include "server/http_api.h"
#include "server/parallel/parallel_serving.h"
#include "server/serving/config_reload.h"
#include "server/serving/runner_setup.h"

namespace tessera::cli {
namespace {

// Which backends loaded and why any did not, before a model asks for one.
void log_backends(const std::string& backend_dir) {
  if (!backend_dir.empty()) setenv("TESSERA_BACKEND_DIR", backend_dir.c_str(), /*overwrite=*/0);
  for (const PluginReport& report : backend_plugins().reports) {
    if (!report.loaded) {
      spdlog::warn("backend plugin {} not loaded: {}", report.path, report.reason);
      continue;
    }
    spdlog::info("backend plugin {}: {}", report.backend, report.path);
    if (!report.unusable_devices.empty()) spdlog::warn("backend {}: devices not used: {}", report.backend, report.unusable_devices);
  }
}

struct ServeOptions {
  std::string config;
  std::string model;
  std::string served_model_name;
  std::string host;
  int port = -1;
  int grpc_port = -1;
  double drain_timeout_s = -1;
  int threads = -1;
  int kv_budget_mb = -1;
  int max_model_len = -1;
  std::string chat_template;
  std::vector<std::string> api_keys;
  int tensor_parallel = 0;
  int context_parallel = 0;
};

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw Error("cannot read " + what + " " + path);
  return text.str();
}

Config resolve_config(const ServeOptions& o) {
  Config c;
  if (!o.config.empty()) {
    c = load_config_file(o.config);
  } else if (!o.model.empty()) {
    c = Config{};
    ModelConfig m;
    m.name = o.served_model_name.empty() ? std::filesystem::path(o.model).stem().string() : o.served_model_name;
    m.path = o.model;
    c.models.push_back(m);
  } else {
    c = parse_config(default_config_yaml(), "config/default.yaml (embedded)");
  }
  if (!o.host.empty()) c.server.host = o.host;
  if (!o.api_keys.empty()) c.server.api_keys = o.api_keys;
  if (const char* key = std::getenv("TESSERA_API_KEY"); key && *key && c.server.api_keys.empty()) c.server.api_keys = {key};
  if (const char* key = std::getenv("TESSERA_ADMIN_KEY"); key && *key && c.server.admin_key.empty()) c.server.admin_key = key;
  if (o.port >= 0) c.server.http_port = o.port;
  if (o.grpc_port >= 0) c.server.grpc_port = o.grpc_port;
  if (o.drain_timeout_s >= 0) c.server.drain_timeout_s = o.drain_timeout_s;
  if (o.tensor_parallel > 0) c.parallel.tensor = o.tensor_parallel;
  if (o.context_parallel > 0) c.parallel.context = o.context_parallel;
  if (c.parallel.tensor > 1 && c.parallel.context > 1) {
    throw Error("tensor and context parallelism cannot be combined yet; give one of --tensor-parallel and --context-parallel");
  }
  for (ModelConfig& m : c.models) {
    if (o.threads >= 0) m.threads = o.threads;
    if (o.kv_budget_mb > 0) m.kv_cache.budget_mb = o.kv_budget_mb;
    if (o.max_model_len > 0) m.max_model_len = o.max_model_len;
    if (!o.chat_template.empty()) m.chat_template = o.chat_template;
    // A chat template naming a file is read from it; text without any tag
    // is taken for a path that does not exist rather than for a template.
    if (m.chat_template && std::filesystem::is_regular_file(*m.chat_template)) {
      std::ifstream in(*m.chat_template);
      std::stringstream text;
      text << in.rdbuf();
      if (!in) throw Error("model '" + m.name + "': cannot read chat template file " + *m.chat_template);
      m.chat_template = text.str();
    } else if (m.chat_template && m.chat_template->find("{{") == std::string::npos &&
               m.chat_template->find("{%") == std::string::npos) {
      throw Error("model '" + m.name + "': chat_template '" + *m.chat_template + "' is neither a readable file nor template text");
    }
  }
  if (c.models.empty()) throw Error("no models to serve: give --model FILE or a config with models");
  return c;
}

// The connection caps, kept under the open-file limit (raised to its hard
// value first) with room for model files, gRPC and the process's own needs.
HttpLimits http_limits_of(const ServerConfig& server) {
  HttpLimits l;
  l.max_body_bytes = size_t(server.max_body_bytes);
  l.max_header_bytes = size_t(server.max_header_bytes);
  l.max_headers = server.max_headers;
  l.max_connections = server.max_connections;
  l.max_connections_per_client = server.max_connections_per_client;
  l.reserved_connections = server.reserved_health_connections;
  const auto ms = [](double s) { return std::chrono::milliseconds(int64_t(s * 1000)); };
  l.header_timeout = ms(server.header_timeout_s);
  l.body_timeout = ms(server.body_timeout_s);
  l.idle_timeout = ms(server.idle_timeout_s);
  l.write_timeout = ms(server.write_timeout_s);
  const uint64_t fds = raise_open_file_limit();
  const int64_t kept_back = std::clamp<int64_t>(int64_t(fds / 8), 32, 256);
  const int64_t room = int64_t(fds) - kept_back - l.reserved_connections;
  if (room < 16) throw Error("the open-file limit (" + std::to_string(fds) + ") is too low to serve; raise ulimit -n");
  if (l.max_connections > room) {
    spdlog::warn("server.max_connections {} lowered to {} to stay under the open-file limit {}", l.max_connections, room, fds);
    l.max_connections = int(room);
  }
  return l;
}

struct TlsPem {
  std::string cert, key;  // empty: plain TCP
};

TlsPem read_tls(const TlsConfig& tls) {
  if (!tls.enabled()) return {};
  return {read_text_file(tls.cert_file, "TLS certificate"), read_text_file(tls.key_file, "TLS private key")};
}

GrpcOptions grpc_options_of(const ServerConfig& server, const TlsPem& tls) {
  GrpcOptions g;
  g.max_message_bytes = server.max_body_bytes;
  g.max_concurrent_streams = server.grpc_max_concurrent_streams;
  g.max_connection_idle = std::chrono::milliseconds(int64_t(std::max(server.idle_timeout_s, 1.0) * 10'000));
  g.api_keys = server.api_keys;
  g.tls_cert_pem = tls.cert;
  g.tls_key_pem = tls.key;
  return g;
}

// The artifact cache the config names, or none.
std::shared_ptr<const ArtifactCache> artifact_cache_of(const ServerConfig& server) {
  if (server.cache_dir.empty()) return nullptr;
  // Device programs built at run time (the XPU backend's) go there too,
  // unless TESSERA_KERNEL_CACHE names a folder of their own.
  setenv("TESSERA_KERNEL_CACHE", expand_home(server.cache_dir).c_str(), 0);
  spdlog::info("artifact cache: {} (at most {} MiB)", expand_home(server.cache_dir), server.cache_max_mib);
  return std::make_shared<ArtifactCache>(expand_home(server.cache_dir), uint64_t(server.cache_max_mib) << 20);
}

int wait_for_signal(const sigset_t& set) {
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

// Exit status when a rank of a parallel group died or hung: the supervisor
// (or Kubernetes) restarts the whole group.
constexpr int kGroupFailedExit = 3;

int run_serve(const ServeOptions& o) {
  // Signals are taken by sigwait on this thread only: block them before any
  // other thread starts. SIGUSR1 writes the flight recorders; SIGUSR2 is
  // raised from inside when a parallel group breaks.
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP}) sigaddset(&signals, sig);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A worker rank or client that went away is an error on its socket (EPIPE),
  // not a reason for the daemon to die.
  signal(SIGPIPE, SIG_IGN);
  // Request bodies (up to max_body_bytes) come and go at the clients' rate;
  // each one mapped and unmapped on its own would interrupt the model
  // loops' cores (a TLB shootdown per unmap). They are kept in the heap.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);

  Config config = resolve_config(o);
  std::shared_ptr<const ArtifactCache> cache = artifact_cache_of(config.server);  // before any backend builds a program
  log_backends(config.server.backend_dir);
  ParallelServing parallel(config);
  auto metrics = std::make_shared<prometheus::Registry>();
  ModelRegistry registry(metrics, {.memory_budget_bytes = uint64_t(config.server.memory_budget_mb) << 20,
                                   .load_timeout = std::chrono::milliseconds(int64_t(config.server.model_load_timeout_s * 1000)),
                                   .cache = std::move(cache)});
  ApiLimits limits;
  limits.max_n = config.server.max_n;
  limits.max_stop_strings = config.server.max_stop_strings;
  limits.max_top_logprobs = config.server.max_top_logprobs;
  limits.json = {config.server.max_json_depth, size_t(config.server.max_json_array_length),
                 size_t(config.server.max_json_object_members)};
  limits.max_body_bytes = size_t(config.server.max_body_bytes);
  const auto drain_timeout = std::chrono::milliseconds(int64_t(config.server.drain_timeout_s * 1000));
  ConfigReload reloads(registry, [&o] { return resolve_config(o).models; }, drain_timeout, *metrics);
  HttpApi api(registry, limits, config.server.api_keys);
  api.set_reload([&reloads] {
    const ConfigReload::Outcome outcome = reloads.reload_and_wait();
    return HttpApi::ReloadOutcome{outcome.applied, outcome.text};
  }, config.server.admin_key);
  api.set_cors_policy(CorsPolicy(config.server.allowed_origins));
  api.set_response_store_limits({size_t(config.server.response_store_max_responses),
                                 size_t(config.server.response_store_max_mib) << 20,
                                 std::chrono::seconds(int64_t(config.server.response_store_ttl_s))});
  if (ParallelRanks* ranks = parallel.ranks()) api.set_collectives_source([ranks] { return ranks->recorders_json(); });
  const HttpLimits http_limits = http_limits_of(config.server);
  HttpServer http(http_limits, [&api](HttpExchange& ex) { api.handle(ex); }, {"/health", "/metrics"});
  const TlsPem tls = read_tls(config.server.tls);
  if (!tls.cert.empty()) http.use_tls(tls.cert, tls.key);
  const uint16_t http_port = http.start(config.server.host, uint16_t(config.server.http_port));
  GrpcServer grpc(registry, limits, grpc_options_of(config.server, tls));
  const uint16_t grpc_port = grpc.start(config.server.host, config.server.grpc_port);
  spdlog::info("listening: HTTP on {}:{}, gRPC on {}:{}", config.server.host, http_port, config.server.host, grpc_port);

  parallel.start_workers();
  std::thread loader([&] {
    try {
      registry.load(config.models, parallel.ranks(), parallel.fault_listener());
      spdlog::info("ready: {} model(s){}", config.models.size(), parallel.describe());
    } catch (const std::exception& e) {
      spdlog::error("loading models failed: {}", e.what());
      kill(getpid(), SIGTERM);
    }
  });
  int sig = 0;
  for (;;) {
    sig = wait_for_signal(signals);
    if (sig == SIGUSR1) {
      parallel.dump("SIGUSR1");
    } else if (sig == SIGHUP) {
      reloads.request();
    } else {
      break;
    }
  }
  if (sig == SIGUSR2) {
    // The engine has ended every request with the error; let the handlers
    // write it out, and answer 503 a moment longer so probes see why.
    registry.publish_health();
    for (int i = 0; i < 500 && (api.in_flight() > 0 || grpc.in_flight() > 0); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
    parallel.stop_workers(0);
    spdlog::error("a rank of the parallel group failed; exiting with status {}", kGroupFailedExit);
    spdlog::shutdown();
    std::_Exit(kGroupFailedExit);
  }
  loader.join();
  if (registry.state() == ServingState::kFailed) return 1;
  spdlog::info("signal {}: draining (timeout {:.0f} s)", sig, config.server.drain_timeout_s);
  std::thread second_signal([signals] {
    int again = 0;
    while ((again = wait_for_signal(signals)) == SIGHUP || again == SIGUSR1) {
    }
    spdlog::warn("second signal: exiting now");
    std::_Exit(1);
  });
  second_signal.detach();
  registry.drain(drain_timeout);
  // Let handlers write out the final events of what just finished.
  for (int i = 0; i < 500 && (api.in_flight() > 0 || grpc.in_flight() > 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  http.stop();
  grpc.stop();
  parallel.stop_workers(5000);
  spdlog::info("drained; exiting");
  return 0;
}

}  // namespace

Runner add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Run the inference server (OpenAI HTTP API and gRPC)");
  cmd->add_option("--config,-c", o->config, "YAML configuration file")->check(CLI::ExistingFile);
  cmd->add_option("--model,-m", o->model, "Serve this GGUF file or Hugging Face directory (no config needed)");
  cmd->add_option("--served-model-name", o->served_model_name, "Name requests use for --model (default: file stem)");
  cmd->add_option("--host", o->host, "Address to listen on");
  cmd->add_option("--port", o->port, "HTTP port (0: any free port)")->check(CLI::Range(0, 65535));
  cmd->add_option("--grpc-port", o->grpc_port, "gRPC port (0: any free port)")->check(CLI::Range(0, 65535));
  cmd->add_option("--drain-timeout", o->drain_timeout_s, "Seconds in-flight requests get after SIGTERM")->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--threads,-t", o->threads, "CPU threads per model (0: all)")->check(CLI::Range(0, 1024));
  cmd->add_option("--kv-budget-mb", o->kv_budget_mb, "KV cache memory per model")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-model-len", o->max_model_len, "Longest prompt plus output")->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--chat-template", o->chat_template, "Chat template file or text, for every model");
  cmd->add_option("--api-key", o->api_keys, "Require this Bearer token (repeat for several; also TESSERA_API_KEY)");
  cmd->add_option("--tensor-parallel", o->tensor_parallel, "Split every model over this many ranks (worker processes)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--context-parallel", o->context_parallel,
                  "Divide long prefills over this many ranks (worker processes), each with the whole model")
      ->check(CLI::Range(1, 64));
  cmd->get_option("--config")->excludes(cmd->get_option("--model"));
  return [o] { return run_serve(*o); };
}

}  // namespace tessera::cli
