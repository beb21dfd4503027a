#include "server/chat/jinja_builtins.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "server/chat/jinja_template.h"

namespace tessera::jinja {

void template_fail(int line, const std::string& what) {
  throw TemplateError("template line " + std::to_string(line) + ": " + what);
}

namespace {

// UTF-8 code points are walked in place (input is valid UTF-8: request
// JSON and template files are checked on the way in); copying each into a
// string of its own would cost tens of bytes per byte of a long message.
size_t code_point_bytes(unsigned char lead) { return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4; }

std::string_view code_point_at(std::string_view s, size_t i) {
  return s.substr(i, std::min(code_point_bytes(static_cast<unsigned char>(s[i])), s.size() - i));
}

// The start of the code point that ends at byte `end` (exclusive).
size_t code_point_before(std::string_view s, size_t end) {
  size_t i = end - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return i;
}

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// s[i] in Python: the i-th code point, counted from the end when negative.
Value code_point_index(std::string_view s, int64_t i) {
  if (i >= 0) {
    size_t at = 0;
    for (int64_t k = 0; k < i && at < s.size(); ++k) at += code_point_at(s, at).size();
    return at < s.size() ? Value::string(std::string(code_point_at(s, at))) : Value();
  }
  size_t end = s.size();
  for (int64_t k = -1; k > i && end > 0; --k) end = code_point_before(s, end);
  if (end == 0) return Value();
  const size_t at = code_point_before(s, end);
  return Value::string(std::string(s.substr(at, end - at)));
}

bool is_python_space(std::string_view cp) {
  if (cp.size() == 1) {
    const unsigned char c = static_cast<unsigned char>(cp[0]);
    return c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f);
  }
  static const char* const kSpaces[] = {"\u0085", "\u00a0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003",
                                        "\u2004", "\u2005", "\u2006", "\u2007", "\u2008", "\u2009", "\u200a",
                                        "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"};
  for (const char* sp : kSpaces) {
    if (cp == sp) return true;
  }
  return false;
}

std::string strip(const std::string& s, const Value& chars, bool left, bool right) {
  const std::string_view text = s;
  auto strippable = [&](std::string_view cp) {
    if (!chars.is_string()) return is_python_space(cp);
    const std::string_view set = chars.as_string();
    for (size_t i = 0; i < set.size(); i += code_point_at(set, i).size()) {
      if (code_point_at(set, i) == cp) return true;
    }
    return false;
  };
  size_t b = 0, e = text.size();
  while (left && b < e && strippable(code_point_at(text, b))) b += code_point_at(text, b).size();
  while (right && e > b && strippable(text.substr(code_point_before(text, e), e - code_point_before(text, e)))) {
    e = code_point_before(text, e);
  }
  return s.substr(b, e - b);
}

std::string map_ascii(std::string s, int (*f)(int)) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x80) c = char(f(static_cast<unsigned char>(c)));
  }
  return s;
}

std::string title_case(const std::string& s) {
  std::string out = s;
  bool prev_alpha = false;
  for (char& c : out) {
    const bool alpha = std::isalpha(static_cast<unsigned char>(c));
    if (alpha) c = char(prev_alpha ? std::tolower(static_cast<unsigned char>(c)) : std::toupper(static_cast<unsigned char>(c)));
    prev_alpha = alpha || static_cast<unsigned char>(c) >= 0x80;
  }
  return out;
}

const std::string& need_string(const Value& v, const char* what, int line) {
  if (!v.is_string()) template_fail(line, std::string(what) + " expects a string, got " + v.type_name());
  return v.as_string();
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  if (from.empty()) return s;
  if (to.size() > from.size()) {
    // The size of the result, known before building it.
    size_t hits = 0;
    for (size_t pos = s.find(from); pos != std::string::npos && (count < 0 || int64_t(hits) < count); pos = s.find(from, pos + from.size())) ++hits;
    if (hits > 0 && (to.size() - from.size()) > (kMaxValueBytes - std::min(s.size(), kMaxValueBytes)) / hits) {
      throw ValueTooLarge("replace() would build a string over the size limit");
    }
  }
  std::string out;
  size_t pos = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out += s.substr(pos, hit - pos) + to;
    pos = hit + from.size();
  }
  return out + s.substr(pos);
}

