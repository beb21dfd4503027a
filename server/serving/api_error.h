#pragma once
// An error answered to a client as the OpenAI error object
// {"error": {"message", "type", "param", "code"}} with its HTTP status.
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

#include "engine/grammar/grammar.h"

namespace tessera {

// `text` cut to at most `max_bytes` (on a UTF-8 boundary, "..." added):
// what a message may echo of a client's input.
inline std::string clip_echo(std::string_view text, size_t max_bytes = 64) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end)) + "...";
}

// Longest error message sent: whatever a message quotes, an answer stays small.
constexpr size_t kMaxErrorMessageBytes = 1024;

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::string param = {}, std::string code = {})
      : std::runtime_error(clip_echo(message, kMaxErrorMessageBytes)),
        status_(status),
        type_(std::move(type)),
        param_(clip_echo(param, 256)),
        code_(std::move(code)) {}

  static ApiError invalid(const std::string& message, const std::string& param = {}) {
    return ApiError(400, "invalid_request_error", message, param);
  }

  // 405: the answer names the methods the route takes (`allow`, e.g. "GET, HEAD").
  static ApiError method_not_allowed(const std::string& allow) {
    ApiError e(405, "invalid_request_error", "use " + allow);
    e.allow_ = allow;
    return e;
  }

  // Marks an error whose refusal the model's metrics already counted.
  ApiError& counted() {
    counted_ = true;
    return *this;
  }
  bool is_counted() const { return counted_; }

  int status() const { return status_; }
  const std::string& allow() const { return allow_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

  // The answer for a generation that ended in `error`: the client's own
  // output grammar failing is a 400, anything else the server's 500.
  static bool is_client_generation_error(const std::string& error) {
    return error.rfind(grammar::kOutputGrammarErrorPrefix, 0) == 0;
  }
  static ApiError from_generation(const std::string& error) {
    return is_client_generation_error(error) ? invalid(error) : ApiError(500, "server_error", error);
  }

  nlohmann::ordered_json to_json() const {
    using J = nlohmann::ordered_json;
    return J{{"error",
             {{"message", what()},
              {"type", type_},
              {"param", param_.empty() ? J() : J(param_)},
              {"code", code_.empty() ? J() : J(code_)}}}};
  }

 private:
  int status_;
  std::string type_;
  std::string param_;
  std::string code_;
  std::string allow_;  // for 405: the Allow header
  bool counted_ = false;
};

}  // namespace tessera
