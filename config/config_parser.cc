#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "config/config.h"
#include "engine/tensor/device.h"
#include "engine/core/error.h"
#include "quant/schemes.h"

namespace tessera {
namespace {

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  Config parse(const YAML::Node& root) {
    Config config;
    if (!root.IsDefined() || root.IsNull()) fail(root, "the file is empty");
    require_map(root, "the top level");
    check_keys(root, "the top level", {"server", "models", "parallel"});
    if (root["server"]) parse_server(root["server"], &config.server);
    if (root["parallel"]) parse_parallel(root["parallel"], &config.parallel);
    const YAML::Node models = root["models"];
    if (!models || !models.IsSequence() || models.size() == 0) fail(models ? models : root, "'models' must be a non-empty list");
    std::set<std::string> names;
    for (size_t i = 0; i < models.size(); ++i) {
      ModelConfig m = parse_model(models[i], "models[" + std::to_string(i) + "]");
      if (!names.insert(m.name).second) fail(models[i]["name"], "models[" + std::to_string(i) + "].name: '" + m.name + "' is used twice");
      if (m.load == "on_demand" && config.parallel.enabled()) {
        fail(models[i]["load"], "models[" + std::to_string(i) + "].load: on_demand models cannot be served by parallel ranks");
      }
      config.models.push_back(std::move(m));
    }
    return config;
  }

 private:
  [[noreturn]] void fail(const YAML::Node& node, const std::string& what) const {
    const YAML::Mark mark = node.Mark();
    const std::string where = mark.line >= 0 ? ":" + std::to_string(mark.line + 1) : "";
    throw Error(source_ + where + ": " + what);
  }

  void require_map(const YAML::Node& node, const std::string& what) const {
    if (!node.IsMap()) fail(node, what + " must be a mapping");
  }

  void check_keys(const YAML::Node& node, const std::string& where, std::initializer_list<const char*> allowed) const {
    for (const auto& kv : node) {
      const std::string key = kv.first.as<std::string>();
      bool known = false;
      std::string list;
      for (const char* a : allowed) {
        known |= key == a;
        list += (list.empty() ? "" : ", ") + std::string(a);
      }
      if (!known) fail(kv.first, "unknown key '" + key + "' in " + where + " (allowed: " + list + ")");
    }
  }

  template <typename T>
  void integer(const YAML::Node& parent, const char* key, const std::string& path, int64_t lo, int64_t hi, T* out) const {
    const YAML::Node n = parent[key];
    if (!n) return;
    int64_t v;
    try {
      if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "not a scalar");
      v = n.as<int64_t>();
    } catch (const YAML::Exception&) {
      fail(n, path + "." + key + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
    }
    if (v < lo || v > hi) {
      fail(n, path + "." + key + ": " + std::to_string(v) + " is outside " + std::to_string(lo) + " to " + std::to_string(hi));
    }
    *out = T(v);
  }

  void number(const YAML::Node& parent, const char* key, const std::string& path, double lo, double hi, double* out) const {
    const YAML::Node n = parent[key];
    if (!n) return;
    double v;
    try {
      if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "not a scalar");
      v = n.as<double>();
    } catch (const YAML::Exception&) {
      fail(n, path + "." + key + ": expected a number");
    }
    if (!(v >= lo && v <= hi)) fail(n, path + "." + key + ": " + n.Scalar() + " is outside " + std::to_string(lo) + " to " + std::to_string(hi));
    *out = v;
  }

  void boolean(const YAML::Node& parent, const char* key, const std::string& path, bool* out) const {
    const YAML::Node n = parent[key];
    if (!n || n.IsNull()) return;
    if (!n.IsScalar() || (n.Scalar() != "true" && n.Scalar() != "false")) fail(n, path + "." + key + ": expected true or false");
    *out = n.Scalar() == "true";
  }

  void text(const YAML::Node& parent, const char* key, const std::string& path, std::string* out,
            std::initializer_list<const char*> choices = {}) const {
    const YAML::Node n = parent[key];
    if (!n || n.IsNull()) return;  // null means "not set"
    if (!n.IsScalar()) fail(n, path + "." + key + ": expected a string");
    const std::string v = n.Scalar();
    if (choices.size() > 0) {
      std::string list;
      bool ok = false;
      for (const char* c : choices) {
        ok |= v == c;
        list += (list.empty() ? "" : ", ") + std::string(c);
      }
      if (!ok) fail(n, path + "." + key + ": '" + v + "' is not one of " + list);
    }
    *out = v;
  }