Value split(const std::string& s, const Value& sep, const Value& maxsplit_v, int line) {
  const int64_t maxsplit = maxsplit_v.is_number() ? maxsplit_v.as_int() : -1;
  ValueList parts;
  if (sep.is_string()) {
    const std::string& d = sep.as_string();
    if (d.empty()) template_fail(line, "split() separator is empty");
    size_t pos = 0;
    while (maxsplit < 0 || int64_t(parts.size()) < maxsplit) {
      const size_t hit = s.find(d, pos);
      if (hit == std::string::npos) break;
      parts.push_back(Value::string(s.substr(pos, hit - pos)));
      pos = hit + d.size();
    }
    parts.push_back(Value::string(s.substr(pos)));
    return Value::list(std::move(parts));
  }
  // No separator: runs of whitespace split, ends are dropped.
  const std::string_view text = s;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_python_space(code_point_at(text, i))) i += code_point_at(text, i).size();
    if (i >= text.size()) break;
    if (maxsplit >= 0 && int64_t(parts.size()) >= maxsplit) {
      parts.push_back(Value::string(strip(s.substr(i), Value(), false, true)));
      break;
    }
    const size_t start = i;
    while (i < text.size() && !is_python_space(code_point_at(text, i))) i += code_point_at(text, i).size();
    parts.push_back(Value::string(s.substr(start, i - start)));
  }
  return Value::list(std::move(parts));
}

bool affix_match(const std::string& s, const Value& arg, bool prefix, int line) {
  auto one = [&](const Value& a) {
    const std::string& x = need_string(a, prefix ? "startswith()" : "endswith()", line);
    return x.size() <= s.size() && (prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0);
  };
  if (arg.is_list()) return std::any_of(arg.items().begin(), arg.items().end(), one);
  return one(arg);
}

Value string_method(const std::string& s, const std::string& name, const CallArgs& a, int line) {
  if (name == "strip") return Value::string(strip(s, a.get(0, "chars"), true, true));
  if (name == "lstrip") return Value::string(strip(s, a.get(0, "chars"), true, false));
  if (name == "rstrip") return Value::string(strip(s, a.get(0, "chars"), false, true));
  if (name == "split") return split(s, a.get(0, "sep"), a.get(1, "maxsplit"), line);
  if (name == "startswith") return Value::boolean(affix_match(s, a.get(0, "prefix"), true, line));
  if (name == "endswith") return Value::boolean(affix_match(s, a.get(0, "suffix"), false, line));
  if (name == "upper") return Value::string(map_ascii(s, ::toupper));
  if (name == "lower") return Value::string(map_ascii(s, ::tolower));
  if (name == "title") return Value::string(title_case(s));
  if (name == "capitalize") {
    std::string out = map_ascii(s, ::tolower);
    if (!out.empty()) out[0] = char(std::toupper(static_cast<unsigned char>(out[0])));
    return Value::string(out);
  }
  if (name == "replace") {
    const Value count = a.get(2, "count");
    return Value::string(replace_all(s, need_string(a.get(0, "old"), "replace()", line),
                                     need_string(a.get(1, "new"), "replace()", line), count.is_number() ? count.as_int() : -1));
  }
  if (name == "find") {
    const size_t hit = s.find(need_string(a.get(0, "sub"), "find()", line));
    return Value::integer(hit == std::string::npos ? -1 : int64_t(count_code_points(std::string_view(s).substr(0, hit))));
  }
  if (name == "count") {
    const std::string& sub = need_string(a.get(0, "sub"), "count()", line);
    int64_t n = 0;
    for (size_t pos = s.find(sub); !sub.empty() && pos != std::string::npos; pos = s.find(sub, pos + sub.size())) ++n;
    return Value::integer(n);
  }
  if (name == "join") {
    std::string out;
    const ValueList items = iterate(a.get(0, "iterable"), line);
    for (size_t i = 0; i < items.size(); ++i) out += (i ? s : "") + items[i].str();
    return Value::string(out);
  }
  template_fail(line, "str has no method '" + name + "'");
}

