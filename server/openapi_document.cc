#include "server/openapi_document.h"

#include <cctype>

namespace tessera {

Json openapi_answer_schemas();  // openapi_answers.cc

namespace {

Json ref(const std::string& name) { return {{"$ref", "#/components/schemas/" + name}}; }

Json json_answer(const std::string& description, const Json& schema) {
  return {{"description", description}, {"content", {{"application/json", {{"schema", schema}}}}}};
}

// The errors any route with `statuses` can give, in the OpenAI or Anthropic shape.
Json with_errors(Json responses, std::initializer_list<int> statuses, bool anthropic) {
  const Json error = ref(anthropic ? "AnthropicError" : "Error");
  for (int status : statuses) {
    const char* why = status == 400   ? "the request is invalid; the error names the field"
                      : status == 401 ? "an API key is required"
                      : status == 404 ? "no such model or object"
                      : status == 405 ? "another method is expected (Allow names it)"
                      : status == 413 ? "the body is over the server's limit"
                      : status == 429 ? "the model's queue is full; retry (Retry-After)"
                                      : "loading, draining or out of capacity; retry (Retry-After)";
    responses[std::to_string(status)] = json_answer(why, error);
  }
  return responses;
}

Json model_query() {
  return {{"name", "model"}, {"in", "query"}, {"required", false}, {"schema", {{"type", "string"}}},
          {"description", "a served model; may be left out when one is served"}};
}

// The body schema, with `model` narrowed to the served names.
Json request_body(const BodySchema& body, const std::vector<std::string>& models) {
  Json schema = body.document();
  if (!models.empty() && schema["properties"].contains("model")) {
    Json names = Json::array();
    for (const auto& m : models) names.push_back(m);
    names.push_back(nullptr);
    schema["properties"]["model"]["enum"] = std::move(names);
  }
  return {{"required", true}, {"content", {{"application/json", {{"schema", std::move(schema)}}}}}};
}

Json post_operation(const PostRoute& route, const OpenApiContext& c) {
  Json ok = json_answer("the answer", ref(route.answer));
  // With `stream: true`: server-sent events, each data line one JSON chunk
  // (or OpenAI's closing [DONE]).
  if (route.streams) {
    Json event = {{"type", "object"}, {"required", Json::array({"data"})}};
    for (const char* field : {"event", "data", "id"}) event["properties"][field] = {{"type", "string"}};
    ok["content"]["text/event-stream"]["schema"] = std::move(event);
  }
  Json responses = with_errors({{"200", ok}}, {400, 404, 413, 429, 503}, route.anthropic);
  if (c.api_keys) responses = with_errors(responses, {401}, route.anthropic);
  return {{"summary", route.summary}, {"requestBody", request_body(*route.body, c.models)}, {"responses", std::move(responses)}};
}

Json get_operation(const std::string& summary, Json ok, std::initializer_list<int> errors, const OpenApiContext& c,
                   Json parameters = Json::array()) {
  Json responses = with_errors({{"200", std::move(ok)}}, errors, false);
  if (c.api_keys) responses = with_errors(responses, {401}, false);
  Json op = {{"summary", summary}, {"responses", std::move(responses)}};
  if (!parameters.empty()) op["parameters"] = std::move(parameters);
  return op;
}

Json id_parameter(const char* name, const char* description) {
  return {{"name", name}, {"in", "path"}, {"required", true}, {"schema", {{"type", "string"}}}, {"description", description}};
}

Json get_paths(const OpenApiContext& c) {
  Json paths = Json::object();
  // Health and metrics are open to probes without a key.
  paths["/health"]["get"] = {{"summary", "whether the engine serves"}, {"security", Json::array()},
                             {"responses", {{"200", json_answer("serving", ref("Health"))},
                                            {"503", json_answer("loading, draining or failed", ref("Health"))}}}};
  paths["/metrics"]["get"] = {{"summary", "Prometheus metrics"}, {"security", Json::array()},
                              {"responses", {{"200", {{"description", "text exposition format"},
                                                      {"content", {{"text/plain", {{"schema", {{"type", "string"}}}}}}}}}}}};
  paths["/openapi.json"]["get"] = {{"summary", "this document"}, {"security", Json::array()},
                                   {"responses", {{"200", json_answer("OpenAPI 3.1", {{"type", "object"}})}}}};
  paths["/v1/models"]["get"] = get_operation("the served models", json_answer("the list", ref("ModelList")), {503}, c);
  paths["/v1/models/{model}"]["get"] =
      get_operation("one served model", json_answer("the model", ref("Model")), {404, 503}, c,
                    Json::array({id_parameter("model", "its name")}));
  paths["/v1/responses/{response_id}"]["get"] =
      get_operation("a stored response (only with the API key that made it)", json_answer("the response", ref("Response")), {404, 503}, c,
                    Json::array({id_parameter("response_id", "a response's id")}));
  paths["/v1/responses/{response_id}"]["delete"] =
      get_operation("forget a stored response", json_answer("deleted", ref("DeletedResponse")), {404, 503}, c,
                    Json::array({id_parameter("response_id", "a response's id")}));
  paths["/tokenizer_info"]["get"] = get_operation("vLLM's tokenizer description", json_answer("its fields", {{"type", "object"}}),
                                                  {400, 404, 503}, c, Json::array({model_query()}));
  paths["/tokenizer.json"]["get"] = get_operation("the model's tokenizer as a Hugging Face tokenizer.json",
                                                  json_answer("the file", {{"type", "object"}}), {400, 404, 503}, c,
                                                  Json::array({model_query()}));
  paths["/admin/collectives"]["get"] =
      get_operation("the flight recorders of this process's parallel groups", json_answer("by group", {{"type", "object"}}), {404}, c);
  return paths;
}

// "get /v1/models/{model}" -> "get_v1_models_model": stable names for
// generated clients and for links.
std::string operation_id(const std::string& method, const std::string& path) {
  std::string id = method;
  for (char ch : path) {
    const bool word = std::isalnum(static_cast<unsigned char>(ch));
    if (word) id += ch;
    else if (id.back() != '_') id += '_';
  }
  while (id.back() == '_') id.pop_back();
  return id;
}

// A stored response can be read and deleted by the id its creation returns.
void link_stored_responses(Json& paths) {
  const Json by_id = {{"response_id", "$response.body#/id"}};
  paths["/v1/responses"]["post"]["responses"]["200"]["links"] = {
      {"GetResponse", {{"operationId", operation_id("get", "/v1/responses/{response_id}")}, {"parameters", by_id}}},
      {"DeleteResponse", {{"operationId", operation_id("delete", "/v1/responses/{response_id}")}, {"parameters", by_id}}}};
}

}  // namespace

std::vector<PostRoute> post_routes(const RouteBodies& b) {
  return {
      {"/v1/completions", &b.completions, "OpenAI completions (and prompt scoring)", "Completion", true, false},
      {"/v1/chat/completions", &b.chat_completions, "OpenAI chat completions", "ChatCompletion", true, false},
      {"/v1/responses", &b.responses, "OpenAI Responses", "Response", true, false},
      {"/v1/messages", &b.messages, "Anthropic Messages", "Message", true, true},
      {"/v1/messages/count_tokens", &b.count_tokens, "Anthropic token count", "TokenCount", false, true},
      {"/v1/embeddings", &b.embeddings, "OpenAI embeddings", "Embeddings", false, false},
      {"/tokenize", &b.tokenize, "a text or conversation as the model's token ids", "Tokens", false, false},
      {"/detokenize", &b.detokenize, "token ids as text", "Text", false, false},
  };
}

Json openapi_document(const OpenApiContext& c) {
  Json paths = get_paths(c);
  for (const PostRoute& route : post_routes(c.bodies)) paths[route.path]["post"] = post_operation(route, c);
  if (c.admin_reload) {
    paths["/admin/reload"]["post"] = {
        {"summary", "re-read the config and apply its model list (the admin key, not an API key)"},
        {"security", Json::array({{{"bearer", Json::array()}}})},
        {"responses", with_errors({{"200", json_answer("applied", {{"type", "object"}})}}, {400, 401}, false)}};
  }
  for (auto& [path, methods] : paths.items()) {
    for (auto& [method, op] : methods.items()) op["operationId"] = operation_id(method, path);
  }
  link_stored_responses(paths);
  Json components = {{"schemas", openapi_answer_schemas()}};
  components["securitySchemes"] = {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}},
                                   {"x-api-key", {{"type", "apiKey"}, {"in", "header"}, {"name", "x-api-key"}}}};
  Json doc = {{"openapi", "3.1.0"},
              {"info", {{"title", "Tessera"}, {"version", c.version}, {"description", "OpenAI- and Anthropic-compatible inference server"}}},
              {"paths", std::move(paths)},
              {"components", std::move(components)}};
  if (c.api_keys) doc["security"] = Json::array({{{"bearer", Json::array()}}, {{"x-api-key", Json::array()}}});
  return doc;
}

}  // namespace tessera
