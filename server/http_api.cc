#include "server/http_api.h"

#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "server/anthropic/messages_handler.h"
#include "server/openai/chat_handler.h"
#include "server/openai/completions_handler.h"
#include "server/openai/embeddings_handler.h"
#include "server/openai/generation_fields.h"
#include "server/openapi_document.h"
#include "server/serving/chat_prompt.h"
#include "server/serving/generation_driver.h"
#include "server/serving/tool_calls.h"
#include "server/serving/api_keys.h"
#include "server/serving/low_priority.h"

namespace tessera {
namespace {

// Bodies from this size up are parsed at low priority (a few milliseconds of work).
constexpr size_t kLowPriorityBodyBytes = 64u << 10;

// Adds `added` to the answer's headers; the rest passes through.
class WithHeaders : public HttpExchange {
 public:
  WithHeaders(HttpExchange& inner, HttpHeaders added) : inner_(inner), added_(std::move(added)) {}
  const HttpRequest& request() const override { return inner_.request(); }
  void respond(int status, const std::string& type, std::string body, const HttpHeaders& headers) override {
    inner_.respond(status, type, std::move(body), with_added(headers));
  }
  bool begin_stream(const std::string& type, const HttpHeaders& headers) override {
    return inner_.begin_stream(type, with_added(headers));
  }
  bool write_chunk(const std::string& data) override { return inner_.write_chunk(data); }
  void end_stream() override { inner_.end_stream(); }
  bool client_gone() override { return inner_.client_gone(); }
  bool peer_done_sending() const override { return inner_.peer_done_sending(); }

 private:
  HttpHeaders with_added(HttpHeaders headers) const {
    headers.insert(headers.end(), added_.begin(), added_.end());
    return headers;
  }

  HttpExchange& inner_;
  HttpHeaders added_;
};

// Adds `added` (the CORS headers) to every answer, remembering its status
// for the request log.
class LoggedExchange : public WithHeaders {
 public:
  using WithHeaders::WithHeaders;
  void respond(int status, const std::string& type, std::string body, const HttpHeaders& headers) override {
    status_ = status;
    WithHeaders::respond(status, type, std::move(body), headers);
  }
  bool begin_stream(const std::string& type, const HttpHeaders& headers) override {
    status_ = 200;
    return WithHeaders::begin_stream(type, headers);
  }
  bool write_chunk(const std::string& data) override {
    const bool ok = WithHeaders::write_chunk(data);
    if (!ok) client_left_ = true;
    return ok;
  }
  bool client_gone() override {
    if (WithHeaders::client_gone()) client_left_ = true;
    return client_left_;
  }
  int status() const { return status_; }
  bool client_left() const { return client_left_; }

