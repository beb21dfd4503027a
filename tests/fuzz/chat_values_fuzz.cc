// libFuzzer target: what a client sends as a conversation (tool-call
// arguments, however deep; chat_template_kwargs values, read as the body's
// parser reads them) is read into template values and rendered, or refused
// with ApiError or TemplateError: never a crash or an unbounded recursion.
// Driven to depth: the first byte wraps the arguments in that many times
// 256 arrays.
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/chat/chat_template.h"
#include "server/serving/control_text_guard.h"
#include "server/serving/tool_calls.h"
#include "server/serving/api_error.h"
#include "server/serving/bounded_json.h"

namespace {

using Json = nlohmann::ordered_json;

// The text wrapped in `depth` arrays: JSON deeper than any limit.
std::string deepened(const std::string& text, size_t depth) { return std::string(depth, '[') + text + std::string(depth, ']'); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t depth = size_t(data[0]) * 256;
  static const tessera::ChatTemplate tmpl(
      "{% for m in messages %}{{ m.role }}: {{ m.content }}{% if m.tool_calls %}{{ m.tool_calls | tojson }}{% endif %}"
      "{% endfor %}{% if extra %}{{ extra | tojson }}{% endif %}");
  // As a body would be: within the server's caps.
  tessera::BoundedJsonResult kwargs = tessera::try_parse_bounded_json(body, tessera::JsonLimits{});
  Json messages = Json::array({{{"role", "user"}, {"content", "hi"}},
                               {{"role", "assistant"},
                                {"content", nullptr},
                                {"tool_calls", Json::array({{{"id", "c"}, {"type", "function"},
                                                             {"function", {{"name", "f"}, {"arguments", deepened(body, depth)}}}}})}}});
  try {
    tessera::ChatTemplateInput in;
    in.messages = tessera::tool_arguments_as_objects(messages);
    tessera::refuse_control_text_outside_content(in.messages, [](std::string_view t) { return t.find("<|") != t.npos; });
    if (kwargs.ok()) in.extra = {{"extra", std::move(kwargs.value)}};
    (void)tmpl.render(in);
  } catch (const tessera::ApiError&) {
  } catch (const tessera::jinja::TemplateError&) {
  }
  return 0;
}
