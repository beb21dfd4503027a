#include <gtest/gtest.h>

#include "config/config.h"
#include "engine/core/error.h"
#include "tests/unit/test_files.h"

namespace tessera {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_config(yaml, "test.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Config, TheDefaultFileParses) {
  const Config c = load_config_file(std::string(TESSERA_SOURCE_DIR) + "/config/default.yaml");
  EXPECT_EQ(c.server.http_port, 8080);
  EXPECT_EQ(c.server.grpc_port, 50051);
  ASSERT_EQ(c.models.size(), 1u);
  EXPECT_EQ(c.models[0].name, "smollm2");
  EXPECT_EQ(c.models[0].kv_cache.page_size, 16);
  EXPECT_EQ(c.models[0].scheduler.prefill_chunk, 512);
}

TEST(Config, TheDocumentedExampleParses) {
  const std::string readme = test::read_file(std::string(TESSERA_SOURCE_DIR) + "/docs/configuration.md");
  const size_t begin = readme.find("```yaml\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = readme.find("```", begin + 8);
  const Config c = parse_config(readme.substr(begin + 8, end - begin - 8), "docs/configuration.md");
  EXPECT_EQ(c.models.at(0).scheduler.max_queued_tokens, 1048576);
  EXPECT_FALSE(c.models.at(0).chat_template.has_value());
}

TEST(Config, SeveralModelsAndDefaults) {
  const Config c = parse_config(R"(
models:
  - name: a
    path: /m/a.gguf
  - name: b
    path: /m/b
    device: cuda:0
    dtype: bf16
    kv_cache: {budget_mb: 1024, dtype: f32}
    chat_template: "{{ messages }}"
)", "t");
  ASSERT_EQ(c.models.size(), 2u);
  EXPECT_EQ(c.models[0].kv_cache.budget_mb, 256);
  EXPECT_EQ(c.models[1].device, "cuda:0");
  EXPECT_EQ(c.models[1].kv_cache.dtype, "f32");
  EXPECT_EQ(c.models[1].chat_template.value(), "{{ messages }}");
  EXPECT_EQ(c.server.host, "127.0.0.1");
}

TEST(Config, ErrorsNameTheLineTheKeyAndWhatIsAllowed) {
  EXPECT_EQ(error_of("models:\n  - name: a\n    path: x\n    colour: red\n"),
            "test.yaml:4: unknown key 'colour' in models[0] (allowed: name, path, device, dtype, threads, kv_cache, scheduler, "
            "max_model_len, chat_template, parse_special_in_messages, speculative, quantization, structured_output, "
            "sampling_defaults, reasoning_parser, embeddings, load, keep_alive_s)");
  EXPECT_EQ(error_of("server:\n  http_port: 70000\nmodels: [{name: a, path: x}]\n"),
            "test.yaml:2: server.http_port: 70000 is outside 1 to 65535");
  EXPECT_EQ(error_of("server:\n  http_port: eighty\nmodels: [{name: a, path: x}]\n"),
            "test.yaml:2: server.http_port: expected an integer from 1 to 65535");
  EXPECT_NE(error_of("models:\n  - name: a\n    path: x\n    kv_cache: {dtype: q4}\n").find("'q4' is not one of f16, f32, int8"), std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x}, {name: a, path: y}]\n").find("'a' is used twice"), std::string::npos);
  EXPECT_NE(error_of("models: []\n").find("'models' must be a non-empty list"), std::string::npos);
  EXPECT_NE(error_of("models: [{name: a}]\n").find("'name' and 'path' are required"), std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x, device: tpu}]\n").find("device 'tpu': expected cpu, cuda, cuda:N, hip:N or xpu:N"), std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x, device: 'xpu:-1'}]\n").find("device 'xpu:-1'"), std::string::npos);
  const Config xpu = parse_config("server: {backend_dir: /opt/tessera/backends}\nmodels: [{name: a, path: x, device: 'xpu:1'}]\n", "t.yaml");
  EXPECT_EQ(xpu.models[0].device, "xpu:1");
  EXPECT_EQ(xpu.server.backend_dir, "/opt/tessera/backends");
  EXPECT_NE(error_of("models: [{name: a, path: x, embeddings: {pooling: cls}}]\n").find("'cls' is not one of last, mean"),
            std::string::npos);
  EXPECT_EQ(error_of("models: [{name: a, path: x, scheduler: {prefix_caching: maybe}}]\n"),
            "test.yaml:1: models[0].scheduler.prefix_caching: expected true or false");
  EXPECT_FALSE(parse_config("models: [{name: a, path: x, scheduler: {prefix_caching: false}}]\n", "t.yaml")
                   .models[0].scheduler.prefix_caching);
  EXPECT_NE(error_of("server: {http_port: 1, grpc_port: 1}\nmodels: [{name: a, path: x}]\n").find("must differ"), std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x\n").find("not valid YAML"), std::string::npos);
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("- 1\n- 2\n").find("must be a mapping"), std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x, kv_cache: {page_size: 8, block_size: 8}}]\n").find("not both"),
            std::string::npos);
}

TEST(Config, SpeculativeDecoding) {
  const auto model = [](const std::string& yaml) { return parse_config("models: [{name: a, path: x" + yaml + "}]\n", "t.yaml").models[0]; };
  EXPECT_FALSE(model("").scheduler.speculative.enabled());
  const SpeculativeConfig on = model(", speculative: {method: ngram, num_speculative_tokens: 3, prompt_lookup_min: 1}").scheduler.speculative;
  EXPECT_TRUE(on.enabled());
  EXPECT_EQ(on.num_speculative_tokens, 3);
  EXPECT_EQ(on.prompt_lookup_min, 1);
  EXPECT_EQ(on.prompt_lookup_max, 4);
  EXPECT_NE(error_of("models: [{name: a, path: x, speculative: {method: eagle}}]\n")
                .find("'eagle' is not one of none, ngram, draft_model"),
            std::string::npos);
  const SpeculativeConfig draft =
      model(", speculative: {method: draft_model, model: /d.gguf, num_speculative_tokens: 4}").scheduler.speculative;
  EXPECT_TRUE(draft.uses_draft_model());
  EXPECT_EQ(draft.draft_model, "/d.gguf");
  EXPECT_FALSE(on.uses_draft_model());
  EXPECT_NE(error_of("models: [{name: a, path: x, speculative: {method: draft_model}}]\n").find("needs the draft's 'model'"),
            std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x, speculative: {method: ngram, model: /d.gguf}}]\n")
                .find("a draft model is used only with method: draft_model"),
            std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x, speculative: {num_speculative_tokens: 0}}]\n").find("outside 1 to 64"),
            std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x, speculative: {prompt_lookup_min: 5, prompt_lookup_max: 2}}]\n")
                .find("prompt_lookup_min (5) exceeds prompt_lookup_max (2)"),
            std::string::npos);
}

TEST(Config, QuantizationAtLoad) {
  const auto model = [](const std::string& yaml) { return parse_config("models: [{name: a, path: x" + yaml + "}]\n", "t.yaml").models[0]; };
  EXPECT_TRUE(model("").quantization.scheme.empty());
  const QuantizationConfig q = model(", quantization: {scheme: a16w4, group_size: 64}").quantization;
  EXPECT_EQ(q.scheme, "a16w4");
  EXPECT_EQ(q.group_size, 64);
  EXPECT_NE(error_of("models: [{name: a, path: x, quantization: {scheme: w3}}]\n").find("'w3' is not one of a16w8, a16w4, da8w8"),
            std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x, quantization: {scheme: a16w8, group_size: 64}}]\n").find("per output channel"),
            std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x, quantization: {scheme: a16w4, group_size: 96}}]\n").find("32, 64 or 128"),
            std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x, quantization: {group_size: 64}}]\n").find("quantization"), std::string::npos);
}

TEST(Config, StructuredOutputLimits) {
  const auto model = [](const std::string& yaml) { return parse_config("models: [{name: a, path: x" + yaml + "}]\n", "t.yaml").models[0]; };
  EXPECT_EQ(model("").structured_output.max_concurrent_compiles, 2);
  const StructuredOutputConfig s =
      model(", structured_output: {max_concurrent_compiles: 4, compile_budget_s: 0.5, cached_grammars: 8}").structured_output;
  EXPECT_EQ(s.max_concurrent_compiles, 4);
  EXPECT_DOUBLE_EQ(s.compile_budget_s, 0.5);
  EXPECT_EQ(s.cached_grammars, 8);
  EXPECT_NE(error_of("models: [{name: a, path: x, structured_output: {max_concurrent_compiles: 0}}]\n")
                .find("structured_output.max_concurrent_compiles"),
            std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x, structured_output: {budget: 1}}]\n").find("unknown key 'budget'"), std::string::npos);
  // Workers read what the leader writes back.
  Config c = parse_config("models: [{name: a, path: x, structured_output: {compile_budget_s: 0.25}}]\n", "t.yaml");
  EXPECT_DOUBLE_EQ(parse_config(models_to_json(c), "leader").models[0].structured_output.compile_budget_s, 0.25);
}

// The configurations the images and manifests under deploy/ serve.
TEST(Config, TheDeployConfigurationsParse) {
  for (const char* file : {"deploy/docker/config.yaml", "deploy/docker/config.cuda.yaml", "deploy/k8s/base/config.yaml",
                           "deploy/k8s/overlays/cuda/config.yaml", "deploy/k8s/overlays/cpu-lws/config.yaml"}) {
    const std::string path = std::string(TESSERA_SOURCE_DIR) + "/" + file;
    const Config c = parse_config(test::read_file(path), path);
    EXPECT_EQ(c.server.host, "0.0.0.0") << file;
    ASSERT_EQ(c.models.size(), 1u) << file;
  }
}

TEST(Config, KvCacheMemoryFraction) {
  EXPECT_DOUBLE_EQ(parse_config("models: [{name: a, path: x, kv_cache: {memory_fraction: 0.9}}]\n", "t.yaml").models[0].kv_cache.memory_fraction,
                   0.9);
  EXPECT_DOUBLE_EQ(parse_config("models: [{name: a, path: x}]\n", "t.yaml").models[0].kv_cache.memory_fraction, 0.0);
  EXPECT_NE(error_of("models: [{name: a, path: x, kv_cache: {budget_mb: 64, memory_fraction: 0.5}}]\n").find("not both"),
            std::string::npos);
  EXPECT_NE(error_of("models: [{name: a, path: x, kv_cache: {memory_fraction: 1.5}}]\n").find("memory_fraction"), std::string::npos);
}

TEST(Config, PageSizeAlsoReadsAsVllmsBlockSize) {
  EXPECT_EQ(parse_config("models: [{name: a, path: x, kv_cache: {page_size: 32}}]\n", "t.yaml").models[0].kv_cache.page_size, 32);
  EXPECT_EQ(parse_config("models: [{name: a, path: x, kv_cache: {dtype: int8}}]\n", "t.yaml").models[0].kv_cache.dtype, "int8");
  EXPECT_EQ(parse_config("models: [{name: a, path: x, kv_cache: {block_size: 8}}]\n", "t.yaml").models[0].kv_cache.page_size, 8);
}

}  // namespace
TEST(Config, HardeningKeys) {
  const Config c = parse_config(R"(
server:
  max_connections: 100
  max_connections_per_client: 10
  header_timeout_s: 2.5
  api_keys: [k1, k2]
  tls: {cert_file: /c.pem, key_file: /k.pem}
models:
  - {name: a, path: x, parse_special_in_messages: true, scheduler: {policy: priority}}
)", "t.yaml");
  EXPECT_EQ(c.server.max_connections, 100);
  EXPECT_EQ(c.server.max_connections_per_client, 10);
  EXPECT_DOUBLE_EQ(c.server.header_timeout_s, 2.5);
  EXPECT_EQ(c.server.api_keys, (std::vector<std::string>{"k1", "k2"}));
  EXPECT_TRUE(c.server.tls.enabled());
  EXPECT_TRUE(c.models[0].parse_special_in_messages);
  EXPECT_EQ(c.models[0].scheduler.policy, "priority");
  EXPECT_EQ(parse_config("models: [{name: a, path: x}]\n", "t").models[0].scheduler.policy, "fcfs");
  EXPECT_NE(error_of("models: [{name: a, path: x, scheduler: {policy: lottery}}]\n").find("not one of fcfs, priority"),
            std::string::npos);
  EXPECT_NE(error_of("server: {api_keys: ['']}\nmodels: [{name: a, path: x}]\n").find("non-empty"), std::string::npos);
  EXPECT_NE(error_of("server: {tls: {cert_file: /c}}\nmodels: [{name: a, path: x}]\n").find("both"), std::string::npos);
  EXPECT_NE(error_of("server: {idle_timeout_s: 0}\nmodels: [{name: a, path: x}]\n").find("outside"), std::string::npos);
}

TEST(Config, AllowedOriginsAreOriginsOrAStar) {
  const Config c = parse_config("server: {allowed_origins: ['https://app.example.com', 'http://localhost:3000', '*']}\n"
                                "models: [{name: a, path: x}]\n", "t.yaml");
  EXPECT_EQ(c.server.allowed_origins, (std::vector<std::string>{"https://app.example.com", "http://localhost:3000", "*"}));
  EXPECT_TRUE(parse_config("models: [{name: a, path: x}]\n", "t").server.allowed_origins.empty());
  for (const char* bad : {"'https://app.example.com/'", "'app.example.com'", "'https://'", "'ftp://x'", "{a: b}"}) {
    const std::string error = error_of(std::string("server: {allowed_origins: [") + bad + "]}\nmodels: [{name: a, path: x}]\n");
    EXPECT_NE(error.find("server.allowed_origins"), std::string::npos) << bad << ": " << error;
  }
}

TEST(Config, OnDemandModelsAndTheMemoryBudget) {
  const Config c = parse_config("server: {memory_budget_mb: 2048, model_load_timeout_s: 20}\n"
                                "models:\n"
                                "  - {name: a, path: x}\n"
                                "  - {name: b, path: x, load: on_demand}\n"
                                "  - {name: c, path: x, load: on_demand, keep_alive_s: 5}\n"
                                "  - {name: d, path: x, keep_alive_s: 60}\n"
                                "  - {name: e, path: x, load: on_demand, keep_alive_s: -1}\n", "t.yaml");
  EXPECT_EQ(c.server.memory_budget_mb, 2048);
  EXPECT_DOUBLE_EQ(c.server.model_load_timeout_s, 20.0);
  EXPECT_EQ(c.models[0].load, "startup");
  EXPECT_LT(c.models[0].keep_alive_s, 0.0);  // a startup model stays unless told otherwise
  EXPECT_EQ(c.models[1].load, "on_demand");
  EXPECT_DOUBLE_EQ(c.models[1].keep_alive_s, kOnDemandKeepAliveS);
  EXPECT_DOUBLE_EQ(c.models[2].keep_alive_s, 5.0);
  EXPECT_DOUBLE_EQ(c.models[3].keep_alive_s, 60.0);
  EXPECT_LT(c.models[4].keep_alive_s, 0.0);
  EXPECT_EQ(parse_config("models: [{name: a, path: x}]\n", "t").server.memory_budget_mb, 0);
  EXPECT_NE(error_of("models: [{name: a, path: x, load: lazy}]\n").find("models[0].load: 'lazy' is not one of startup, on_demand"),
            std::string::npos);
  EXPECT_NE(error_of("server: {memory_budget_mb: -1}\nmodels: [{name: a, path: x}]\n").find("server.memory_budget_mb"),
            std::string::npos);
  EXPECT_NE(error_of("parallel: {tensor: 2}\nmodels: [{name: a, path: x, load: on_demand}]\n").find("parallel ranks"),
            std::string::npos);
}

TEST(Config, ParallelSection) {
  const Config c = parse_config(R"(
parallel:
  tensor: 2
  layout: all_reduce
  leader: leader-0.tessera:29500
  spawn_workers: false
  collective_timeout_s: 2
models:
  - {name: a, path: /m/a.gguf}
)", "p.yaml");
  EXPECT_TRUE(c.parallel.enabled());
  EXPECT_EQ(c.parallel.layout, "all_reduce");
  EXPECT_EQ(c.parallel.leader, "leader-0.tessera:29500");
  EXPECT_FALSE(c.parallel.spawn_workers);
  EXPECT_DOUBLE_EQ(c.parallel.collective_timeout_s, 2.0);
  EXPECT_NE(error_of("parallel: {tensor: 0}\nmodels: [{name: a, path: x}]").find("parallel.tensor"), std::string::npos);
  EXPECT_NE(error_of("parallel: {tensor: 2, leader: 'nohost'}\nmodels: [{name: a, path: x}]").find("HOST:PORT"), std::string::npos);
  EXPECT_NE(error_of("parallel: {tensor: 2, leader: 'h:99999'}\nmodels: [{name: a, path: x}]").find("HOST:PORT"), std::string::npos);
  EXPECT_NE(error_of("parallel: {tensor: 2, spawn_workers: false}\nmodels: [{name: a, path: x}]").find("leader's address"),
            std::string::npos);
  EXPECT_NE(error_of("parallel: {pipeline: 2}\nmodels: [{name: a, path: x}]").find("unknown key 'pipeline'"), std::string::npos);
  EXPECT_NE(error_of("parallel: {tensor: 2, context: 2}\nmodels: [{name: a, path: x}]").find("cannot be combined"),
            std::string::npos);
  EXPECT_NE(error_of("parallel: {context: 2, context_min_tokens: 1}\nmodels: [{name: a, path: x}]").find("context_min_tokens"),
            std::string::npos);
  const Config cp = parse_config("parallel: {context: 4, context_min_tokens: 64}\nmodels: [{name: a, path: x}]", "<string>");
  EXPECT_EQ(cp.parallel.world(), 4);
  EXPECT_EQ(cp.parallel.context_min_tokens, 64);
  const Config cp_back = parse_config(models_to_json(cp), "leader");
  EXPECT_EQ(cp_back.parallel.context, 4);
  EXPECT_EQ(cp_back.parallel.context_min_tokens, 64);
}

TEST(Config, ModelsWrittenForWorkersReadBackTheSame) {
  Config c = parse_config(R"(
parallel: {tensor: 3, leader: "127.0.0.1:4000", collective_timeout_s: 2.5, flight_recorder_entries: 7}
models:
  - name: first
    path: "/models/a b.gguf"
    threads: 3
    max_model_len: 999
    chat_template: "{{ \"é\" }}\n{% if x %}\"quoted\"{% endif %}"
    kv_cache: {memory_fraction: 0.5, page_size: 32, dtype: int8}
    scheduler: {max_batch_tokens: 100, max_sequences: 5, prefill_chunk: 50, prefix_caching: false, policy: priority}
    speculative: {method: draft_model, model: /d.gguf, num_speculative_tokens: 3}
    quantization: {scheme: a16w4, group_size: 64}
    embeddings: {pooling: mean, normalize: false, only: true}
  - {name: second, path: /b.gguf, kv_cache: {budget_mb: 77}}
)", "w.yaml");
  const Config back = parse_config(models_to_json(c), "leader");
  ASSERT_EQ(back.models.size(), 2u);
  const ModelConfig& a = back.models[0];
  EXPECT_EQ(a.path, "/models/a b.gguf");
  EXPECT_EQ(a.threads, 3);
  EXPECT_EQ(a.max_model_len, 999);
  EXPECT_EQ(a.chat_template, c.models[0].chat_template);
  EXPECT_DOUBLE_EQ(a.kv_cache.memory_fraction, 0.5);
  EXPECT_EQ(a.kv_cache.page_size, 32);
  EXPECT_EQ(a.kv_cache.dtype, "int8");
  EXPECT_EQ(a.scheduler.max_batch_tokens, 100);
  EXPECT_EQ(a.scheduler.max_sequences, 5);
  EXPECT_FALSE(a.scheduler.prefix_caching);
  EXPECT_EQ(a.scheduler.policy, "priority");
  EXPECT_EQ(a.scheduler.speculative.num_speculative_tokens, 3);
  EXPECT_EQ(a.scheduler.speculative.draft_model, "/d.gguf");
  EXPECT_FALSE(back.models[1].scheduler.speculative.enabled());
  EXPECT_EQ(a.quantization.scheme, "a16w4");
  EXPECT_EQ(a.quantization.group_size, 64);
  EXPECT_EQ(back.models[1].kv_cache.budget_mb, 77);
  EXPECT_EQ(a.embeddings.pooling, "mean");
  EXPECT_FALSE(a.embeddings.normalize);
  EXPECT_TRUE(a.embeddings.only);
  EXPECT_EQ(back.models[1].embeddings.pooling, "last");
  EXPECT_TRUE(back.models[1].embeddings.normalize);
  EXPECT_EQ(back.parallel.tensor, 3);
  EXPECT_EQ(back.parallel.leader, "127.0.0.1:4000");
  EXPECT_DOUBLE_EQ(back.parallel.collective_timeout_s, 2.5);
  EXPECT_EQ(back.parallel.flight_recorder_entries, 7);
}

}  // namespace tessera