 private:
  int status_ = 0;
  bool client_left_ = false;
};

std::string_view origin_of(const HttpRequest& request) {
  const auto origin = request[boost::beast::http::field::origin];
  return {origin.data(), origin.size()};
}

// The request's credentials as "Bearer KEY": its Authorization header, or
// Anthropic's x-api-key header when it has none.
std::string authorization_of(const HttpRequest& request) {
  const auto authorization = request[boost::beast::http::field::authorization];
  if (!authorization.empty()) return std::string(authorization);
  const auto key = request["x-api-key"];
  return key.empty() ? std::string() : "Bearer " + std::string(key);
}

void respond_json(HttpExchange& ex, int status, const Json& body,
                  const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  ex.respond(status, "application/json", json_text(body), headers);
}

}  // namespace

void HttpApi::handle(HttpExchange& raw) {
  ++in_flight_;
  struct Leave {
    std::atomic<int>& n;
    ~Leave() { --n; }
  } leave{in_flight_};
  const auto t0 = std::chrono::steady_clock::now();
  LoggedExchange ex(raw, cors_.answer_headers(origin_of(raw.request())));
  try {
    route(ex);
  } catch (const ApiError& e) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (e.status() == 429 || e.status() == 503) headers.emplace_back("Retry-After", "1");
    if (e.status() == 401) headers.emplace_back("WWW-Authenticate", "Bearer");
    if (!e.allow().empty()) headers.emplace_back("Allow", e.allow());
    const std::string target(raw.request().target());
    const bool anthropic = is_anthropic_route(target.substr(0, target.find('?')));
    if (ex.status() == 0) respond_json(ex, e.status(), anthropic ? anthropic_error_json(e) : e.to_json(), headers);
  } catch (const std::exception& e) {
    // A bug, not a bad request: the client gets a 500 and the log says what.
    spdlog::error("request method={} path={} failed: {}", std::string(raw.request().method_string()),
                  std::string(raw.request().target()), e.what());
    if (ex.status() == 0) respond_json(ex, 500, ApiError(500, "server_error", "internal error").to_json());
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const auto& req = raw.request();
  if (req.target() != "/health" && req.target() != "/metrics") {
    spdlog::info("request method={} path={} status={} duration_ms={:.1f}{}", std::string(req.method_string()),
                 std::string(req.target()), ex.status(), ms, ex.client_left() ? " client_disconnected=true" : "");
  }
}

void HttpApi::route(HttpExchange& ex) {
  const auto& req = ex.request();
  const std::string target(req.target());
  const std::string path = target.substr(0, target.find('?'));
  // HEAD is GET without the body (the session leaves it out).
  const bool get = req.method() == boost::beast::http::verb::get || req.method() == boost::beast::http::verb::head;
  const bool post = req.method() == boost::beast::http::verb::post;
  if (path == "/health") return get ? health(ex) : throw ApiError::method_not_allowed("GET, HEAD");
  if (path == "/metrics") return get ? metrics(ex) : throw ApiError::method_not_allowed("GET, HEAD");
  // The API's description is public, as health is: it holds no model data.
  if (path == "/openapi.json") return get ? openapi(ex) : throw ApiError::method_not_allowed("GET, HEAD");
  // A browser's preflight carries no credentials: it is answered before the key check.
  if (req.method() == boost::beast::http::verb::options && cors_.allows(origin_of(req))) {
    const auto asked = req[boost::beast::http::field::access_control_request_headers];
    return ex.respond(204, "text/plain", "", cors_.preflight_headers(origin_of(req), std::string_view(asked.data(), asked.size())));
  }
  // The admin route has its own key, checked instead of the API keys.
  if (path == "/admin/reload" && !admin_key_.empty() && reload_) return admin_reload(ex);
  if (!api_key_accepted(authorization_of(req), api_keys_)) {
    throw ApiError(401, "invalid_request_error", "a valid API key is required (Authorization: Bearer KEY, or x-api-key: KEY)",
                   "", "invalid_api_key");
  }
  if (path == "/admin/collectives") {
    if (!get) throw ApiError::method_not_allowed("GET, HEAD");
    if (!collectives_) throw ApiError(404, "invalid_request_error", "this server runs no parallel groups", "", "not_found");
    return respond_json(ex, 200, collectives_());
  }
  if (path.rfind("/v1/responses/", 0) == 0) {
    api_.registry.require_serving();
    const std::string id = path.substr(14);
    if (get) return responses_->get(id, authorization_of(req), ex);
    if (req.method() == boost::beast::http::verb::delete_) return responses_->remove(id, authorization_of(req), ex);
    throw ApiError::method_not_allowed("GET, HEAD, DELETE");
  }
  if (path == "/tokenizer_info" || path == "/tokenizer.json") {
    if (!get) throw ApiError::method_not_allowed("GET, HEAD");
    api_.registry.require_serving();
    const ModelHandle held_model = api_.model(query_parameter(target, "model"));
    const ServedModel& model = *held_model;
    return ex.respond(200, "application/json", tokenizer_files_.text(model, path.substr(1)));
  }
  if (path == "/v1/models" || path.rfind("/v1/models/", 0) == 0) {
    if (!get) throw ApiError::method_not_allowed("GET, HEAD");
    return list_models(ex, path.size() > 11 ? path.substr(11) : "");
  }
  if (std::none_of(post_routes_.begin(), post_routes_.end(), [&](const PostRoute& r) { return r.path == path; })) throw ApiError(404, "invalid_request_error", "no route " + clip_echo(path), "", "not_found");
  if (!post) throw ApiError::method_not_allowed("POST");
  api_.registry.require_serving();
  Json body;
  if (req.body().size() < kLowPriorityBodyBytes) {
    body = parse_bounded_json(req.body(), api_.limits.json);
  } else {
    // Parsing a large body is a client's long work: not at the model loops' priority.
    run_at_low_priority([&] { body = parse_bounded_json(req.body(), api_.limits.json); });
  }
  try {
    // A sleeping model loads before the handler runs, and the answer says
    // how long that took (the handler then finds it loaded and held).
    LoadWait waited;
    const ModelHandle woken = wake_model(body, &waited);
    if (waited.seconds > 0.0) {
      char seconds[32];
      std::snprintf(seconds, sizeof(seconds), "%.3f", waited.seconds);
      WithHeaders told(ex, {{"X-Model-Load-Seconds", seconds}});
      return dispatch(path, body, told);
    }
    return dispatch(path, body, ex);
  } catch (const ApiError& e) {
    const auto model = body.is_object() ? body.find("model") : body.end();
    api_.count_invalid(e, model != body.end() && model->is_string() ? model->get<std::string>() : "");
    throw;
  }
}

ModelHandle HttpApi::wake_model(const Json& body, LoadWait* waited) const {
  const auto model = body.is_object() ? body.find("model") : body.end();
  if (model != body.end() && !model->is_string()) return nullptr;  // the handler says what is wrong
  std::string name = model != body.end() ? model->get<std::string>() : "";
  if (name.empty()) {
    const std::vector<std::string> all = api_.registry.names();
    if (all.size() != 1) return nullptr;  // the handler asks for a name
    name = all.front();
  }
  return api_.registry.asleep(name) ? api_.model(name, waited) : nullptr;
}

void HttpApi::dispatch(const std::string& path, const Json& body, HttpExchange& ex) {
  const HttpRequest& req = ex.request();
  {
    if (path == "/v1/completions") return handle_completions(api_, body, ex);
    if (path == "/v1/chat/completions") return handle_chat_completions(api_, body, ex);
    if (path == "/v1/responses") return responses_->create(api_, body, authorization_of(req), ex);
    if (path == "/v1/messages") return handle_messages(api_, body, ex);
    if (path == "/v1/messages/count_tokens") return handle_count_tokens(api_, body, ex);
    if (path == "/v1/embeddings") return handle_embeddings(api_, body, ex);
    if (path == "/tokenize") return tokenize(body, ex);
    return detokenize(body, ex);
  }
}

void HttpApi::admin_reload(HttpExchange& ex) {
  if (ex.request().method() != boost::beast::http::verb::post) throw ApiError::method_not_allowed("POST");
  if (!api_key_accepted(authorization_of(ex.request()), {admin_key_})) {
    throw ApiError(401, "invalid_request_error", "the admin key is required (Authorization: Bearer KEY)", "", "invalid_api_key");
  }
  const ReloadOutcome outcome = reload_();
  if (!outcome.applied) throw ApiError(400, "invalid_request_error", "reload " + outcome.text, "", "reload_failed");
  respond_json(ex, 200, {{"status", "applied"}, {"message", "reload " + outcome.text}});
}

void HttpApi::health(HttpExchange& ex) {
  const bool ok = api_.registry.healthy();
  respond_json(ex, ok ? 200 : 503, {{"status", ok ? "ok" : api_.registry.state_name()}});
}

void HttpApi::openapi(HttpExchange& ex) {
  std::vector<std::string> models = api_.registry.names();
  std::string text;
  {
    // Built again only when a reload changes the served names: a client
    // asking for it in a loop costs a copy, not a document (~3 ms).
    std::lock_guard lock(openapi_mutex_);
    if (openapi_text_.empty() || models != openapi_models_) {
      const OpenApiContext context{api_.bodies, models, !api_keys_.empty(), !admin_key_.empty() && reload_, TESSERA_VERSION};
      openapi_text_ = json_text(openapi_document(context));
      openapi_models_ = std::move(models);
    }
    text = openapi_text_;
  }
  ex.respond(200, "application/json", std::move(text), {});
}

void HttpApi::metrics(HttpExchange& ex) {
  api_.registry.refresh_metrics();
  const std::string text = prometheus::TextSerializer().Serialize(api_.registry.metrics().Collect());
  ex.respond(200, "text/plain; version=0.0.4", text, {});
}

void HttpApi::list_models(HttpExchange& ex, const std::string& only) {
  Json data = Json::array();
  if (api_.registry.state() != ServingState::kLoading) {
    for (const ModelStatus& m : api_.registry.statuses()) {
      if (!only.empty() && m.name != only) continue;
      // "root" names the model, never where its file lives on this host.
      // status.value: loaded, loading, or sleeping (loads on the next request).
      Json entry = {{"id", m.name}, {"object", "model"}, {"created", m.model ? int64_t(m.model->created) : int64_t(0)},
                    {"owned_by", "tessera"}, {"root", m.name}, {"status", {{"value", model_state_name(m.state)}}}};
      if (m.model) entry["max_model_len"] = m.model->max_model_len;
      data.push_back(std::move(entry));
    }
  }
  if (!only.empty()) {
    if (data.empty()) throw ApiError(404, "invalid_request_error", "the model '" + clip_echo(only) + "' does not exist", "model", "model_not_found");
    return respond_json(ex, 200, data[0]);
  }
  respond_json(ex, 200, {{"object", "list"}, {"data", data}});
}

void HttpApi::tokenize(const Json& body, HttpExchange& ex) {
  RequestFields f(body, api_.bodies.tokenize);
  const ModelHandle held_model = api_.model(f.string("model").value_or(""));
  const ServedModel& model = *held_model;
  const std::optional<bool> add_special = f.boolean("add_special_tokens");
  const Json* messages = f.raw("messages");
  const std::optional<std::string> prompt = f.string("prompt");
  const std::optional<bool> add_generation_prompt = f.boolean("add_generation_prompt");
  const Json* tools = f.raw("tools");
  f.finish();
  if (messages && prompt) throw ApiError::invalid("give either 'prompt' or 'messages'", "prompt");
  std::vector<int32_t> ids;
  if (messages) {
    if (tools) check_tools(*tools);
    ids = chat_prompt_tokens(model, *messages, add_generation_prompt.value_or(true), Json(), add_special.value_or(false),
                             tools ? *tools : Json());
  } else {
    if (!prompt) throw ApiError::invalid("'prompt' or 'messages' is required", "prompt");
    for (const char* key : {"add_generation_prompt", "tools"}) {
      if (f.has(key)) throw ApiError::invalid("'" + std::string(key) + "' goes with 'messages'", key);
    }
    // A text that can never fit the model costs no tokenizer time.
    check_prompt_bytes(model, prompt->size(), "prompt");
    ids = model.tokenizer().encode(*prompt, {.add_special = add_special.value_or(true), .parse_special = true});
  }
  respond_json(ex, 200, {{"count", ids.size()}, {"max_model_len", model.max_model_len}, {"tokens", ids}});
}

void HttpApi::detokenize(const Json& body, HttpExchange& ex) {
  RequestFields f(body, api_.bodies.detokenize);
  const ModelHandle held_model = api_.model(f.string("model").value_or(""));
  const ServedModel& model = *held_model;
  const Json* tokens = f.raw("tokens");
  f.finish();
  if (!tokens) throw ApiError::invalid("'tokens' is required", "tokens");
  const std::vector<int32_t> ids = read_token_ids(*tokens, model, "tokens");
  respond_json(ex, 200, {{"prompt", model.tokenizer().decode(ids)}});
}

}  // namespace tessera
