#pragma once
// An error answered to a client as the OpenAI error object
// {"error": {"message", "type", "param", "code"}} with its HTTP status.
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace tessera {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::string param = {}, std::string code = {})
      : std::runtime_error(message), status_(status), type_(std::move(type)), param_(std::move(param)), code_(std::move(code)) {}

  static ApiError invalid(const std::string& message, const std::string& param = {}) {
    return ApiError(400, "invalid_request_error", message, param);
  }

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

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
};

}  // namespace tessera
