#include "server/chat/message_spans.h"

#include <string>

namespace tessera {
namespace {

// First occurrence of `needle` in `hay` at or after `from` (Knuth-Morris-
// Pratt: linear whatever the texts, where a naive search is not).
size_t find_linear(std::string_view hay, std::string_view needle, size_t from) {
  if (needle.empty()) return from;
  std::vector<size_t> border(needle.size(), 0);
  for (size_t i = 1, k = 0; i < needle.size(); ++i) {
    while (k > 0 && needle[i] != needle[k]) k = border[k - 1];
    if (needle[i] == needle[k]) ++k;
    border[i] = k;
  }
  for (size_t i = from, k = 0; i < hay.size(); ++i) {
    while (k > 0 && hay[i] != needle[k]) k = border[k - 1];
    if (hay[i] == needle[k]) ++k;
    if (k == needle.size()) return i + 1 - needle.size();
  }
  return std::string_view::npos;
}

std::string_view trimmed(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

void collect_texts(const nlohmann::ordered_json& content, std::vector<std::string_view>* out) {
  if (content.is_string()) {
    out->push_back(content.get_ref<const std::string&>());
  } else if (content.is_array()) {
    for (const auto& part : content) {
      const auto text = part.is_object() ? part.find("text") : part.end();
      if (part.is_object() && text != part.end() && text->is_string()) out->push_back(text->get_ref<const std::string&>());
    }
  }
}

}  // namespace

std::optional<std::vector<ByteRange>> protected_message_spans(std::string_view rendered,
                                                              const nlohmann::ordered_json& messages,
                                                              const std::function<bool(std::string_view)>& must_protect) {
  std::vector<std::string_view> texts;
  if (messages.is_array()) {
    for (const auto& m : messages) {
      const auto content = m.is_object() ? m.find("content") : m.end();
      if (m.is_object() && content != m.end()) collect_texts(*content, &texts);
    }
  }
  std::vector<ByteRange> spans;
  size_t cursor = 0;
  for (std::string_view text : texts) {
    if (!must_protect(text)) continue;
    // Only the trimmed text is looked for (whitespace at the edges holds no
    // control-token text), so each search either succeeds or ends the call.
    const std::string_view core = trimmed(text);
    const size_t at = find_linear(rendered, core, cursor);
    if (at == std::string_view::npos) return std::nullopt;
    spans.push_back({at, at + core.size()});
    cursor = at + core.size();
  }
  return spans;
}

}  // namespace tessera
