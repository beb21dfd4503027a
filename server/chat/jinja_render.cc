// Template::parse and Template::render: walks the tree with jinja2's scoping
// (each loop iteration is a scope of its own; `if` is not) and Python's
// operator semantics.
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "server/chat/jinja_builtins.h"
#include "server/chat/jinja_lexer.h"
#include "server/chat/jinja_parser.h"
#include "server/chat/jinja_template.h"

namespace tessera::jinja {
namespace {

enum class Flow : uint8_t { kNormal, kBreak, kContinue };

class Renderer {
 public:
  Renderer(const ValueDict& globals, const RenderLimits& limits) : limits_(limits) {
    scopes_.emplace_back();
    for (const auto& [k, v] : globals.items) scopes_.back()[k] = v;
  }

  std::string run(const Body& body) {
    if (exec(body) != Flow::kNormal) template_fail(1, "'break' or 'continue' outside a loop");
    return std::move(out_);
  }

 private:
  struct Depth {
    Depth(Renderer* r, int line) : r(r) {
      if (++r->depth_ > r->limits_.max_depth) template_fail(line, "nesting deeper than the render limit");
      if (++r->steps_ > r->limits_.max_steps) template_fail(line, "template exceeded its step limit");
    }
    ~Depth() { --r->depth_; }
    Renderer* r;
  };

  // Any string the template builds is held to the output budget (it could
  // only be emitted within it), checked before it is built.
  void check_string_size(size_t a, size_t b, int line) {
    if (a > limits_.max_output_bytes || b > limits_.max_output_bytes - a) {
      template_fail(line, "a string the template builds exceeds the output size limit");
    }
    charge(a + b, line);
  }

  // Work in proportion to bytes or items copied counts against the steps.
  void charge(size_t units, int line) {
    steps_ += units / 64;
    if (steps_ > limits_.max_steps) template_fail(line, "template exceeded its step limit");
  }

  void emit(const std::string& s, int line) {
    if (out_.size() + s.size() > limits_.max_output_bytes) template_fail(line, "template output exceeds the size limit");
    out_ += s;
  }

  // Inside a macro the caller's variables are hidden: its own scopes, then
  // the template's top level.
  Value lookup(const std::string& name) const {
    for (size_t i = scopes_.size(); i-- > macro_base_;) {
      auto hit = scopes_[i].find(name);
      if (hit != scopes_[i].end()) return hit->second;
    }
    if (macro_base_ > 0) {
      auto hit = scopes_[0].find(name);
      if (hit != scopes_[0].end()) return hit->second;
    }
    return Value();
  }

  Flow exec(const Body& body) {
    for (const auto& node : body) {
      const Flow f = exec(*node);
      if (f != Flow::kNormal) return f;
    }
    return Flow::kNormal;
  }

  Flow exec(const Node& n) {
    Depth d(this, n.line);
    switch (n.kind) {
      case Node::Kind::kText: emit(n.text, n.line); return Flow::kNormal;
      case Node::Kind::kOutput: emit(eval(*n.expr).str(), n.line); return Flow::kNormal;
      case Node::Kind::kIf:
        for (const auto& [cond, body] : n.branches) {
          if (!cond || eval(*cond).truthy()) return exec(body);
        }
        return Flow::kNormal;
      case Node::Kind::kFor: return exec_for(n);
      case Node::Kind::kSet: exec_set(n); return Flow::kNormal;
      case Node::Kind::kBreak: return Flow::kBreak;
      case Node::Kind::kContinue: return Flow::kContinue;
      case Node::Kind::kMacro:
        scopes_.back()[n.targets[0]] = Value::function(n.targets[0], [this, &n](CallArgs& a) { return call_macro(n, a); });
        return Flow::kNormal;
    }
    return Flow::kNormal;
  }