Value dict_method(const Value& d, const std::string& name, const CallArgs& a, int line) {
  ValueList out;
  if (name == "items") {
    for (const auto& [k, v] : d.entries().items) out.push_back(Value::list({Value::string(k), v}));
  } else if (name == "keys") {
    for (const auto& [k, v] : d.entries().items) out.push_back(Value::string(k));
  } else if (name == "values") {
    for (const auto& [k, v] : d.entries().items) out.push_back(v);
  } else if (name == "get") {
    const Value key = a.get(0, "key");
    const Value* hit = key.is_string() ? d.entries().find(key.as_string()) : nullptr;
    if (hit) return *hit;
    const Value fallback = a.get(1, "default");
    return fallback.is_undefined() ? Value::none() : fallback;
  } else {
    template_fail(line, "dict has no method '" + name + "'");
  }
  return Value::list(std::move(out));
}

bool is_string_method(const std::string& n) {
  static const char* const kNames[] = {"strip", "lstrip", "rstrip", "split",   "startswith", "endswith", "upper",
                                       "lower", "title",  "capitalize", "replace", "find",       "count",    "join"};
  return std::find(std::begin(kNames), std::end(kNames), n) != std::end(kNames);
}

}  // namespace

Value get_attribute(const Value& obj, const std::string& name, int line) {
  if (obj.is_undefined()) template_fail(line, "cannot read attribute '" + name + "' of an undefined value");
  if (obj.is_dict()) {
    const bool method = !obj.is_namespace() && (name == "items" || name == "keys" || name == "values" || name == "get");
    if (method) {
      return Value::function(name, [obj, name, line](CallArgs& a) { return dict_method(obj, name, a, line); });
    }
    const Value* hit = obj.entries().find(name);
    return hit ? *hit : Value();
  }
  if (obj.is_string() && is_string_method(name)) {
    const std::string s = obj.as_string();
    return Value::function(name, [s, name, line](CallArgs& a) { return string_method(s, name, a, line); });
  }
  return Value();
}

Value get_item(const Value& obj, const Value& key, int line) {
  if (obj.is_undefined()) template_fail(line, "cannot index an undefined value");
  if (obj.is_dict() && key.is_string()) {
    const Value* hit = obj.entries().find(key.as_string());
    return hit ? *hit : Value();
  }
  if ((obj.is_list() || obj.is_string()) && key.kind() == Value::Kind::kInt) {
    if (obj.is_string()) return code_point_index(obj.as_string(), key.as_int());
    const ValueList& items = obj.items();
    const int64_t i = key.as_int() < 0 ? key.as_int() + int64_t(items.size()) : key.as_int();
    return i >= 0 && i < int64_t(items.size()) ? items[size_t(i)] : Value();
  }
  if (key.is_string()) return get_attribute(obj, key.as_string(), line);
  return Value();
}

ValueList iterate(const Value& v, int line) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kList: return v.items();
    case Value::Kind::kDict: {
      ValueList keys;
      for (const auto& [k, x] : v.entries().items) keys.push_back(Value::string(k));
      return keys;
    }
    case Value::Kind::kString: {
      const std::string_view text = v.as_string();
      if (count_code_points(text) > kMaxListItems) template_fail(line, "a string too long to iterate over");
      ValueList chars;
      for (size_t i = 0; i < text.size(); i += code_point_at(text, i).size()) chars.push_back(Value::string(std::string(code_point_at(text, i))));
      return chars;
    }
    default: template_fail(line, "'" + v.type_name() + "' object is not iterable");
  }
}

namespace {

void json_string(const std::string& s, std::string* out) {
  *out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          *out += buf;
        } else {
          *out += char(c);
        }
    }
  }
  *out += '"';
}

