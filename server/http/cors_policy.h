#pragma once
// Cross-origin requests from browser clients (CORS): which `Origin`s may call
// the API (server.allowed_origins; none by default, so browsers keep their
// same-origin rule), the headers an allowed origin's answers carry, and the
// answer to a browser's preflight `OPTIONS`.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

class CorsPolicy {
 public:
  CorsPolicy() = default;
  // Exact origins ("https://app.example.com"), or "*" for any.
  explicit CorsPolicy(std::vector<std::string> allowed_origins) : allowed_(std::move(allowed_origins)) {}

  bool allows(std::string_view origin) const;
  // Headers for an answer to a request from `origin`; none when it is not allowed.
  HttpHeaders answer_headers(std::string_view origin) const;
  // The extra headers of a 204 answer to a preflight from an allowed origin,
  // granting the headers the browser asked for.
  HttpHeaders preflight_headers(std::string_view origin, std::string_view requested_headers) const;

 private:
  bool any() const;
  std::vector<std::string> allowed_;
};

}  // namespace tessera