  // A macro's body rendered into a string of its own, its parameters bound
  // from the call (positional, then by name, then their defaults). Recursion
  // is bounded by the nesting limit, as every other construct.
  Value call_macro(const Node& n, CallArgs& a) {
    Depth d(this, n.line);
    const std::string& name = n.targets[0];
    if (a.positional.size() > n.params.size()) {
      template_fail(n.line, "macro '" + name + "' takes not more than " + std::to_string(n.params.size()) + " arguments");
    }
    for (const auto& keyword : a.keyword) {
      const std::string& key = keyword.first;  // not a structured binding: lambdas capture it
      const bool known = std::any_of(n.params.begin(), n.params.end(), [&](const auto& p) { return p.first == key; });
      if (!known) template_fail(n.line, "macro '" + name + "' takes no keyword argument '" + key + "'");
    }
    const size_t outer_base = macro_base_;
    std::string outer_out = std::move(out_);
    out_.clear();
    scopes_.emplace_back();
    macro_base_ = scopes_.size() - 1;
    for (size_t i = 0; i < n.params.size(); ++i) {
      const auto& [param, fallback] = n.params[i];
      Value v = i < a.positional.size() ? a.positional[i] : a.get(size_t(-1), param);
      if (v.is_undefined() && i >= a.positional.size() && fallback) v = eval(*fallback);
      scopes_.back()[param] = v;
    }
    const Flow f = exec(n.body);
    scopes_.pop_back();
    macro_base_ = outer_base;
    std::string rendered = std::move(out_);
    out_ = std::move(outer_out);
    if (f != Flow::kNormal) template_fail(n.line, "'break' or 'continue' outside a loop");
    return Value::string(std::move(rendered));
  }

  void bind_targets(const std::vector<std::string>& targets, const Value& v, int line) {
    if (targets.size() == 1) {
      scopes_.back()[targets[0]] = v;
      return;
    }
    const ValueList parts = iterate(v, line);
    if (parts.size() != targets.size()) {
      template_fail(line, "cannot unpack " + std::to_string(parts.size()) + " values into " + std::to_string(targets.size()));
    }
    for (size_t i = 0; i < parts.size(); ++i) scopes_.back()[targets[i]] = parts[i];
  }