void json_value(const Value& v, int indent, int level, int line, std::string* out) {
  if (level > kMaxValueDepth) template_fail(line, "tojson: the value nests deeper than " + std::to_string(kMaxValueDepth) + " levels");
  if (out->size() > kMaxValueBytes) template_fail(line, "tojson: the text exceeds the size limit");
  const auto newline = [&](int lvl) {
    if (indent >= 0) *out += "\n" + std::string(size_t(indent * lvl), ' ');
  };
  const char* item_sep = indent >= 0 ? "," : ", ";
  switch (v.kind()) {
    case Value::Kind::kNone: *out += "null"; return;
    case Value::Kind::kBool: *out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::kInt: *out += std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: {
      const double f = v.as_double();
      *out += std::isnan(f) ? "NaN" : std::isinf(f) ? (f > 0 ? "Infinity" : "-Infinity") : python_float_repr(f);
      return;
    }
    case Value::Kind::kString: json_string(v.as_string(), out); return;
    case Value::Kind::kList: {
      if (v.items().empty()) {
        *out += "[]";
        return;
      }
      *out += '[';
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) *out += item_sep;
        newline(level + 1);
        json_value(v.items()[i], indent, level + 1, line, out);
      }
      newline(level);
      *out += ']';
      return;
    }
    case Value::Kind::kDict: {
      if (v.entries().items.empty()) {
        *out += "{}";
        return;
      }
      *out += '{';
      for (size_t i = 0; i < v.entries().items.size(); ++i) {
        if (i) *out += item_sep;
        newline(level + 1);
        json_string(v.entries().items[i].first, out);
        *out += ": ";
        json_value(v.entries().items[i].second, indent, level + 1, line, out);
      }
      newline(level);
      *out += '}';
      return;
    }
    default: template_fail(line, "Object of type " + v.type_name() + " is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, int indent, int line) {
  if (indent > 64) template_fail(line, "tojson: indent above 64");
  std::string out;
  json_value(v, indent, 0, line, &out);
  return out;
}

void add_global_functions(ValueDict& globals) {
  globals.set("range", Value::function("range", [](CallArgs& a) {
    int64_t start = 0, stop = 0, step = 1;
    for (const Value& v : a.positional) {
      if (v.kind() != Value::Kind::kInt) template_fail(0, "range() takes integers");
    }
    if (a.positional.size() == 1) {
      stop = a.positional[0].as_int();
    } else if (a.positional.size() >= 2) {
      start = a.positional[0].as_int();
      stop = a.positional[1].as_int();
      if (a.positional.size() >= 3) step = a.positional[2].as_int();
    }
    if (step == 0) template_fail(0, "range() step must not be zero");
    ValueList out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (out.size() >= 100000) template_fail(0, "range() longer than 100000 items");
      out.push_back(Value::integer(i));
    }
    return Value::list(std::move(out));
  }));
  globals.set("namespace", Value::function("namespace", [](CallArgs& a) {
    ValueDict d;
    if (!a.positional.empty() && a.positional[0].is_dict()) d = a.positional[0].entries();
    for (auto& [k, v] : a.keyword) d.set(k, v);
    return Value::namespace_object(std::move(d));
  }));
  globals.set("dict", Value::function("dict", [](CallArgs& a) {
    ValueDict d;
    for (auto& [k, v] : a.keyword) d.set(k, v);
    return Value::dict(std::move(d));
  }));
  globals.set("raise_exception", Value::function("raise_exception", [](CallArgs& a) -> Value {
    throw TemplateError(a.get(0, "message").str());
  }));
  globals.set("strftime_now", Value::function("strftime_now", [](CallArgs& a) {
    const std::string format = a.get(0, "format").str();
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char buf[256];
    const size_t n = std::strftime(buf, sizeof buf, format.c_str(), &local);
    return Value::string(std::string(buf, n));
  }));
}

}  // namespace tessera::jinja
