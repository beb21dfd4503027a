#include "server/serving/route_bodies.h"

namespace tessera {
namespace {

using namespace body;

constexpr int64_t kMaxTokens = 1 << 30;

Json token_ids() { return array_of(integer(0, INT32_MAX)); }

// A text, texts, token ids, or lists of token ids (completions' prompt,
// embeddings' input).
Json texts_or_token_ids(size_t max_items) {
  return {{"anyOf", Json::array({string(), non_empty(array_of(string(), max_items)), non_empty(token_ids()),
                                 non_empty(array_of(non_empty(token_ids()), max_items))})}};
}

// A body whose first field names the model.
BodySchema naming_a_model() {
  BodySchema s;
  s.field("model", string(), "a served model; may be left out when one is served");
  return s;
}

Json text_part() {
  return {{"type", "object"}, {"required", {"type", "text"}}, {"properties", {{"type", {{"const", "text"}}}, {"text", string()}}}};
}

// A chat message as check_messages reads it: a role, and text content.
Json chat_message() {
  const Json content = {{"anyOf", Json::array({string(), array_of(text_part())})}};
  return {{"type", "object"},
          {"required", {"role"}},
          {"properties", {{"role", one_of_strings({"system", "developer", "user", "assistant", "tool"})},
                          {"content", {{"anyOf", Json::array({content, {{"type", "null"}}})}}},
                          {"name", string()},
                          {"tool_call_id", string()},
                          {"tool_calls", array_of(object())}}}};
}

// An Anthropic message: text, tool_use (assistant) and tool_result (user) blocks.
Json anthropic_message() {
  const Json block = {{"type", "object"}, {"required", {"type"}},
                      {"properties", {{"type", one_of_strings({"text", "tool_use", "tool_result", "thinking", "redacted_thinking"})}}}};
  return {{"type", "object"},
          {"required", {"role", "content"}},
          {"properties", {{"role", one_of_strings({"user", "assistant"})},
                          {"content", {{"anyOf", Json::array({string(), array_of(block)})}}}}}};
}

Json function_tool() {
  return {{"type", "object"}, {"required", {"type", "function"}},
          {"properties", {{"type", {{"const", "function"}}},
                          {"function", {{"type", "object"}, {"required", {"name"}},
                                        {"properties", {{"name", string()}, {"description", string()}, {"parameters", object()}}}}}}}};
}

Json tool_choice() {
  return {{"anyOf", Json::array({one_of_strings({"none", "auto", "required"}), object()})}};
}

Json stream_options() {
  return {{"type", "object"},
          {"properties", {{"include_usage", boolean()}, {"continuous_usage_stats", boolean()}, {"include_obfuscation", boolean()}}}};
}

// Sampling, penalties, stops, structured outputs and vLLM's extensions:
// what completions and chat completions share (read_generation_request).
BodySchema generation_fields(const ApiLimits& limits) {
  BodySchema s;
  s.field("temperature", number(0.0, 2.0), "sampling temperature; 0 is greedy")
      .field("top_p", number(0.0, 1.0), "nucleus sampling mass (above 0)")
      .field("top_k", integer(-1, kMaxTokens), "vLLM: keep the k most likely tokens; -1 or 0 keeps all")
      .field("min_p", number(0.0, 1.0), "vLLM: drop tokens below this fraction of the most likely one")
      .field("presence_penalty", number(-2.0, 2.0), "")
      .field("frequency_penalty", number(-2.0, 2.0), "")
      .field("repetition_penalty", number(0.01, 10.0), "vLLM")
      .field("seed", any_integer(), "makes sampling repeatable")
      .field("logit_bias", object(), "token id (as a string) to a bias between -100 and 100")
      .field("n", integer(1, limits.max_n), "answers per prompt")
      .field("best_of", integer(1, limits.max_n), "must equal n")
      .field("stop", string_or_strings(size_t(limits.max_stop_strings)), "stop strings")
      .field("stop_token_ids", array_of(any_integer(), size_t(limits.max_stop_strings)), "vLLM")
      .field("ignore_eos", boolean(), "vLLM")
      .field("min_tokens", integer(0, kMaxTokens), "vLLM: stops wait for this many tokens")
      .field("skip_special_tokens", boolean(), "vLLM")
      .field("include_stop_str_in_output", boolean(), "vLLM")
      .field("priority", integer(-1000000, 1000000), "vLLM: with scheduler.policy priority")
      .field("response_format", object(), "text, json_object or json_schema")
      .field("structured_outputs", object(), "vLLM: one of json, regex, choice, grammar, json_object")
      .field("guided_json", {{"type", Json::array({"object", "string", "boolean"})}}, "vLLM: a JSON schema")
      .field("guided_regex", string(), "vLLM")
      .field("guided_choice", array_of(string()), "vLLM")
      .field("guided_grammar", string(), "vLLM: GBNF")
      .field("guided_decoding_backend", ignored(), "vLLM; ignored")
      .field("guided_whitespace_pattern", string(), "vLLM");
  for (const char* key : {"user", "store", "metadata", "service_tier", "prompt_cache_key", "safety_identifier", "verbosity", "prediction"}) {
    s.field(key, ignored(), "accepted; changes nothing here");
  }
  s.field("modalities", array_of(one_of_strings({"text"})), "only [\"text\"]");
  return s;
}

BodySchema completions_body(const ApiLimits& limits) {
  BodySchema s = naming_a_model();
  s.field("prompt", texts_or_token_ids(size_t(limits.max_n)), "")
      .fields_of(generation_fields(limits))
      .field("echo", boolean(), "the prompt before the completion")
      .field("logprobs", integer(0, limits.max_top_logprobs), "log-probabilities with this many alternatives")
      .field("prompt_logprobs", integer(0, limits.max_top_logprobs), "vLLM: the prompt's tokens scored")
      .field("max_tokens", integer(0, kMaxTokens), "0 scores the prompt only (with echo and logprobs, or prompt_logprobs)")
      .field("stream", boolean(), "server-sent events")
      .field("stream_options", stream_options(), "")
      .field("suffix", refused(), "not available")
      .require("prompt");
  return s;
}

BodySchema chat_completions_body(const ApiLimits& limits) {
  BodySchema s = naming_a_model();
  s.field("messages", non_empty(array_of(chat_message())), "the conversation")
      .fields_of(generation_fields(limits))
      .field("max_completion_tokens", integer(1, kMaxTokens), "")
      .field("max_tokens", integer(1, kMaxTokens), "the older name of max_completion_tokens")
      .field("logprobs", boolean(), "")
      .field("top_logprobs", integer(0, limits.max_top_logprobs), "needs logprobs")
      .field("stream", boolean(), "server-sent events")
      .field("stream_options", stream_options(), "")
      .field("prompt_logprobs", integer(0, limits.max_top_logprobs), "vLLM: the rendered prompt scored (not with stream)")
      .field("add_generation_prompt", boolean(), "")
      .field("chat_template_kwargs", object(), "variables for the chat template")
      .field("reasoning_effort", one_of_strings({"minimal", "low", "medium", "high"}), "passed to templates that read it")
      .field("functions", refused(), "use tools")
      .field("function_call", refused(), "use tool_choice")
      .fields_of(tool_fields_body())
      .field("audio", refused(), "not available")
      .require("messages");
  return s;
}

BodySchema responses_body() {
  BodySchema s = naming_a_model();
  s.field("instructions", string(), "a system message for this turn")
      .field("input", {{"anyOf", Json::array({string(), array_of(object())})}}, "text, or message and function-call items")
      .field("tools", array_of(object()), "function tools")
      .field("tool_choice", tool_choice(), "")
      .field("parallel_tool_calls", boolean(), "")
      .field("text", object(), "format: text, json_object or json_schema")
      .field("max_output_tokens", integer(1, kMaxTokens), "")
      .field("temperature", number(0.0, 2.0), "")
      .field("top_p", number(0.0, 1.0), "")
      .field("top_logprobs", integer(0, 20), "")
      .field("previous_response_id", string(), "continue a stored response")
      .field("store", boolean(), "keep this response for previous_response_id (default true)")
      .field("stream", boolean(), "server-sent events")
      .field("metadata", {{"type", "object"}, {"maxProperties", kMaxResponseMetadataKeys}}, "returned as given")
      .field("background", boolean(), "only false")
      .field("reasoning", object(), "accepted; changes nothing here")
      .field("truncation", one_of_strings({"disabled", "auto"}), "only disabled")
      .require("input");
  for (const char* key : {"user", "service_tier", "prompt_cache_key", "safety_identifier", "include", "stream_options"}) {
    s.field(key, ignored(), "accepted; changes nothing here");
  }
  return s;
}

// What /v1/messages and /v1/messages/count_tokens share.
BodySchema anthropic_conversation() {
  BodySchema s = naming_a_model();
  s.field("system", {{"anyOf", Json::array({string(), array_of(object())})}}, "")
      .field("messages", non_empty(array_of(anthropic_message())), "")
      .field("tools", array_of(object()), "")
      .field("tool_choice", object(), "auto, any, tool or none")
      .field("thinking", object(), "only {\"type\": \"disabled\"}")
      .require("messages");
  return s;
}

BodySchema messages_body() {
  BodySchema s = anthropic_conversation();
  s.field("max_tokens", integer(1, kMaxTokens), "")
      .field("temperature", number(0.0, 1.0), "")
      .field("top_p", any_number(), "")
      .field("top_k", any_integer(), "")
      .field("stop_sequences", string_or_strings(0), "")
      .field("stream", boolean(), "server-sent events")
      .field("metadata", ignored(), "accepted; changes nothing here")
      .field("service_tier", ignored(), "accepted; changes nothing here")
      .require("max_tokens");
  return s;
}

BodySchema embeddings_body(const ApiLimits&) {
  BodySchema s = naming_a_model();
  s.field("input", texts_or_token_ids(kMaxEmbeddingInputs), "")
      .field("encoding_format", one_of_strings({"float", "base64"}), "")
      .field("dimensions", integer(1, 1 << 20), "only the model's own width")
      .field("user", string(), "accepted; changes nothing here")
      .require("input");
  return s;
}

BodySchema tokenize_body() {
  BodySchema s = naming_a_model();
  s.field("prompt", string(), "a text (or send messages)")
      .field("messages", non_empty(array_of(chat_message())), "a conversation, rendered by the chat template")
      .field("add_special_tokens", boolean(), "")
      .field("add_generation_prompt", boolean(), "with messages")
      .field("tools", array_of(function_tool()), "with messages");
  return s;
}

BodySchema detokenize_body() {
  BodySchema s = naming_a_model();
  s.field("tokens", array_of(any_integer()), "token ids of the model")
      .require("tokens");
  return s;
}

}  // namespace

const BodySchema& tool_fields_body() {
  static const BodySchema fields = [] {
    BodySchema s;
    s.field("tools", array_of(function_tool()), "function tools")
        .field("tool_choice", tool_choice(), "none, auto, required, or a named function")
        .field("parallel_tool_calls", boolean(), "");
    return s;
  }();
  return fields;
}

RouteBodies::RouteBodies(const ApiLimits& limits)
    : completions(completions_body(limits)),
      chat_completions(chat_completions_body(limits)),
      responses(responses_body()),
      messages(messages_body()),
      count_tokens(anthropic_conversation()),
      embeddings(embeddings_body(limits)),
      tokenize(tokenize_body()),
      detokenize(detokenize_body()) {}

}  // namespace tessera
