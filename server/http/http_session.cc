#include "server/http/http_session.h"

#include "server/http/http_session_impl.h"

namespace tessera {

bool SessionContext::is_light(const HttpRequest& req) const {
  const std::string_view target(req.target().data(), req.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  for (const std::string& p : light_paths) {
    if (path == p) return true;
  }
  return false;
}

template class HttpSession<PlainStream>;

}  // namespace tessera