  Flow exec_for(const Node& n) {
    ValueList items;
    const ValueList all = iterate(eval(*n.expr), n.line);
    if (n.filter) {
      for (const Value& item : all) {
        scopes_.emplace_back();
        bind_targets(n.targets, item, n.line);
        const bool keep = eval(*n.filter).truthy();
        scopes_.pop_back();
        if (keep) items.push_back(item);
      }
    } else {
      items = all;
    }
    if (items.empty()) return exec_scoped(n.else_body);
    const int64_t len = int64_t(items.size());
    for (int64_t i = 0; i < len; ++i) {
      if (++steps_ > limits_.max_steps) template_fail(n.line, "template exceeded its step limit");
      scopes_.emplace_back();
      bind_targets(n.targets, items[size_t(i)], n.line);
      scopes_.back()["loop"] = loop_object(items, i);
      const Flow f = exec(n.body);
      scopes_.pop_back();
      if (f == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  Flow exec_scoped(const Body& body) {
    scopes_.emplace_back();
    const Flow f = exec(body);
    scopes_.pop_back();
    return f;
  }

  static Value loop_object(const ValueList& items, int64_t i) {
    const int64_t len = int64_t(items.size());
    ValueDict d;
    d.set("index", Value::integer(i + 1));
    d.set("index0", Value::integer(i));
    d.set("revindex", Value::integer(len - i));
    d.set("revindex0", Value::integer(len - i - 1));
    d.set("first", Value::boolean(i == 0));
    d.set("last", Value::boolean(i == len - 1));
    d.set("length", Value::integer(len));
    d.set("previtem", i > 0 ? items[size_t(i - 1)] : Value());
    d.set("nextitem", i + 1 < len ? items[size_t(i + 1)] : Value());
    d.set("cycle", Value::function("cycle", [i](CallArgs& a) {
      return a.positional.empty() ? Value() : a.positional[size_t(i) % a.positional.size()];
    }));
    return Value::dict(std::move(d));
  }

  // Whether `target` is among the containers `v` holds, each container
  // visited once (shared ones are not walked again).
  static bool reaches(const Value& v, const ValueDict* target, std::unordered_set<const void*>& seen) {
    if (v.is_dict()) {
      if (&v.entries() == target) return true;
      if (!seen.insert(&v.entries()).second) return false;
      for (const auto& [k, x] : v.entries().items) {
        if (reaches(x, target, seen)) return true;
      }
    } else if (v.is_list()) {
      if (!seen.insert(&v.items()).second) return false;
      for (const Value& x : v.items()) {
        if (reaches(x, target, seen)) return true;
      }
    }
    return false;
  }

  void exec_set(const Node& n) {
    const Value v = eval(*n.expr);
    if (!n.target_attribute.empty()) {
      const Value ns = lookup(n.targets[0]);
      if (!ns.is_namespace()) template_fail(n.line, "cannot assign an attribute of non-namespace '" + n.targets[0] + "'");
      // Values share their containers: a namespace holding itself would be
      // a reference cycle, never freed, and endless to print or compare.
      std::unordered_set<const void*> seen;
      if (reaches(v, &ns.entries(), seen)) template_fail(n.line, "a namespace cannot hold itself");
      ns.entries().set(n.target_attribute, v);
      return;
    }
    bind_targets(n.targets, v, n.line);
  }

  CallArgs arguments(const Expr& e, size_t first) {
    CallArgs a;
    for (size_t i = first; i < e.children.size(); ++i) a.positional.push_back(eval(*e.children[i]));
    for (const auto& [k, v] : e.keywords) a.keyword.emplace_back(k, eval(*v));
    return a;
  }

  Value eval(const Expr& e) {
    Depth d(this, e.line);
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: return lookup(e.name);
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        ValueList items;
        for (const auto& c : e.children) items.push_back(eval(*c));
        return Value::list(std::move(items));
      }
      case Expr::Kind::kDict: {
        ValueDict dict;
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          const Value key = eval(*e.children[i]);
          if (!key.is_string()) template_fail(e.line, "dict keys must be strings");
          dict.set(key.as_string(), eval(*e.children[i + 1]));
        }
        return Value::dict(std::move(dict));
      }
      case Expr::Kind::kAttribute: return get_attribute(eval(*e.children[0]), e.name, e.line);
      case Expr::Kind::kIndex: {
        const Value obj = eval(*e.children[0]);
        const Value key = eval(*e.children[1]);
        // Indexing a string walks its code points from the nearer end.
        if (obj.is_string() && key.kind() == Value::Kind::kInt) {
          const uint64_t walk = key.as_int() < 0 ? uint64_t(-(key.as_int() + 1)) + 1 : uint64_t(key.as_int());
          charge(size_t(std::min<uint64_t>(walk * 4, obj.as_string().size())), e.line);
        }
        return get_item(obj, key, e.line);
      }
      case Expr::Kind::kSlice: return slice(e);
      case Expr::Kind::kCall: {
        const Value fn = eval(*e.children[0]);
        if (!fn.is_function()) template_fail(e.line, "'" + fn.type_name() + "' object is not callable");
        CallArgs a = arguments(e, 1);
        return fn.callable()(a);
      }
      case Expr::Kind::kFilter: {
        Value out = apply_filter(e.name, eval(*e.children[0]), arguments(e, 1), e.line);
        if (out.is_string()) check_string_size(out.as_string().size(), 0, e.line);
        return out;
      }
      case Expr::Kind::kTest: return Value::boolean(apply_test(e.name, eval(*e.children[0]), arguments(e, 1), e.line) != e.negated);
      case Expr::Kind::kUnary: return unary(e);
      case Expr::Kind::kBinary: return binary(e);
      case Expr::Kind::kCondition:
        if (eval(*e.children[1]).truthy()) return eval(*e.children[0]);
        return e.children[2] ? eval(*e.children[2]) : Value();
    }
    return Value();
  }

