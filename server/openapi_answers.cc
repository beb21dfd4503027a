#include "server/openapi_document.h"

// The schemas of the answers, by name (components/schemas). Fields a client
// reads are required; anything else may come as well.
namespace tessera {
namespace {

Json type(const char* t) { return {{"type", t}}; }
Json nullable(const char* t) { return {{"type", Json::array({t, "null"})}}; }
Json ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }
Json array_of(Json items) { return {{"type", "array"}, {"items", std::move(items)}}; }

Json object(Json properties, Json required) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

Json openai_error() {
  return object({{"error", object({{"message", type("string")}, {"type", type("string")}, {"param", nullable("string")},
                                   {"code", nullable("string")}},
                                  {"message", "type"})}},
                {"error"});
}

Json anthropic_error() {
  return object({{"type", {{"const", "error"}}}, {"error", object({{"type", type("string")}, {"message", type("string")}}, {"type", "message"})}},
                {"type", "error"});
}

Json usage() {
  return object({{"prompt_tokens", type("integer")}, {"completion_tokens", type("integer")}, {"total_tokens", type("integer")},
                 {"prompt_tokens_details", object({{"cached_tokens", type("integer")}}, Json::array())}},
                {"prompt_tokens", "completion_tokens", "total_tokens"});
}

Json completion() {
  const Json choice = object({{"index", type("integer")}, {"text", type("string")}, {"logprobs", nullable("object")},
                              {"finish_reason", nullable("string")}},
                             {"index", "text", "finish_reason"});
  return object({{"id", type("string")}, {"object", {{"const", "text_completion"}}}, {"created", type("integer")},
                 {"model", type("string")}, {"choices", array_of(choice)}, {"usage", ref("Usage")}},
                {"id", "object", "created", "model", "choices", "usage"});
}

Json chat_completion() {
  const Json tool_call = object({{"id", type("string")}, {"type", {{"const", "function"}}},
                                 {"function", object({{"name", type("string")}, {"arguments", type("string")}}, {"name", "arguments"})}},
                                {"id", "type", "function"});
  const Json message = object({{"role", {{"const", "assistant"}}}, {"content", nullable("string")}, {"tool_calls", array_of(tool_call)},
                               {"reasoning_content", nullable("string")}, {"reasoning", nullable("string")}},
                              {"role", "content"});
  const Json choice = object({{"index", type("integer")}, {"message", message}, {"logprobs", nullable("object")},
                              {"finish_reason", nullable("string")}},
                             {"index", "message", "finish_reason"});
  return object({{"id", type("string")}, {"object", {{"const", "chat.completion"}}}, {"created", type("integer")},
                 {"model", type("string")}, {"system_fingerprint", nullable("string")}, {"choices", array_of(choice)},
                 {"usage", ref("Usage")}, {"prompt_logprobs", nullable("array")}},
                {"id", "object", "created", "model", "choices", "usage"});
}

Json response() {
  return object({{"id", type("string")}, {"object", {{"const", "response"}}}, {"created_at", type("integer")}, {"status", type("string")},
                 {"model", type("string")}, {"output", array_of(type("object"))}, {"usage", nullable("object")}},
                {"id", "object", "created_at", "status", "model", "output"});
}

Json anthropic_message() {
  const Json block = object({{"type", type("string")}}, {"type"});
  return object({{"id", type("string")}, {"type", {{"const", "message"}}}, {"role", {{"const", "assistant"}}},
                 {"content", array_of(block)}, {"model", type("string")}, {"stop_reason", nullable("string")},
                 {"stop_sequence", nullable("string")},
                 {"usage", object({{"input_tokens", type("integer")}, {"output_tokens", type("integer")}}, {"input_tokens", "output_tokens"})}},
                {"id", "type", "role", "content", "model", "stop_reason", "usage"});
}

Json embeddings() {
  const Json vector = {{"anyOf", Json::array({array_of(type("number")), type("string")})}};
  const Json item = object({{"object", {{"const", "embedding"}}}, {"index", type("integer")}, {"embedding", vector}},
                           {"object", "index", "embedding"});
  return object({{"object", {{"const", "list"}}}, {"data", array_of(item)}, {"model", type("string")},
                 {"usage", object({{"prompt_tokens", type("integer")}, {"total_tokens", type("integer")}}, {"prompt_tokens", "total_tokens"})}},
                {"object", "data", "model", "usage"});
}

Json model() {
  return object({{"id", type("string")}, {"object", {{"const", "model"}}}, {"created", type("integer")}, {"owned_by", type("string")},
                 {"max_model_len", type("integer")}},
                {"id", "object", "created", "owned_by"});
}

}  // namespace

Json openapi_answer_schemas() {
  return {
      {"Error", openai_error()},
      {"AnthropicError", anthropic_error()},
      {"Usage", usage()},
      {"Completion", completion()},
      {"ChatCompletion", chat_completion()},
      {"Response", response()},
      {"DeletedResponse", object({{"id", type("string")}, {"object", {{"const", "response"}}}, {"deleted", {{"const", true}}}},
                                 {"id", "object", "deleted"})},
      {"Message", anthropic_message()},
      {"TokenCount", object({{"input_tokens", type("integer")}}, {"input_tokens"})},
      {"Embeddings", embeddings()},
      {"Tokens", object({{"count", type("integer")}, {"max_model_len", type("integer")}, {"tokens", array_of(type("integer"))}},
                        {"count", "max_model_len", "tokens"})},
      {"Text", object({{"prompt", type("string")}}, {"prompt"})},
      {"Model", model()},
      {"ModelList", object({{"object", {{"const", "list"}}}, {"data", array_of(ref("Model"))}}, {"object", "data"})},
      {"Health", object({{"status", type("string")}}, {"status"})},
  };
}

}  // namespace tessera