  void parse_server(const YAML::Node& n, ServerConfig* s) const {
    require_map(n, "server");
    check_keys(n, "server", {"host", "http_port", "grpc_port", "max_body_bytes", "max_header_bytes", "max_headers",
                             "max_json_depth", "max_json_array_length", "max_json_object_members", "max_stop_strings",
                             "max_n", "max_top_logprobs", "drain_timeout_s", "max_connections",
                             "max_connections_per_client", "reserved_health_connections", "header_timeout_s",
                             "body_timeout_s", "idle_timeout_s", "write_timeout_s", "grpc_max_concurrent_streams",
                             "api_keys", "admin_key", "tls", "backend_dir", "allowed_origins", "response_store",
                             "memory_budget_mb", "model_load_timeout_s", "cache_dir", "cache_max_mib"});
    text(n, "host", "server", &s->host);
    text(n, "backend_dir", "server", &s->backend_dir);
    integer(n, "http_port", "server", 1, 65535, &s->http_port);
    integer(n, "grpc_port", "server", 1, 65535, &s->grpc_port);
    integer(n, "max_body_bytes", "server", 1024, int64_t(1) << 30, &s->max_body_bytes);
    integer(n, "max_header_bytes", "server", 1024, 1 << 20, &s->max_header_bytes);
    integer(n, "max_headers", "server", 8, 10000, &s->max_headers);
    integer(n, "max_json_depth", "server", 4, 1024, &s->max_json_depth);
    integer(n, "max_json_array_length", "server", 16, 1 << 24, &s->max_json_array_length);
    integer(n, "max_json_object_members", "server", 16, 1 << 20, &s->max_json_object_members);
    integer(n, "max_connections", "server", 1, 1 << 20, &s->max_connections);
    integer(n, "max_connections_per_client", "server", 1, 1 << 20, &s->max_connections_per_client);
    integer(n, "reserved_health_connections", "server", 1, 4096, &s->reserved_health_connections);
    number(n, "header_timeout_s", "server", 0.1, 3600.0, &s->header_timeout_s);
    number(n, "body_timeout_s", "server", 0.1, 3600.0, &s->body_timeout_s);
    number(n, "idle_timeout_s", "server", 0.1, 86400.0, &s->idle_timeout_s);
    number(n, "write_timeout_s", "server", 0.1, 3600.0, &s->write_timeout_s);
    integer(n, "grpc_max_concurrent_streams", "server", 1, 1 << 20, &s->grpc_max_concurrent_streams);
    parse_api_keys(n, s);
    text(n, "admin_key", "server", &s->admin_key);
    parse_allowed_origins(n, s);
    if (const YAML::Node store = n["response_store"]; store && !store.IsNull()) {
      require_map(store, "server.response_store");
      check_keys(store, "server.response_store", {"max_responses", "max_mib", "ttl_s"});
      integer(store, "max_responses", "server.response_store", 0, 1 << 20, &s->response_store_max_responses);
      integer(store, "max_mib", "server.response_store", 0, 1 << 16, &s->response_store_max_mib);
      number(store, "ttl_s", "server.response_store", 1.0, 30.0 * 86400.0, &s->response_store_ttl_s);
    }
    if (const YAML::Node tls = n["tls"]; tls && !tls.IsNull()) {
      require_map(tls, "server.tls");
      check_keys(tls, "server.tls", {"cert_file", "key_file"});
      text(tls, "cert_file", "server.tls", &s->tls.cert_file);
      text(tls, "key_file", "server.tls", &s->tls.key_file);
      if (s->tls.cert_file.empty() != s->tls.key_file.empty()) fail(tls, "server.tls: give both cert_file and key_file");
    }
    integer(n, "max_stop_strings", "server", 0, 1024, &s->max_stop_strings);
    integer(n, "max_n", "server", 1, 1024, &s->max_n);
    integer(n, "max_top_logprobs", "server", 0, 100, &s->max_top_logprobs);
    number(n, "drain_timeout_s", "server", 0.0, 86400.0, &s->drain_timeout_s);
    integer(n, "memory_budget_mb", "server", 0, int64_t(1) << 30, &s->memory_budget_mb);
    number(n, "model_load_timeout_s", "server", 0.1, 86400.0, &s->model_load_timeout_s);
    text(n, "cache_dir", "server", &s->cache_dir);
    integer(n, "cache_max_mib", "server", 0, int64_t(1) << 30, &s->cache_max_mib);
    if (s->http_port == s->grpc_port) fail(n, "server: http_port and grpc_port must differ");
  }

