#pragma once
// One model the daemon serves: its loop (scheduler and engine), tokenizer,
// chat template and metrics, under the name requests use.
#include <ctime>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "scheduler/model_loop.h"
#include "server/chat/chat_template.h"
#include "server/metrics/model_metrics.h"
#include "server/serving/reasoning_parser.h"
#include "server/serving/tool_calls.h"
#include "server/serving/grammar_compiler.h"

namespace tessera {

struct ServedModel {
  ModelConfig config;
  std::unique_ptr<ModelLoop> loop;
  std::optional<ChatTemplate> chat_template;  // none: chat requests are refused
  ToolCallFormat tool_format = ToolCallFormat::kNone;  // how its template asks for tool calls
  ReasoningFormat reasoning = ReasoningFormat::kNone;  // how its output carries reasoning
  int max_model_len = 0;
  // For the sampling fields a request leaves out (config over the model's files).
  SamplingDefaults sampling_defaults;
  std::time_t created = 0;
  std::string fingerprint;  // OpenAI's system_fingerprint (model_fingerprint.h)
  std::unique_ptr<ModelMetrics> metrics;
  std::unique_ptr<GrammarCompiler> grammars;  // output grammars, compiled on request threads
  // The model's tokenizer, owned by the model `loop` runs; set at load.
  const Tokenizer* text_tokenizer = nullptr;
  int hidden_size = 0;  // the width of its embeddings
  uint64_t footprint_bytes = 0;  // counted against server.memory_budget_mb (model_loader.h)

  const std::string& name() const { return config.name; }
  const Tokenizer& tokenizer() const { return *text_tokenizer; }
};

}  // namespace tessera
