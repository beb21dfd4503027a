#pragma once
// The values a chat template computes with, with Python's semantics where
// templates can observe them: truthiness, equality, str() and repr(), and
// reference semantics for lists, dicts and namespaces.
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tessera::jinja {

// Bounds on what any one computed value may hold, whatever the template:
// the bytes of a string or of a value's text (str, repr, tojson, join), the
// items of a list, and how deeply values nest (lists can hold themselves).
constexpr size_t kMaxValueBytes = 16u << 20;
constexpr size_t kMaxListItems = 1u << 20;
constexpr int kMaxValueDepth = 128;

// A value outgrew those bounds; the renderer reports it as a TemplateError.
class ValueTooLarge : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Value;
using ValueList = std::vector<Value>;

// Insertion-ordered, string-keyed, as JSON objects and Python dicts are.
struct ValueDict {
  std::vector<std::pair<std::string, Value>> items;

  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value value);
};

struct CallArgs;
using NativeFunction = std::function<Value(CallArgs&)>;

class Value {
 public:
  enum class Kind : uint8_t { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

  Value() = default;  // undefined
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double f);
  static Value string(std::string s);
  static Value list(ValueList items = {});
  static Value dict(ValueDict d = {});
  static Value namespace_object(ValueDict d = {});
  static Value function(std::string name, NativeFunction fn);
  // Throws ValueTooLarge when `j` nests deeper than kMaxValueDepth.
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_namespace() const { return kind_ == Kind::kDict && namespace_; }
  bool is_function() const { return kind_ == Kind::kFunction; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_double() const { return kind_ == Kind::kInt ? double(i_) : f_; }
  const std::string& as_string() const { return s_; }
  ValueList& items() const { return *list_; }
  ValueDict& entries() const { return *dict_; }
  const std::string& function_name() const { return s_; }
  const NativeFunction& callable() const { return *fn_; }

  bool truthy() const;
  bool equals(const Value& other) const;
  // Python's str() and repr().
  std::string str() const;
  std::string repr() const;
  std::string type_name() const;

 private:
  static Value from_json_at(const nlohmann::ordered_json& j, int depth);
  void repr_into(std::string* out, int depth) const;
  bool equals_at(const Value& other, int depth) const;

  Kind kind_ = Kind::kUndefined;
  bool namespace_ = false;
  bool b_ = false;
  int64_t i_ = 0;
  double f_ = 0.0;
  std::string s_;
  std::shared_ptr<ValueList> list_;
  std::shared_ptr<ValueDict> dict_;
  std::shared_ptr<NativeFunction> fn_;
};

// Arguments of a call: positional, then keyword.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index` or named `name`, or undefined.
  Value get(size_t index, const std::string& name) const;
};

// Python's repr() of a float: the shortest text that reads back the same.
std::string python_float_repr(double v);

}  // namespace tessera::jinja
