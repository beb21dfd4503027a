// The models and parallel sections written back in the schema the parser
// reads, so a worker loads exactly what its leader loads.
#include <nlohmann/json.hpp>

#include "config/config.h"

namespace tessera {
namespace {

nlohmann::json model_json(const ModelConfig& m) {
  nlohmann::json kv = {{"page_size", m.kv_cache.page_size}, {"dtype", m.kv_cache.dtype}};
  if (m.kv_cache.memory_fraction > 0.0) kv["memory_fraction"] = m.kv_cache.memory_fraction;
  else kv["budget_mb"] = m.kv_cache.budget_mb;
  const SchedulerConfig& s = m.scheduler;
  nlohmann::json out = {
      {"name", m.name},
      {"path", m.path},
      {"device", m.device},
      {"dtype", m.dtype},
      {"threads", m.threads},
      {"max_model_len", m.max_model_len},
      {"parse_special_in_messages", m.parse_special_in_messages},
      {"reasoning_parser", m.reasoning_parser},
      {"kv_cache", kv},
      {"structured_output",
       {{"max_concurrent_compiles", m.structured_output.max_concurrent_compiles},
        {"compile_budget_s", m.structured_output.compile_budget_s},
        {"cached_grammars", m.structured_output.cached_grammars}}},
      {"embeddings",
       {{"pooling", m.embeddings.pooling}, {"normalize", m.embeddings.normalize}, {"only", m.embeddings.only}}},
      {"scheduler",
       {{"max_batch_tokens", s.max_batch_tokens}, {"max_sequences", s.max_sequences}, {"prefill_chunk", s.prefill_chunk},
        {"max_queued_requests", s.max_queued_requests}, {"max_queued_tokens", s.max_queued_tokens},
        {"prefix_caching", s.prefix_caching}, {"policy", s.policy}}},
      {"speculative",
       {{"method", s.speculative.method}, {"num_speculative_tokens", s.speculative.num_speculative_tokens},
        {"prompt_lookup_max", s.speculative.prompt_lookup_max}, {"prompt_lookup_min", s.speculative.prompt_lookup_min}}},
  };
  if (!s.speculative.draft_model.empty()) out["speculative"]["model"] = s.speculative.draft_model;
  if (!m.quantization.scheme.empty()) {
    out["quantization"] = {{"scheme", m.quantization.scheme}, {"group_size", m.quantization.group_size}};
  }
  if (m.chat_template) out["chat_template"] = *m.chat_template;
  nlohmann::json sampling = {{"from_model", m.sampling_defaults_from_model}};
  const SamplingDefaults& d = m.sampling_defaults;
  if (d.temperature) sampling["temperature"] = *d.temperature;
  if (d.top_p) sampling["top_p"] = *d.top_p;
  if (d.top_k) sampling["top_k"] = *d.top_k;
  if (d.min_p) sampling["min_p"] = *d.min_p;
  if (d.repetition_penalty) sampling["repetition_penalty"] = *d.repetition_penalty;
  out["sampling_defaults"] = sampling;
  return out;
}

}  // namespace

std::string models_to_json(const Config& config) {
  const ParallelConfig& p = config.parallel;
  nlohmann::json doc = {
      {"parallel",
       {{"tensor", p.tensor}, {"context", p.context}, {"context_min_tokens", p.context_min_tokens}, {"layout", p.layout}, {"leader", p.leader}, {"spawn_workers", p.spawn_workers},
        {"collective_timeout_s", p.collective_timeout_s}, {"join_timeout_s", p.join_timeout_s},
        {"flight_recorder_entries", p.flight_recorder_entries}, {"flight_recorder_dir", p.flight_recorder_dir}}},
      {"models", nlohmann::json::array()},
  };
  for (const ModelConfig& m : config.models) doc["models"].push_back(model_json(m));
  // Plain ASCII: YAML reads JSON's \u escapes, and no byte needs care.
  return doc.dump(-1, ' ', true);
}

}  // namespace tessera
