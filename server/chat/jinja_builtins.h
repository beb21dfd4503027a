#pragma once
// The filters, tests, methods and globals templates may use. Each is a pure
// function of its arguments.
#include <string>

#include "server/chat/jinja_value.h"

namespace tessera::jinja {

// Throws TemplateError naming `line` for unknown names and bad arguments.
Value apply_filter(const std::string& name, const Value& input, const CallArgs& args, int line);
bool apply_test(const std::string& name, const Value& input, const CallArgs& args, int line);

// `obj.name`: a dict's key or a bound method; undefined when neither.
Value get_attribute(const Value& obj, const std::string& name, int line);
// `obj[key]`, including negative list indices; undefined when missing.
Value get_item(const Value& obj, const Value& key, int line);

// The items a `for` loop walks: list items, dict keys, string characters.
ValueList iterate(const Value& v, int line);

// json.dumps(value, ensure_ascii=False, indent=indent), key order kept.
std::string to_json(const Value& v, int indent, int line);

// The global functions: range, namespace, dict, raise_exception, strftime_now.
void add_global_functions(ValueDict& globals);

[[noreturn]] void template_fail(int line, const std::string& what);

}  // namespace tessera::jinja