  Value slice(const Expr& e) {
    const Value obj = eval(*e.children[0]);
    auto part = [&](int i) -> std::optional<int64_t> {
      if (!e.children[size_t(i)]) return std::nullopt;
      const Value v = eval(*e.children[size_t(i)]);
      if (v.is_none()) return std::nullopt;
      if (v.kind() != Value::Kind::kInt) template_fail(e.line, "slice indices must be integers");
      return v.as_int();
    };
    const auto start = part(1), stop = part(2), step_opt = part(3);
    const int64_t step = step_opt.value_or(1);
    if (step == 0) template_fail(e.line, "slice step cannot be zero");
    const ValueList items = iterate(obj, e.line);
    const int64_t n = int64_t(items.size());
    auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
      if (!v) return dflt;
      int64_t x = *v < 0 ? *v + n : *v;
      return step > 0 ? std::clamp<int64_t>(x, 0, n) : std::clamp<int64_t>(x, -1, n - 1);
    };
    const int64_t b = clamp(start, step > 0 ? 0 : n - 1), en = clamp(stop, step > 0 ? n : -1);
    ValueList out;
    for (int64_t i = b; step > 0 ? i < en : i > en; i += step) out.push_back(items[size_t(i)]);
    if (obj.is_string()) {
      std::string s;
      for (const Value& c : out) s += c.as_string();
      return Value::string(s);
    }
    return Value::list(std::move(out));
  }

  Value unary(const Expr& e) {
    const Value v = eval(*e.children[0]);
    if (e.name == "not") return Value::boolean(!v.truthy());
    if (v.kind() == Value::Kind::kInt) {
      if (e.name == "-" && v.as_int() == INT64_MIN) template_fail(e.line, "integer overflow");
      return Value::integer(e.name == "-" ? -v.as_int() : v.as_int());
    }
    if (v.kind() == Value::Kind::kFloat) return Value::number(e.name == "-" ? -v.as_double() : v.as_double());
    template_fail(e.line, "bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      const Value l = eval(*e.children[0]);
      return l.truthy() ? eval(*e.children[1]) : l;
    }
    if (op == "or") {
      const Value l = eval(*e.children[0]);
      return l.truthy() ? l : eval(*e.children[1]);
    }
    const Value l = eval(*e.children[0]);
    const Value r = eval(*e.children[1]);
    if (op == "==") return Value::boolean(l.equals(r));
    if (op == "!=") return Value::boolean(!l.equals(r));
    if (op == "in") return Value::boolean(contains(r, l, e.line) != e.negated);
    if (op == "~") {
      const std::string a = l.str(), b = r.str();
      check_string_size(a.size(), b.size(), e.line);
      return Value::string(a + b);
    }
    if (op == "<" || op == ">" || op == "<=" || op == ">=") return compare(op, l, r, e.line);
    return arithmetic(op, l, r, e.line);
  }

  static bool contains(const Value& haystack, const Value& needle, int line) {
    if (haystack.is_string()) {
      if (!needle.is_string()) template_fail(line, "'in <string>' requires a string on the left");
      return haystack.as_string().find(needle.as_string()) != std::string::npos;
    }
    if (haystack.is_dict()) return needle.is_string() && haystack.entries().find(needle.as_string()) != nullptr;
    for (const Value& item : iterate(haystack, line)) {
      if (item.equals(needle)) return true;
    }
    return false;
  }

  static Value compare(const std::string& op, const Value& l, const Value& r, int line) {
    int c = 0;
    if (l.is_number() && r.is_number()) {
      c = l.as_double() < r.as_double() ? -1 : l.as_double() > r.as_double() ? 1 : 0;
    } else if (l.is_string() && r.is_string()) {
      c = l.as_string().compare(r.as_string());
    } else {
      template_fail(line, "'" + op + "' not supported between '" + l.type_name() + "' and '" + r.type_name() + "'");
    }
    const bool result = op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0;
    return Value::boolean(result);
  }

