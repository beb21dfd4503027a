#include "server/serving/control_text_guard.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "server/serving/api_error.h"

namespace tessera {
namespace {

using Json = nlohmann::ordered_json;

[[noreturn]] void refuse(const std::string& where) {
  throw ApiError::invalid("'" + where + "' holds control-token text; only message content may hold it (as plain text)", where);
}

}  // namespace

void refuse_control_text(const Json& value, const std::string& param, const ControlTextTest& is_control) {
  // Paths are built only for the value that fails: the walk keeps each
  // value's parent index, and the path is rebuilt from them on a refusal.
  constexpr size_t kRoot = SIZE_MAX;
  struct Visit {
    const Json* value;
    size_t parent;       // index into `seen`, or kRoot
    std::string_view key;
    size_t index;        // the position in an array parent
  };
  std::vector<Visit> seen{{&value, kRoot, {}, 0}};
  auto path_of = [&](size_t at) {
    std::vector<std::string> parts;
    for (size_t i = at; seen[i].parent != kRoot; i = seen[i].parent) {
      const Json& parent = *seen[seen[i].parent].value;
      parts.push_back(parent.is_array() ? "[" + std::to_string(seen[i].index) + "]" : "." + std::string(seen[i].key));
    }
    std::string path = param;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) path += *it;
    return path;
  };
  for (size_t at = 0; at < seen.size(); ++at) {
    const Json& v = *seen[at].value;
    if (v.is_string() && is_control(v.get_ref<const std::string&>())) refuse(path_of(at));
    if (v.is_object()) {
      for (auto it = v.begin(); it != v.end(); ++it) {
        seen.push_back({&it.value(), at, it.key(), 0});
        if (is_control(it.key())) refuse(path_of(seen.size() - 1));
      }
    } else if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i) seen.push_back({&v[i], at, {}, i});
    }
  }
}

void refuse_control_text_outside_content(const Json& messages, const ControlTextTest& is_control) {
  if (!messages.is_array()) return;
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    if (!m.is_object()) continue;
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (it.key() == "content") continue;
      refuse_control_text(it.value(), "messages[" + std::to_string(i) + "]." + it.key(), is_control);
    }
  }
}

void refuse_reserved_template_kwargs(const Json& kwargs) {
  if (!kwargs.is_object()) return;
  for (const char* key : {"messages", "tools", "add_generation_prompt", "bos_token", "eos_token"}) {
    if (kwargs.contains(key)) {
      throw ApiError::invalid(std::string("'chat_template_kwargs' may not set '") + key + "'; it is the request's own field",
                              "chat_template_kwargs");
    }
  }
}

}  // namespace tessera