  // Each "*" or an origin as browsers send it: scheme, host and optional
  // port, no path (a trailing '/' would never match).
  void parse_allowed_origins(const YAML::Node& n, ServerConfig* s) const {
    const YAML::Node list = n["allowed_origins"];
    if (!list || list.IsNull()) return;
    if (!list.IsSequence()) fail(list, "server.allowed_origins: expected a list of origins");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string origin = list[i].IsScalar() ? list[i].Scalar() : "";
      const size_t host = origin.find("://");
      const bool web = origin.rfind("http://", 0) == 0 || origin.rfind("https://", 0) == 0;
      if (origin != "*" && (!web || origin.size() == host + 3 || origin.find('/', host + 3) != std::string::npos)) {
        fail(list[i], "server.allowed_origins: '" + origin + "' is not an origin (\"*\" or scheme://host[:port], no path)");
      }
      s->allowed_origins.push_back(origin);
    }
  }

  void parse_api_keys(const YAML::Node& n, ServerConfig* s) const {
    const YAML::Node keys = n["api_keys"];
    if (!keys || keys.IsNull()) return;
    if (!keys.IsSequence()) fail(keys, "server.api_keys: expected a list of strings");
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!keys[i].IsScalar() || keys[i].Scalar().empty()) fail(keys[i], "server.api_keys: every key must be a non-empty string");
      s->api_keys.push_back(keys[i].Scalar());
    }
  }

  // The ranges a request may ask for (server/serving/generation_request.cc).
  void parse_sampling_defaults(const YAML::Node& n, const std::string& path, ModelConfig* m) const {
    require_map(n, path);
    check_keys(n, path, {"from_model", "temperature", "top_p", "top_k", "min_p", "repetition_penalty"});
    boolean(n, "from_model", path, &m->sampling_defaults_from_model);
    SamplingDefaults& s = m->sampling_defaults;
    const auto optional_number = [&](const char* key, double lo, double hi, std::optional<double>* out) {
      if (!n[key] || n[key].IsNull()) return;
      double v = 0.0;
      number(n, key, path, lo, hi, &v);
      *out = v;
    };
    optional_number("temperature", 0.0, 2.0, &s.temperature);
    optional_number("top_p", 0.0, 1.0, &s.top_p);
    if (s.top_p && *s.top_p <= 0.0) fail(n["top_p"], path + ".top_p: must be greater than 0");
    optional_number("min_p", 0.0, 1.0, &s.min_p);
    optional_number("repetition_penalty", 0.01, 10.0, &s.repetition_penalty);
    if (n["top_k"] && !n["top_k"].IsNull()) {
      int64_t k = 0;
      integer(n, "top_k", path, 0, int64_t(1) << 30, &k);
      s.top_k = k;
    }
  }

  ModelConfig parse_model(const YAML::Node& n, const std::string& path) const {
    require_map(n, path);
    check_keys(n, path, {"name", "path", "device", "dtype", "threads", "kv_cache", "scheduler", "max_model_len", "chat_template",
                         "parse_special_in_messages", "speculative", "quantization", "structured_output",
                         "sampling_defaults", "reasoning_parser", "embeddings", "load", "keep_alive_s"});
    ModelConfig m;
    if (!n["name"] || !n["path"]) fail(n, path + ": 'name' and 'path' are required");
    text(n, "name", path, &m.name);
    text(n, "path", path, &m.path);
    if (m.name.empty()) fail(n["name"], path + ".name: must not be empty");
    text(n, "device", path, &m.device);
    try {
      parse_device(m.device);
    } catch (const Error& e) {
      fail(n["device"], path + ".device: " + e.what());
    }
    text(n, "dtype", path, &m.dtype, {"auto", "f32", "f16", "bf16"});
    integer(n, "threads", path, 0, 1024, &m.threads);
    integer(n, "max_model_len", path, 0, 1 << 24, &m.max_model_len);
    boolean(n, "parse_special_in_messages", path, &m.parse_special_in_messages);
    text(n, "reasoning_parser", path, &m.reasoning_parser, {"auto", "think", "harmony", "none"});
    text(n, "load", path, &m.load, {"startup", "on_demand"});
    m.keep_alive_s = m.load == "on_demand" ? kOnDemandKeepAliveS : -1.0;
    number(n, "keep_alive_s", path, -1.0, 365.0 * 86400.0, &m.keep_alive_s);
    if (m.keep_alive_s < 0.0) m.keep_alive_s = -1.0;
    if (n["chat_template"] && !n["chat_template"].IsNull()) {
      std::string t;
      text(n, "chat_template", path, &t);
      m.chat_template = t;
    }
    if (const YAML::Node kv = n["kv_cache"]) {
      const std::string p = path + ".kv_cache";
      require_map(kv, p);
      check_keys(kv, p, {"budget_mb", "memory_fraction", "page_size", "block_size", "dtype"});
      if (kv["budget_mb"] && kv["memory_fraction"]) fail(kv["memory_fraction"], p + ": give budget_mb or memory_fraction, not both");
      integer(kv, "budget_mb", p, 1, int64_t(1) << 24, &m.kv_cache.budget_mb);
      number(kv, "memory_fraction", p, 0.01, 1.0, &m.kv_cache.memory_fraction);
      // block_size is vLLM's name for the same thing, accepted for configs written for it.
      if (kv["page_size"] && kv["block_size"]) fail(kv["block_size"], p + ": give page_size or block_size, not both");
      integer(kv, kv["block_size"] ? "block_size" : "page_size", p, 1, 1024, &m.kv_cache.page_size);
      text(kv, "dtype", p, &m.kv_cache.dtype, {"f16", "f32", "int8"});
    }
    if (const YAML::Node s = n["scheduler"]) {
      const std::string p = path + ".scheduler";
      require_map(s, p);
      check_keys(s, p, {"max_batch_tokens", "max_sequences", "prefill_chunk", "max_queued_requests", "max_queued_tokens",
                        "prefix_caching", "policy"});
      integer(s, "max_batch_tokens", p, 1, 1 << 24, &m.scheduler.max_batch_tokens);
      integer(s, "max_sequences", p, 1, 1 << 16, &m.scheduler.max_sequences);
      integer(s, "prefill_chunk", p, 1, 1 << 24, &m.scheduler.prefill_chunk);
      integer(s, "max_queued_requests", p, 0, 1 << 24, &m.scheduler.max_queued_requests);
      integer(s, "max_queued_tokens", p, 0, int64_t(1) << 40, &m.scheduler.max_queued_tokens);
      boolean(s, "prefix_caching", p, &m.scheduler.prefix_caching);
      text(s, "policy", p, &m.scheduler.policy, {"fcfs", "priority"});
    }
    if (const YAML::Node so = n["structured_output"]) {
      const std::string p = path + ".structured_output";
      require_map(so, p);
      check_keys(so, p, {"max_concurrent_compiles", "compile_budget_s", "cached_grammars"});
      integer(so, "max_concurrent_compiles", p, 1, 1024, &m.structured_output.max_concurrent_compiles);
      number(so, "compile_budget_s", p, 0.01, 600.0, &m.structured_output.compile_budget_s);
      integer(so, "cached_grammars", p, 0, 1 << 16, &m.structured_output.cached_grammars);
    }
    if (const YAML::Node e = n["embeddings"]) {
      const std::string p = path + ".embeddings";
      require_map(e, p);
      check_keys(e, p, {"pooling", "normalize", "only"});
      text(e, "pooling", p, &m.embeddings.pooling, {"last", "mean"});
      boolean(e, "normalize", p, &m.embeddings.normalize);
      boolean(e, "only", p, &m.embeddings.only);
    }
    if (const YAML::Node sd = n["sampling_defaults"]) parse_sampling_defaults(sd, path + ".sampling_defaults", &m);
    if (const YAML::Node s = n["speculative"]) parse_speculative(s, path + ".speculative", &m.scheduler.speculative);
    if (const YAML::Node q = n["quantization"]; q && !q.IsNull()) {
      const std::string p = path + ".quantization";
      require_map(q, p);
      check_keys(q, p, {"scheme", "group_size"});
      text(q, "scheme", p, &m.quantization.scheme, {"a16w8", "a16w4", "da8w8"});
      integer(q, "group_size", p, 0, 128, &m.quantization.group_size);
      try {
        quant::scheme_choice(m.quantization.scheme, m.quantization.group_size);
      } catch (const Error& e) {
        fail(q, p + ": " + e.what());
      }
    }
    return m;
  }

  void parse_parallel(const YAML::Node& n, ParallelConfig* p) const {
    require_map(n, "parallel");
    check_keys(n, "parallel", {"tensor", "context", "context_min_tokens", "layout", "leader", "spawn_workers", "collective_timeout_s", "join_timeout_s",
                               "flight_recorder_entries", "flight_recorder_dir", "secret_file"});
    integer(n, "tensor", "parallel", 1, 64, &p->tensor);
    integer(n, "context", "parallel", 1, 64, &p->context);
    integer(n, "context_min_tokens", "parallel", 2, 1 << 24, &p->context_min_tokens);
    if (p->tensor > 1 && p->context > 1) {
      fail(n, "parallel: tensor and context parallelism cannot be combined yet; set one of them to 1");
    }
    text(n, "layout", "parallel", &p->layout, {"exact", "all_reduce"});
    text(n, "leader", "parallel", &p->leader);
    boolean(n, "spawn_workers", "parallel", &p->spawn_workers);
    number(n, "collective_timeout_s", "parallel", 0.1, 86400.0, &p->collective_timeout_s);
    number(n, "join_timeout_s", "parallel", 0.1, 86400.0, &p->join_timeout_s);
    integer(n, "flight_recorder_entries", "parallel", 1, 1 << 20, &p->flight_recorder_entries);
    text(n, "flight_recorder_dir", "parallel", &p->flight_recorder_dir);
    text(n, "secret_file", "parallel", &p->secret_file);
    if (!p->leader.empty()) {
      const size_t colon = p->leader.rfind(':');
      const std::string port = colon == std::string::npos ? "" : p->leader.substr(colon + 1);
      if (colon == 0 || port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(port) < 1 || std::stoi(port) > 65535) {
        fail(n["leader"], "parallel.leader: '" + p->leader + "' is not HOST:PORT");
      }
    }
    if (!p->spawn_workers && p->leader.empty() && p->enabled()) {
      fail(n, "parallel: workers on other machines (spawn_workers: false) need the leader's address");
    }
  }

  void parse_speculative(const YAML::Node& s, const std::string& p, SpeculativeConfig* c) const {
    require_map(s, p);
    check_keys(s, p, {"method", "num_speculative_tokens", "prompt_lookup_max", "prompt_lookup_min", "model"});
    text(s, "method", p, &c->method, {"none", "ngram", "draft_model"});
    text(s, "model", p, &c->draft_model);
    if (c->uses_draft_model() && c->draft_model.empty()) {
      fail(s, p + ": method draft_model needs the draft's 'model' (a GGUF file or Hugging Face directory)");
    }
    if (!c->uses_draft_model() && s["model"]) fail(s["model"], p + ".model: a draft model is used only with method: draft_model");
    integer(s, "num_speculative_tokens", p, 1, 64, &c->num_speculative_tokens);
    integer(s, "prompt_lookup_max", p, 1, 16, &c->prompt_lookup_max);
    integer(s, "prompt_lookup_min", p, 1, 16, &c->prompt_lookup_min);
    if (c->prompt_lookup_min > c->prompt_lookup_max) {
      fail(s, p + ": prompt_lookup_min (" + std::to_string(c->prompt_lookup_min) + ") exceeds prompt_lookup_max (" +
                  std::to_string(c->prompt_lookup_max) + ")");
    }
  }

  std::string source_;
};

}  // namespace

Config parse_config(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw Error(source + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  return Parser(source).parse(root);
}

Config load_config_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path);
}

}  // namespace tessera
