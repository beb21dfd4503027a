#pragma once
// The daemon's configuration, parsed once from YAML into typed structs. Every
// error names the file, the line, the key and what is allowed.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/sampling_defaults.h"

namespace tessera {

struct TlsConfig {
  std::string cert_file;  // PEM certificate chain; empty: plain TCP
  std::string key_file;   // PEM private key
  bool enabled() const { return !cert_file.empty(); }
};

struct ServerConfig {
  std::string host = "127.0.0.1";
  int http_port = 8080;
  int grpc_port = 50051;
  int64_t max_body_bytes = 8 << 20;
  int max_header_bytes = 16 << 10;
  int max_headers = 100;
  int max_json_depth = 64;
  int max_json_array_length = 262144;
  int max_json_object_members = 4096;
  // HTTP connections: the cap, the share one client address may hold, and
  // the extra connections kept for /health and /metrics once the cap is full.
  int max_connections = 1024;
  int max_connections_per_client = 256;
  int reserved_health_connections = 32;
  // Deadlines (seconds): the request headers once the first byte arrived,
  // the body, an idle keep-alive connection, and any one response write.
  double header_timeout_s = 10.0;
  double body_timeout_s = 60.0;
  double idle_timeout_s = 30.0;
  double write_timeout_s = 30.0;
  int grpc_max_concurrent_streams = 128;  // per connection
  std::vector<std::string> api_keys;      // Bearer tokens; empty: no authentication
  std::string admin_key;                  // Bearer token of POST /admin/reload; empty: that route is off
  // Browser origins allowed to call the API (CORS): "scheme://host[:port]"
  // or "*"; empty: none (browsers keep their same-origin rule).
  std::vector<std::string> allowed_origins;
  // Responses kept for previous_response_id, per model and API key: how many, how many
  // MiB of conversation and answer, and for how long.
  int response_store_max_responses = 1024;
  int response_store_max_mib = 64;
  double response_store_ttl_s = 3600.0;
  TlsConfig tls;
  int max_stop_strings = 16;
  int max_n = 16;
  int max_top_logprobs = 20;
  double drain_timeout_s = 30.0;
  // Memory the loaded models may hold in all, in MiB (0: no limit): loading
  // a model that would pass it first unloads the least recently used idle
  // ones. A request that waits for its model to load waits at most
  // model_load_timeout_s.
  int64_t memory_budget_mb = 0;
  double model_load_timeout_s = 300.0;
  // The artifact cache (engine/io/artifact_cache.h): weights quantized at
  // load are kept here between starts; empty: off. At most cache_max_mib,
  // the least recently used entries deleted first (0: no limit).
  std::string cache_dir;
  int64_t cache_max_mib = 10240;
  // Where backend plugins are loaded from; empty: beside the binary
  // (kernels/backend_plugins.h). TESSERA_BACKEND_DIR, when set, wins.
  std::string backend_dir;
};

struct KvCacheConfig {
  int64_t budget_mb = 256;
  // Fraction of the device's memory the model may hold in all, weights and
  // activations included; the KV cache takes what is left of it (vLLM's
  // gpu_memory_utilization). 0: the cache takes budget_mb instead.
  double memory_fraction = 0.0;
  int page_size = 16;         // tokens per KV page (vLLM's block_size)
  std::string dtype = "f16";  // f16, f32 or int8 (per-head, per-token scales)

  bool operator==(const KvCacheConfig&) const = default;
};

// Speculative decoding: each decoding sequence proposes tokens, and one
// forward pass verifies them; the output is the same as without it. ngram
// (prompt lookup) proposes the tokens that followed the latest earlier
// occurrence of the sequence's last n-gram; draft_model proposes the greedy
// continuation of a smaller model that shares the tokenizer.
struct SpeculativeConfig {
  std::string method = "none";     // none, ngram or draft_model
  int num_speculative_tokens = 7;  // draft tokens per step at most (7: a step of 8 tokens, one group of the 8-token kernels)
  int prompt_lookup_max = 4;       // ngram: longest n-gram looked up
  int prompt_lookup_min = 2;       // ngram: shortest
  std::string draft_model;         // draft_model: its GGUF file or Hugging Face directory
  bool enabled() const { return method != "none"; }
  bool uses_draft_model() const { return method == "draft_model"; }

  bool operator==(const SpeculativeConfig&) const = default;
};

struct SchedulerConfig {
  int max_batch_tokens = 2048;          // tokens per iteration, prefill and decode together
  int max_sequences = 64;               // sequences per iteration
  int prefill_chunk = 512;              // prompt tokens per sequence per iteration
  int max_queued_requests = 256;
  int64_t max_queued_tokens = 1 << 20;  // prompt tokens waiting
  bool prefix_caching = true;           // reuse KV pages of prompt prefixes seen before
  // fcfs: requests run in arrival order and a request's 'priority' is refused;
  // priority: clients may set it (higher runs first, lower is preempted first).
  std::string policy = "fcfs";
  SpeculativeConfig speculative;

