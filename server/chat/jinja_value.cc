#include "server/chat/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace tessera::jinja {

const Value* ValueDict::find(const std::string& key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void ValueDict::set(const std::string& key, Value value) {
  for (auto& [k, v] : items) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

Value CallArgs::get(size_t index, const std::string& name) const {
  for (const auto& [k, v] : keyword) {
    if (k == name) return v;
  }
  return index < positional.size() ? positional[index] : Value();
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.b_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.i_ = i;
  return v;
}

Value Value::number(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.f_ = f;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.s_ = std::move(s);
  return v;
}

Value Value::list(ValueList items) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<ValueList>(std::move(items));
  return v;
}

Value Value::dict(ValueDict d) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<ValueDict>(std::move(d));
  return v;
}

Value Value::namespace_object(ValueDict d) {
  Value v = dict(std::move(d));
  v.namespace_ = true;
  return v;
}

Value Value::function(std::string name, NativeFunction fn) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.s_ = std::move(name);
  v.fn_ = std::make_shared<NativeFunction>(std::move(fn));
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) { return from_json_at(j, 0); }

Value Value::from_json_at(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxValueDepth) throw ValueTooLarge("a JSON value nests deeper than " + std::to_string(kMaxValueDepth) + " levels");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      return u <= uint64_t(INT64_MAX) ? integer(int64_t(u)) : number(double(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return number(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict d;
      for (const auto& [k, v] : j.items()) d.items.emplace_back(k, from_json_at(v, depth + 1));
      return dict(std::move(d));
    }
    default: return Value();
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return b_;
    case Kind::kInt: return i_ != 0;
    case Kind::kFloat: return f_ != 0.0;
    case Kind::kString: return !s_.empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return namespace_ || !dict_->items.empty();
    case Kind::kFunction: return true;
  }
  return false;
}

bool Value::equals(const Value& other) const { return equals_at(other, 0); }

bool Value::equals_at(const Value& other, int depth) const {
  if (depth > kMaxValueDepth) throw ValueTooLarge("values compared nest deeper than " + std::to_string(kMaxValueDepth) + " levels");
  const bool num_a = is_number() || kind_ == Kind::kBool;
  const bool num_b = other.is_number() || other.kind_ == Kind::kBool;
  if (num_a && num_b) {
    const double a = kind_ == Kind::kBool ? double(b_) : as_double();
    const double b = other.kind_ == Kind::kBool ? double(other.b_) : other.as_double();
    if (kind_ == Kind::kInt && other.kind_ == Kind::kInt) return i_ == other.i_;
    return a == b;
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return s_ == other.s_;
    case Kind::kList: {
      if (list_->size() != other.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].equals_at((*other.list_)[i], depth + 1)) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (dict_ == other.dict_) return true;
      if (namespace_ || other.namespace_ || dict_->items.size() != other.dict_->items.size()) return false;
      for (const auto& [k, v] : dict_->items) {
        const Value* o = other.dict_->find(k);
        if (!o || !v.equals_at(*o, depth + 1)) return false;
      }
      return true;
    }
    case Kind::kFunction: return fn_ == other.fn_;
    default: return false;
  }
}

std::string python_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  // sci is [-]d[.ddd]e±XX: split it into sign, digits and exponent.
  const bool negative = sci[0] == '-';
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exp = std::stoi(sci.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exp >= -5 + 1 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(size_t(-exp - 1), '0') + digits;
    } else if (size_t(exp) + 1 >= digits.size()) {
      out += digits + std::string(size_t(exp) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, size_t(exp) + 1) + "." + digits.substr(size_t(exp) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  std::snprintf(buf, sizeof buf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + buf;
}

namespace {

std::string python_string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == quote) {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string Value::str() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kString: return s_;
    default: return repr();
  }
}

std::string Value::repr() const {
  std::string out;
  repr_into(&out, 0);
  return out;
}

void Value::repr_into(std::string* out, int depth) const {
  if (depth > kMaxValueDepth) throw ValueTooLarge("a value nests deeper than " + std::to_string(kMaxValueDepth) + " levels");
  if (out->size() > kMaxValueBytes) throw ValueTooLarge("the text of a value exceeds the size limit");
  switch (kind_) {
    case Kind::kUndefined: *out += "Undefined"; return;
    case Kind::kNone: *out += "None"; return;
    case Kind::kBool: *out += b_ ? "True" : "False"; return;
    case Kind::kInt: *out += std::to_string(i_); return;
    case Kind::kFloat: *out += python_float_repr(f_); return;
    case Kind::kString: *out += python_string_repr(s_); return;
    case Kind::kList: {
      *out += "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i) *out += ", ";
        (*list_)[i].repr_into(out, depth + 1);
      }
      *out += "]";
      return;
    }
    case Kind::kDict: {
      *out += namespace_ ? "<Namespace {" : "{";
      for (size_t i = 0; i < dict_->items.size(); ++i) {
        if (i) *out += ", ";
        *out += python_string_repr(dict_->items[i].first) + ": ";
        dict_->items[i].second.repr_into(out, depth + 1);
      }
      *out += namespace_ ? "}>" : "}";
      return;
    }
    case Kind::kFunction: *out += "<function " + s_ + ">"; return;
  }
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "none";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kDict: return namespace_ ? "namespace" : "dict";
    case Kind::kFunction: return "function";
  }
  return "";
}

}  // namespace tessera::jinja