  Value arithmetic(const std::string& op, const Value& l, const Value& r, int line) {
    if (op == "+" && l.is_string() && r.is_string()) {
      check_string_size(l.as_string().size(), r.as_string().size(), line);
      return Value::string(l.as_string() + r.as_string());
    }
    if (op == "+" && l.is_list() && r.is_list()) {
      if (l.items().size() + r.items().size() > kMaxListItems) template_fail(line, "a list over the size limit");
      charge(l.items().size() + r.items().size(), line);
      ValueList items = l.items();
      items.insert(items.end(), r.items().begin(), r.items().end());
      return Value::list(std::move(items));
    }
    if (op == "*" && l.is_string() && r.kind() == Value::Kind::kInt) {
      size_t total = 0;
      if (r.as_int() > 0 && (__builtin_mul_overflow(l.as_string().size(), uint64_t(r.as_int()), &total) ||
                             total > limits_.max_output_bytes)) {
        template_fail(line, "string repetition exceeds the size limit");
      }
      charge(total, line);
      std::string out;
      for (int64_t i = 0; i < r.as_int(); ++i) out += l.as_string();
      return Value::string(out);
    }
    if (!l.is_number() || !r.is_number()) {
      template_fail(line, "unsupported operand types for " + op + ": '" + l.type_name() + "' and '" + r.type_name() + "'");
    }
    if (l.kind() == Value::Kind::kInt && r.kind() == Value::Kind::kInt && op != "/" && op != "**") {
      return integer_arithmetic(op, l.as_int(), r.as_int(), line);
    }
    const double a = l.as_double(), b = r.as_double();
    if ((op == "/" || op == "//" || op == "%") && b == 0.0) template_fail(line, "division by zero");
    if (op == "+") return Value::number(a + b);
    if (op == "-") return Value::number(a - b);
    if (op == "*") return Value::number(a * b);
    if (op == "/") return Value::number(a / b);
    if (op == "//") return Value::number(std::floor(a / b));
    if (op == "%") return Value::number(a - b * std::floor(a / b));
    if (op == "**") {
      const double p = std::pow(a, b);
      if (l.kind() == Value::Kind::kInt && r.kind() == Value::Kind::kInt && b >= 0 && std::fabs(p) < 9.0e18) {
        return Value::integer(int64_t(p));
      }
      return Value::number(p);
    }
    template_fail(line, "unknown operator " + op);
  }

  static Value integer_arithmetic(const std::string& op, int64_t a, int64_t b, int line) {
    int64_t out = 0;
    bool overflow = false;
    if (op == "+") {
      overflow = __builtin_add_overflow(a, b, &out);
    } else if (op == "-") {
      overflow = __builtin_sub_overflow(a, b, &out);
    } else if (op == "*") {
      overflow = __builtin_mul_overflow(a, b, &out);
    } else if (op == "//" || op == "%") {
      if (b == 0) template_fail(line, "division by zero");
      if (a == INT64_MIN && b == -1) template_fail(line, "integer overflow");
      int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {
        --q;
        m += b;
      }
      out = op == "//" ? q : m;
    }
    if (overflow) template_fail(line, "integer overflow");
    return Value::integer(out);
  }

  const RenderLimits& limits_;
  std::vector<std::unordered_map<std::string, Value>> scopes_;
  std::string out_;
  size_t macro_base_ = 0;  // inside a macro: its first scope (lookup skips the caller's)
  uint64_t steps_ = 0;
  int depth_ = 0;
};

}  // namespace

Template Template::parse(std::string_view source) {
  Template t;
  t.body_ = std::make_shared<const Body>(parse_pieces(split_template(source), RenderLimits{}.max_depth));
  return t;
}

std::string Template::render(const ValueDict& globals, const RenderLimits& limits) const {
  ValueDict all;
  add_global_functions(all);
  for (const auto& [k, v] : globals.items) all.set(k, v);
  try {
    return Renderer(all, limits).run(*body_);
  } catch (const ValueTooLarge& e) {
    throw TemplateError(e.what());
  }
}

}  // namespace tessera::jinja
