#include "server/http/cors_policy.h"

#include <algorithm>

namespace tessera {
namespace {

// Header names a preflight may ask for and get: letters, digits, '-' and ','
// lists of them. Anything else is left out of the grant, never echoed.
bool plain_header_list(std::string_view s) {
  return s.size() <= 1024 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == ',' || c == ' ';
         });
}

}  // namespace

bool CorsPolicy::any() const { return std::find(allowed_.begin(), allowed_.end(), "*") != allowed_.end(); }

bool CorsPolicy::allows(std::string_view origin) const {
  if (origin.empty()) return false;
  return any() || std::find(allowed_.begin(), allowed_.end(), origin) != allowed_.end();
}

HttpHeaders CorsPolicy::answer_headers(std::string_view origin) const {
  if (!allows(origin)) return {};
  // A listed origin is echoed, so caches must keep answers apart by Origin.
  if (any()) return {{"Access-Control-Allow-Origin", "*"}};
  return {{"Access-Control-Allow-Origin", std::string(origin)}, {"Vary", "Origin"}};
}

HttpHeaders CorsPolicy::preflight_headers(std::string_view origin, std::string_view requested_headers) const {
  HttpHeaders h = answer_headers(origin);
  if (h.empty()) return h;
  h.emplace_back("Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS");
  h.emplace_back("Access-Control-Allow-Headers", plain_header_list(requested_headers) && !requested_headers.empty()
                                                     ? std::string(requested_headers)
                                                     : std::string("Authorization, Content-Type, X-Api-Key"));
  h.emplace_back("Access-Control-Max-Age", "600");
  return h;
}

}  // namespace tessera
