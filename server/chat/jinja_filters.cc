// Filters (`x | name(args)`) and tests (`x is name(args)`).
#include <algorithm>
#include <cmath>

#include "server/chat/jinja_builtins.h"

namespace tessera::jinja {
namespace {

int64_t length_of(const Value& v, int line) {
  if (v.is_undefined()) return 0;
  if (v.is_dict()) return int64_t(v.entries().items.size());
  if (v.is_list()) return int64_t(v.items().size());
  if (v.is_string()) return int64_t(iterate(v, line).size());
  template_fail(line, "object of type '" + v.type_name() + "' has no length");
}

bool less_than(const Value& a, const Value& b, int line) {
  if (a.is_number() && b.is_number()) return a.as_double() < b.as_double();
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  template_fail(line, "cannot order " + a.type_name() + " and " + b.type_name());
}

// Arguments after the first `skip` positional ones, for a test called by
// select/reject and friends.
CallArgs rest_of(const CallArgs& a, size_t skip) {
  CallArgs out;
  for (size_t i = skip; i < a.positional.size(); ++i) out.positional.push_back(a.positional[i]);
  return out;
}

Value select_items(const Value& input, const CallArgs& a, bool keep, bool by_attribute, int line) {
  ValueList out;
  const size_t test_at = by_attribute ? 1 : 0;
  const Value attr = by_attribute ? a.get(0, "attribute") : Value();
  const Value test = a.get(test_at, "test");
  const CallArgs test_args = rest_of(a, test_at + 1);
  for (const Value& item : iterate(input, line)) {
    const Value subject = by_attribute ? get_attribute(item, attr.str(), line) : item;
    const bool pass = test.is_undefined() ? subject.truthy() : apply_test(test.str(), subject, test_args, line);
    if (pass == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value map_items(const Value& input, const CallArgs& a, int line) {
  ValueList out;
  const Value attr = a.get(99, "attribute");
  for (const Value& item : iterate(input, line)) {
    if (!attr.is_undefined()) {
      Value v = get_attribute(item, attr.str(), line);
      if (v.is_undefined()) v = a.get(99, "default");
      out.push_back(v);
    } else {
      out.push_back(apply_filter(a.get(0, "filter").str(), item, rest_of(a, 1), line));
    }
  }
  return Value::list(std::move(out));
}

Value sort_items(const Value& input, const CallArgs& a, int line) {
  ValueList items = iterate(input, line);
  const Value attr = a.get(2, "attribute");
  auto key = [&](const Value& v) { return attr.is_undefined() ? v : get_attribute(v, attr.str(), line); };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) { return less_than(key(x), key(y), line); });
  if (a.get(0, "reverse").truthy()) std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value string_filter(const std::string& name, const Value& input, const CallArgs& a, int line) {
  const Value method = get_attribute(Value::string(input.str()), name, line);
  CallArgs args = a;
  return method.callable()(args);
}

}  // namespace

Value apply_filter(const std::string& name, const Value& input, const CallArgs& a, int line) {
  if (name == "trim") return string_filter("strip", input, a, line);
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize" || name == "replace") {
    return string_filter(name, input, a, line);
  }
  if (name == "tojson") {
    const Value indent = a.get(0, "indent");
    return Value::string(to_json(input, indent.is_number() ? int(indent.as_int()) : -1, line));
  }
  if (name == "length" || name == "count") return Value::integer(length_of(input, line));
  if (name == "string") return Value::string(input.str());
  if (name == "safe") return input;
  if (name == "list") return Value::list(iterate(input, line));
  if (name == "join") {
    const Value attr = a.get(1, "attribute");
    std::string out;
    const std::string sep = a.get(0, "d").is_undefined() ? "" : a.get(0, "d").str();
    const ValueList items = iterate(input, line);
    for (size_t i = 0; i < items.size(); ++i) {
      out += (i ? sep : "") + (attr.is_undefined() ? items[i] : get_attribute(items[i], attr.str(), line)).str();
      if (out.size() > kMaxValueBytes) template_fail(line, "join() built a string over the size limit");
    }
    return Value::string(out);
  }
  if (name == "items") {
    if (input.is_undefined()) return Value::list();
    if (!input.is_dict()) template_fail(line, "items filter expects a mapping");
    CallArgs no_args;
    return get_attribute(input, "items", line).callable()(no_args);
  }
  if (name == "default" || name == "d") {
    const bool use_default = a.get(1, "boolean").truthy() ? !input.truthy() : input.is_undefined();
    if (!use_default) return input;
    const Value d = a.get(0, "default_value");
    return d.is_undefined() ? Value::string("") : d;
  }
  if (name == "first" || name == "last") {
    const ValueList items = iterate(input, line);
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (input.is_string()) {
      ValueList cps = iterate(input, line);
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += it->as_string();
      return Value::string(out);
    }
    ValueList items = iterate(input, line);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "select" || name == "reject") return select_items(input, a, name == "select", false, line);
  if (name == "selectattr" || name == "rejectattr") return select_items(input, a, name == "selectattr", true, line);
  if (name == "map") return map_items(input, a, line);
  if (name == "sort") return sort_items(input, a, line);
  if (name == "unique") {
    ValueList out;
    for (const Value& v : iterate(input, line)) {
      if (std::none_of(out.begin(), out.end(), [&](const Value& o) { return o.equals(v); })) out.push_back(v);
    }
    return Value::list(std::move(out));
  }
  if (name == "int") {
    if (input.is_number()) return Value::integer(int64_t(input.as_double()));
    if (input.kind() == Value::Kind::kBool) return Value::integer(input.as_bool());
    try {
      return Value::integer(std::stoll(input.str()));
    } catch (...) {
      const Value d = a.get(0, "default");
      return d.is_undefined() ? Value::integer(0) : d;
    }
  }
  if (name == "float") {
    if (input.is_number()) return Value::number(input.as_double());
    try {
      return Value::number(std::stod(input.str()));
    } catch (...) {
      return Value::number(0.0);
    }
  }
  if (name == "abs") {
    if (input.kind() == Value::Kind::kInt) return Value::integer(input.as_int() < 0 ? -input.as_int() : input.as_int());
    if (input.is_number()) return Value::number(std::fabs(input.as_double()));
  }
  if (name == "min" || name == "max") {
    const ValueList items = iterate(input, line);
    if (items.empty()) return Value();
    Value best = items[0];
    for (const Value& v : items) {
      if (name == "min" ? less_than(v, best, line) : less_than(best, v, line)) best = v;
    }
    return best;
  }
  template_fail(line, "unsupported filter '" + name + "'");
}

bool apply_test(const std::string& name, const Value& v, const CallArgs& a, int line) {
  const Value arg = a.get(0, "value");
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind() == K::kInt;
  if (name == "float") return v.kind() == K::kFloat;
  if (name == "boolean") return v.kind() == K::kBool;
  if (name == "true") return v.kind() == K::kBool && v.as_bool();
  if (name == "false") return v.kind() == K::kBool && !v.as_bool();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_dict() || v.is_string();
  if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string();
  if (name == "callable") return v.is_function();
  if (name == "equalto" || name == "eq" || name == "==" || name == "sameas") return v.equals(arg);
  if (name == "ne" || name == "!=") return !v.equals(arg);
  if (name == "lt" || name == "<") return less_than(v, arg, line);
  if (name == "gt" || name == ">") return less_than(arg, v, line);
  if (name == "le" || name == "<=") return !less_than(arg, v, line);
  if (name == "ge" || name == ">=") return !less_than(v, arg, line);
  if (name == "even" || name == "odd" || name == "divisibleby") {
    if (v.kind() != K::kInt) template_fail(line, "test '" + name + "' needs an integer");
    const int64_t d = name == "divisibleby" ? (arg.kind() == K::kInt ? arg.as_int() : 0) : 2;
    if (d == 0) template_fail(line, "divisibleby needs a non-zero integer");
    const bool divisible = d == -1 || v.as_int() % d == 0;  // INT64_MIN % -1 traps
    return name == "odd" ? !divisible : divisible;
  }
  if (name == "in") {
    for (const Value& item : iterate(arg, line)) {
      if (item.equals(v)) return true;
    }
    return arg.is_string() && v.is_string() && arg.as_string().find(v.as_string()) != std::string::npos;
  }
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    const std::string s = v.as_string();
    return std::none_of(s.begin(), s.end(), [&](char c) { return name == "lower" ? std::isupper(static_cast<unsigned char>(c)) : std::islower(static_cast<unsigned char>(c)); });
  }
  template_fail(line, "unsupported test '" + name + "'");
}

}  // namespace tessera::jinja
