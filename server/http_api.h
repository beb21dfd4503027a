#pragma once
// The daemon's HTTP surface: routes to the OpenAI (chat, completions,
// responses, embeddings) and Anthropic handlers, /tokenize,
// /detokenize, /tokenizer_info and /tokenizer.json, /health, /metrics,
// /openapi.json (every route, bodies as the handlers read them),
// /admin/collectives and /admin/reload; refuses work with 503 while models load
// or the daemon drains; asks for an API key when keys are configured (health
// and metrics exempt); logs one line per request.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/http/cors_policy.h"
#include "server/http/http_server.h"
#include "server/openapi_document.h"
#include "server/responses/responses_handler.h"
#include "server/serving/api_context.h"
#include "server/tokenizer_files.h"

namespace tessera {

class HttpApi {
 public:
  HttpApi(ModelRegistry& registry, const ApiLimits& limits, std::vector<std::string> api_keys = {})
      : api_{registry, limits}, api_keys_(std::move(api_keys)) {}

  void handle(HttpExchange& exchange);
  // What GET /admin/collectives answers (the flight recorders of this
  // process's parallel groups); unset: 404.
  void set_collectives_source(std::function<Json()> source) { collectives_ = std::move(source); }
  // POST /admin/reload runs `reload` (true: applied; the text says what was
  // done or why nothing changed) for a request bearing `admin_key`; with no
  // key set the route does not exist. API keys do not open it.
  struct ReloadOutcome {
    bool applied = false;
    std::string text;
  };
  void set_reload(std::function<ReloadOutcome()> reload, std::string admin_key) {
    reload_ = std::move(reload);
    admin_key_ = std::move(admin_key);
  }
  // Which browser origins may call the API (none unless set).
  void set_cors_policy(CorsPolicy cors) { cors_ = std::move(cors); }
  // How many Responses answers are kept, and for how long (replaces the defaults).
  void set_response_store_limits(const ResponseStoreLimits& limits) { responses_ = std::make_unique<ResponsesApi>(limits); }
  // Requests being served right now (generation or not).
  int in_flight() const { return in_flight_.load(); }

 private:
  void route(HttpExchange& exchange);
  // The POST routes, once the body is parsed.
  void dispatch(const std::string& path, const Json& body, HttpExchange& exchange);
  // Loads the model `body` names if it is not loaded (null otherwise).
  ModelHandle wake_model(const Json& body, LoadWait* waited) const;
  void health(HttpExchange& exchange);
  void metrics(HttpExchange& exchange);
  void openapi(HttpExchange& exchange);
  void list_models(HttpExchange& exchange, const std::string& only);
  void tokenize(const Json& body, HttpExchange& exchange);
  void detokenize(const Json& body, HttpExchange& exchange);
  void admin_reload(HttpExchange& exchange);

  ApiContext api_;
  const std::vector<PostRoute> post_routes_ = post_routes(api_.bodies);  // after api_, whose bodies they name
  std::vector<std::string> api_keys_;
  CorsPolicy cors_;
  std::unique_ptr<ResponsesApi> responses_ = std::make_unique<ResponsesApi>(ResponseStoreLimits{});
  std::function<Json()> collectives_;
  std::function<ReloadOutcome()> reload_;
  std::string admin_key_;
  TokenizerFiles tokenizer_files_;
  // The last /openapi.json text, and the served names it was built for.
  std::mutex openapi_mutex_;
  std::vector<std::string> openapi_models_;
  std::string openapi_text_;
  std::atomic<int> in_flight_{0};
};

}  // namespace tessera