  bool operator==(const SchedulerConfig&) const = default;
};

// Quantize the model's linear weights as it loads (quant/schemes.h); a
// checkpoint written by `tessera quantize` loads without this.
struct QuantizationConfig {
  std::string scheme;      // empty (none), a16w8, a16w4, da8w8
  int64_t group_size = 0;  // a16w4: 32, 64 or 128 (0: 128)

  bool operator==(const QuantizationConfig&) const = default;
};

// Output grammars (structured outputs, forced tool calls) are compiled on
// the request's thread, never the model loop's: at most
// `max_concurrent_compiles` at once per model (more get 429), each within
// `compile_budget_s` of CPU time (more gets 400). Compiled grammars are
// kept by content, so a repeated schema costs nothing.
struct StructuredOutputConfig {
  int max_concurrent_compiles = 2;
  double compile_budget_s = 2.0;
  int cached_grammars = 64;

  bool operator==(const StructuredOutputConfig&) const = default;
};

// POST /v1/embeddings: how the final hidden states of a prompt become its
// embedding.
struct EmbeddingConfig {
  std::string pooling = "last";  // last token (decoder embedders), or mean over every token
  bool normalize = true;         // to unit length
  bool only = false;             // serve the model for embeddings only: generation requests are refused

  bool operator==(const EmbeddingConfig&) const = default;
};

// How long an on_demand model stays loaded without requests unless its
// entry says otherwise (Ollama's keep_alive default).
constexpr double kOnDemandKeepAliveS = 300.0;

struct ModelConfig {
  std::string name;
  std::string path;            // GGUF file or Hugging Face directory
  std::string device = "cpu";  // cpu, or KIND:N of a backend (device_forms())
  std::string dtype = "auto";  // auto, f32, f16, bf16
  int threads = 0;             // 0: every hardware thread
  KvCacheConfig kv_cache;
  SchedulerConfig scheduler;
  QuantizationConfig quantization;
  int max_model_len = 0;       // 0: the model's own context length
  std::optional<std::string> chat_template;  // overrides the model's template
  // Special-token text inside message content is tokenized as plain text
  // unless this is set (the template's own markers always are special).
  bool parse_special_in_messages = false;
  // How the output carries reasoning: "auto" (<think> tags when the chat
  // template has them), "think" or "none".
  std::string reasoning_parser = "auto";
  StructuredOutputConfig structured_output;
  EmbeddingConfig embeddings;
  // Values for the sampling fields a request leaves out: these, key by key,
  // over the model's own recommendation (generation_config.json, GGUF
  // general.sampling.*) unless sampling_defaults_from_model is false.
  SamplingDefaults sampling_defaults;
  bool sampling_defaults_from_model = true;
  // "startup": loaded when the daemon starts; "on_demand": by the first
  // request that names it.
  std::string load = "startup";
  // Unloaded after this many seconds without a request (it loads again on
  // demand); below 0: kept loaded. Unset, it is 300 for on_demand models.
  double keep_alive_s = -1.0;

  bool operator==(const ModelConfig&) const = default;
};

// Parallel ranks, rank 0 in the serving process: tensor parallelism splits
// every model's weights over `tensor` ranks; context parallelism gives each
// of `context` ranks the whole model and divides long prefills among them.
// Rank 0 serves a rendezvous store at `leader`; the other ranks are
// `tessera worker` processes that join it, started by serve on this machine
// (spawn_workers) or elsewhere (one per pod).
struct ParallelConfig {
  int tensor = 1;
  int context = 1;
  int context_min_tokens = 256;  // the shortest step divided among context-parallel ranks
  // exact: the same bits as one rank (activations gathered after O and
  // down); all_reduce: one all-reduce after each of them, fewer bytes moved.
  std::string layout = "exact";
  std::string leader;  // HOST:PORT; empty: a free loopback port (spawned workers only)
  bool spawn_workers = true;
  double collective_timeout_s = 30.0;  // any one collective; a rank past it is taken for dead
  double join_timeout_s = 300.0;       // for every rank to join at start
  int flight_recorder_entries = 1024;  // collectives each rank keeps for its dump
  std::string flight_recorder_dir = "/tmp/tessera-flight-recorder";
  // A file holding the group's rendezvous secret, for ranks on other
  // machines (TESSERA_RENDEZVOUS_SECRET, when set, wins); spawned workers
  // get a fresh one from their leader. Never handed to the workers.
  std::string secret_file;
  int world() const { return tensor * context; }
  bool enabled() const { return world() > 1; }
};

struct Config {
  ServerConfig server;
  std::vector<ModelConfig> models;
  ParallelConfig parallel;
};

// Throws tessera::Error naming `source` (a path or "<string>") and the line.
Config parse_config(const std::string& yaml_text, const std::string& source);
Config load_config_file(const std::string& path);
// The model and parallel sections as a document parse_config reads back to
// the same values (JSON, which is YAML): what the leader hands its workers.
std::string models_to_json(const Config& config);
// The text of config/default.yaml, compiled in.
const char* default_config_yaml();

}  // namespace tessera
