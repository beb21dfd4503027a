#include "engine/grammar/gbnf_text.h"

#include <cstdio>

namespace tessera::grammar {
namespace {

std::string escaped_code_point(uint32_t cp) {
  char buf[16];
  if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return std::string(1, char(cp));
  std::snprintf(buf, sizeof buf, "\\U%08X", unsigned(cp));
  return buf;
}

}  // namespace

std::string gbnf_literal(std::string_view bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(c));
      out += buf;
    } else {
      out += char(c);  // UTF-8 passes through
    }
  }
  return out + "\"";
}

std::string gbnf_class(const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
  std::string out = "[";
  for (const auto& [lo, hi] : ranges) {
    out += escaped_code_point(lo);
    if (hi != lo) out += "-" + escaped_code_point(hi);
  }
  return out + "]";
}

}  // namespace tessera::grammar
