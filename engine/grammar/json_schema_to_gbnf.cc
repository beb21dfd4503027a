#include "engine/grammar/json_schema_to_gbnf.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "engine/grammar/grammar.h"
#include "engine/grammar/gbnf_text.h"
#include "engine/grammar/integer_range.h"
#include "engine/grammar/number_range.h"
#include "engine/grammar/regex_to_gbnf.h"

namespace tessera::grammar {
namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxDepth = 64;
constexpr uint64_t kMaxCount = 1000;

// The rules of free JSON but `ws`, which json_value_rules() defines.
const char* const kPrimitiveRules = R"(
json-char ::= [^"\\\x00-\x1F\x7F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-string ::= "\"" json-char* "\""
json-int ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
json-number ::= json-int ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?
json-boolean ::= "true" | "false"
json-null ::= "null"
json-value ::= json-object | json-array | json-string | json-number | json-boolean | json-null
json-object ::= "{" ws ( json-string ws ":" ws json-value ws ( "," ws json-string ws ":" ws json-value ws )* )? "}"
json-array ::= "[" ws ( json-value ws ( "," ws json-value ws )* )? "]"
)";

const std::set<std::string> kAnnotations = {"title", "description", "examples", "default", "$schema", "$id", "$comment",
                                            "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "strict", "name"};

class SchemaConverter {
 public:
  // Rules get names starting with `prefix`, so several schemas share a grammar.
  SchemaConverter(const Json& root, std::string prefix) : root_(root), prefix_(std::move(prefix)) {}

  // Defines `name` as the schema's documents; returns every rule but the
  // shared primitives.
  std::string convert(const std::string& name) {
    const std::string top = visit(root_, "/", 0);
    return name + " ::= " + top + "\n" + body_;
  }

 private:
  [[noreturn]] static void refuse(const std::string& path, const std::string& what) {
    throw GrammarError("JSON schema at '" + path + "': " + what);
  }

  std::string new_rule(const std::string& text) {
    const std::string name = prefix_ + std::to_string(rule_count_++);
    define(name, text);
    return name;
  }
  void define(const std::string& name, const std::string& text) { body_ += name + " ::= " + text + "\n"; }

  static std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
    return out;
  }

  // A GBNF expression for the JSON texts `schema` accepts.
  std::string visit(const Json& schema, const std::string& path, int depth) {
    if (depth > kMaxDepth) refuse(path, "nests deeper than " + std::to_string(kMaxDepth) + " levels");
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) refuse(path, "the schema 'false' accepts nothing");
      return "json-value";
    }
    if (!schema.is_object()) refuse(path, "a schema must be an object or a boolean");
    if (schema.contains("$ref")) return reference(schema, path, depth);
    if (schema.contains("const")) return gbnf_literal(schema["const"].dump());
    if (schema.contains("enum")) return enumeration(schema["enum"], path);
    for (const char* key : {"anyOf", "oneOf"}) {
      if (schema.contains(key)) return alternatives(schema[key], path + key, depth);
    }
    if (schema.contains("allOf")) {
      const Json& all = schema["allOf"];
      if (!all.is_array() || all.size() != 1) refuse(path, "'allOf' is supported only with one schema");
      return visit(all[0], path + "allOf/0", depth + 1);
    }
    if (!schema.contains("type")) {
      if (schema.contains("properties") || schema.contains("additionalProperties")) return object(schema, path, depth);
      if (schema.contains("items") || schema.contains("prefixItems")) return array(schema, path, depth);
      check_keywords(schema, path, {});
      return "json-value";
    }
    const Json& type = schema["type"];
    if (type.is_string()) return typed(schema, type.get<std::string>(), path, depth);
    if (!type.is_array() || type.empty()) refuse(path, "'type' must be a string or a non-empty list");
    std::vector<std::string> alts;
    for (const Json& t : type) {
      if (!t.is_string()) refuse(path, "'type' entries must be strings");
      alts.push_back(typed(schema, t.get<std::string>(), path, depth));
    }
    return "( " + join(alts, " | ") + " )";
  }

  void check_keywords(const Json& schema, const std::string& path, const std::set<std::string>& allowed) {
    for (const auto& [key, value] : schema.items()) {
      if (key == "type" || kAnnotations.count(key) || allowed.count(key)) continue;
      refuse(path, "the keyword '" + key + "' is not supported here");
    }
  }

  // A reference is one level deeper than where it is used: a chain of
  // references spends the same depth budget as nested schemas.
  std::string reference(const Json& schema, const std::string& path, int depth) {
    const std::string ref = schema["$ref"].is_string() ? schema["$ref"].get<std::string>() : "";
    if (auto found = refs_.find(ref); found != refs_.end()) return found->second;
    const Json* target = nullptr;
    if (ref == "#") {
      target = &root_;
    } else {
      for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
        const std::string p = prefix;
        if (ref.rfind(p, 0) == 0) {
          const std::string container = p.substr(2, p.size() - 3);
          const std::string name = ref.substr(p.size());
          if (root_.contains(container) && root_[container].contains(name)) target = &root_[container][name];
        }
      }
    }
    if (!target) refuse(path, "'$ref' '" + ref + "' is not '#' or a name under '#/$defs' or '#/definitions'");
    // Named before it is visited, so a schema that refers to itself ends.
    const std::string name = prefix_ + std::to_string(rule_count_++);
    refs_.emplace(ref, name);
    define(name, visit(*target, ref, depth + 1));
    return name;
  }

  std::string enumeration(const Json& values, const std::string& path) {
    if (!values.is_array() || values.empty()) refuse(path, "'enum' must be a non-empty list");
    std::vector<std::string> alts;
    for (const Json& v : values) alts.push_back(gbnf_literal(v.dump()));
    return "( " + join(alts, " | ") + " )";
  }

  std::string alternatives(const Json& list, const std::string& path, int depth) {
    if (!list.is_array() || list.empty()) refuse(path, "must be a non-empty list of schemas");
    std::vector<std::string> alts;
    for (size_t i = 0; i < list.size(); ++i) alts.push_back(visit(list[i], path + "/" + std::to_string(i), depth + 1));
    return "( " + join(alts, " | ") + " )";
  }

  std::string typed(const Json& schema, const std::string& type, const std::string& path, int depth) {
    if (type == "object") return object(schema, path, depth);
    if (type == "array") return array(schema, path, depth);
    if (type == "string") return string(schema, path);
    if (type == "integer") return integer(schema, path);
    if (type == "number") return number(schema, path);
    if (type == "boolean") return "json-boolean";
    if (type == "null") return "json-null";
    refuse(path, "unknown type '" + type + "'");
  }

  // Keys in the order the schema lists them, the optional ones each
  // skippable: rest_i is what may follow once something was written.
  std::string object(const Json& schema, const std::string& path, int depth) {
    check_keywords(schema, path, {"properties", "required", "additionalProperties", "maxProperties", "minProperties"});
    const Json empty = Json::object();
    const Json& props = schema.contains("properties") ? schema["properties"] : empty;
    if (!props.is_object()) refuse(path, "'properties' must be an object");
    std::set<std::string> required;
    if (schema.contains("required")) {
      if (!schema["required"].is_array()) refuse(path, "'required' must be a list");
      for (const Json& r : schema["required"]) {
        if (!r.is_string()) refuse(path, "'required' entries must be strings");
        if (!props.contains(r.get<std::string>())) refuse(path, "'required' names '" + r.get<std::string>() + "', which is not in 'properties'");
        required.insert(r.get<std::string>());
      }
    }
    if (count(schema, "minProperties", path, 0) > required.size()) {
      refuse(path, "'minProperties' above the number of required properties is not supported");
    }
    std::string extra;  // one more key and value, when additional properties are allowed
    if (schema.contains("additionalProperties")) {
      const Json& ap = schema["additionalProperties"];
      if (!(ap.is_boolean() && !ap.get<bool>())) {
        extra = new_rule("json-string ws \":\" ws " + visit(ap, path + "additionalProperties", depth + 1) + " ws");
      }
    }
    // maxProperties bounds the additional keys so that even an object with
    // every listed property stays within it.
    const uint64_t max_props = count(schema, "maxProperties", path, UINT64_MAX);
    if (max_props < required.size()) refuse(path, "'maxProperties' is below the number of required properties");
    uint64_t max_extra = UINT64_MAX;
    if (max_props != UINT64_MAX) max_extra = max_props > props.size() ? max_props - props.size() : 0;
    if (max_props != UINT64_MAX && props.size() > max_props) {
      refuse(path, "'maxProperties' below the number of listed properties is not supported");
    }
    if (max_extra == 0) extra.clear();
    std::vector<std::pair<std::string, bool>> pairs;  // rule, required
    for (const auto& [key, sub] : props.items()) {
      const std::string value = visit(sub, path + "properties/" + key + "/", depth + 1);
      pairs.emplace_back(new_rule(gbnf_literal(Json(key).dump()) + " ws \":\" ws " + value + " ws"), required.count(key) > 0);
    }
    // after[i]: the rest from property i on, something already written.
    std::vector<std::string> after(pairs.size() + 1), first(pairs.size() + 1);
    const std::string more = max_extra == UINT64_MAX ? "*" : "{0," + std::to_string(max_extra) + "}";
    const std::string more_after_one = max_extra == UINT64_MAX ? "*" : "{0," + std::to_string(max_extra - 1) + "}";
    after[pairs.size()] = extra.empty() ? "\"\"" : new_rule("( \",\" ws " + extra + " )" + more);
    first[pairs.size()] = extra.empty() ? "\"\"" : new_rule("( " + extra + " ( \",\" ws " + extra + " )" + more_after_one + " )?");
    for (size_t i = pairs.size(); i-- > 0;) {
      const auto& [pair, is_required] = pairs[i];
      std::string a = "\",\" ws " + pair + " " + after[i + 1];
      std::string f = pair + " " + after[i + 1];
      if (!is_required) {
        a += " | " + after[i + 1];
        f += " | " + first[i + 1];
      }
      after[i] = new_rule(a);
      first[i] = new_rule(f);
    }
    return new_rule("\"{\" ws " + first[0] + " \"}\"");
  }

  static uint64_t count(const Json& schema, const char* key, const std::string& path, uint64_t fallback) {
    if (!schema.contains(key)) return fallback;
    const Json& v = schema[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) refuse(path, std::string("'") + key + "' must be a non-negative integer");
    if (v.get<uint64_t>() > kMaxCount) refuse(path, std::string("'") + key + "' above " + std::to_string(kMaxCount) + " is not supported");
    return v.get<uint64_t>();
  }

  static std::string repeat_count(uint64_t min, uint64_t max) {
    if (max == UINT64_MAX) return min == 0 ? "*" : "{" + std::to_string(min) + ",}";
    return min == max ? "{" + std::to_string(min) + "}" : "{" + std::to_string(min) + "," + std::to_string(max) + "}";
  }

  // Prefix items are positional; further items follow them; the count stays
  // within [minItems, maxItems].
  std::string array(const Json& schema, const std::string& path, int depth) {
    check_keywords(schema, path, {"items", "prefixItems", "minItems", "maxItems"});
    std::vector<std::string> prefix;
    if (schema.contains("prefixItems")) {
      const Json& p = schema["prefixItems"];
      if (!p.is_array()) refuse(path, "'prefixItems' must be a list");
      for (size_t i = 0; i < p.size(); ++i) prefix.push_back(visit(p[i], path + "prefixItems/" + std::to_string(i) + "/", depth + 1));
    }
    const uint64_t min = count(schema, "minItems", path, 0);
    const uint64_t max = count(schema, "maxItems", path, UINT64_MAX);
    if (max < min) refuse(path, "'maxItems' is below 'minItems'");
    std::string item = "json-value";
    bool more = true;
    if (schema.contains("items")) {
      const Json& items = schema["items"];
      if (items.is_boolean() && !items.get<bool>()) more = false;
      else item = visit(items, path + "items/", depth + 1);
    }
    const uint64_t fixed = std::min<uint64_t>(prefix.size(), max);
    if (!more && min > fixed) refuse(path, "'minItems' needs more items than 'prefixItems' allows");
    // A rule, so the item's text appears once however deep arrays nest.
    const std::string unit = new_rule(item + " ws");
    // The further items once `i` items were written.
    auto further = [&](uint64_t i) -> std::string {
      if (!more || max <= i) return "";
      const uint64_t a = min > i ? min - i : 0;
      const uint64_t b = max == UINT64_MAX ? UINT64_MAX : max - i;
      if (i > 0) return "( \",\" ws " + unit + " )" + repeat_count(a, b);
      std::string s = unit;
      if (b != 1) s += " ( \",\" ws " + unit + " )" + repeat_count(a > 0 ? a - 1 : 0, b == UINT64_MAX ? b : b - 1);
      return a == 0 ? "( " + s + " )?" : s;
    };
    std::string body = further(fixed);
    for (uint64_t i = fixed; i-- > 0;) {
      const std::string here = (i ? "\",\" ws " : "") + prefix[size_t(i)] + " ws" + (body.empty() ? "" : " " + body);
      body = i < min ? here : "( " + here + " )?";
    }
    return new_rule("\"[\" ws " + (body.empty() ? "" : body + " ") + "\"]\"");
  }

  std::string string(const Json& schema, const std::string& path) {
    check_keywords(schema, path, {"minLength", "maxLength", "pattern", "format"});
    if (schema.contains("pattern")) {
      if (!schema["pattern"].is_string()) refuse(path, "'pattern' must be a string");
      if (schema.contains("format") || schema.contains("minLength") || schema.contains("maxLength")) {
        refuse(path, "'pattern' together with 'format' or a length is not supported");
      }
      return new_rule("\"\\\"\" " + regex_to_gbnf_expression(schema["pattern"].get<std::string>(), true) + " \"\\\"\"");
    }
    if (schema.contains("format")) {
      if (schema.contains("minLength") || schema.contains("maxLength")) refuse(path, "'format' together with a length is not supported");
      return new_rule("\"\\\"\" " + format(schema["format"], path) + " \"\\\"\"");
    }
    const uint64_t min = count(schema, "minLength", path, 0);
    const uint64_t max = count(schema, "maxLength", path, UINT64_MAX);
    if (max < min) refuse(path, "'maxLength' is below 'minLength'");
    if (min == 0 && max == UINT64_MAX) return "json-string";
    const std::string reps = max == UINT64_MAX ? "{" + std::to_string(min) + ",}" : "{" + std::to_string(min) + "," + std::to_string(max) + "}";
    return new_rule("\"\\\"\" json-char" + reps + " \"\\\"\"");
  }

  static std::string ipv4() {
    const std::string octet = "( " + integer_range_gbnf(0, 255) + " )";
    return octet + " \".\" " + octet + " \".\" " + octet + " \".\" " + octet;
  }

  // A DNS label (RFC 1123): letters, digits and inner hyphens, 63 at most.
  static inline const std::string kHostLabel = "[a-zA-Z0-9] ( [a-zA-Z0-9-]{0,61} [a-zA-Z0-9] )?";

  std::string format(const Json& f, const std::string& path) {
    const std::string name = f.is_string() ? f.get<std::string>() : "";
    static const std::map<std::string, std::string> formats = {
        {"date", "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] )"},
        {"time", "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,6} )? "
                 "( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )"},
        {"uuid", "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12}"},
        {"email", "[a-zA-Z0-9._%+-]{1,64} \"@\" [a-zA-Z0-9-]{1,63} ( \".\" [a-zA-Z0-9-]{1,63} ){0,4} \".\" [a-zA-Z]{2,24}"},
        {"ipv4", ipv4()},
        {"hostname", "( " + kHostLabel + " ) ( \".\" " + kHostLabel + " ){0,126}"},
    };
    if (name == "date-time") return "( " + formats.at("date") + " ) \"T\" ( " + formats.at("time") + " )";
    auto found = formats.find(name);
    if (found == formats.end()) refuse(path, "the string format '" + name + "' is not supported (date, time, date-time, uuid, email, ipv4, hostname are)");
    return found->second;
  }

  // A bound from `key` and its exclusive form: `exclusiveMinimum` as a
  // number (draft 6 on) or as a flag on `minimum` (draft 4).
  static std::optional<std::pair<double, bool>> bound(const Json& schema, const char* key, const char* exclusive_key,
                                                      const std::string& path) {
    std::optional<std::pair<double, bool>> out;
    auto number_at = [&](const char* k) {
      if (!schema[k].is_number()) refuse(path, std::string("'") + k + "' must be a number");
      const double v = schema[k].get<double>();
      if (!(std::fabs(v) <= 999999999999999.0)) refuse(path, std::string("'") + k + "' beyond 15 digits is not supported");
      return v;
    };
    if (schema.contains(key)) out = std::make_pair(number_at(key), false);
    if (schema.contains(exclusive_key)) {
      const Json& e = schema[exclusive_key];
      if (e.is_boolean()) {
        if (!out && e.get<bool>()) refuse(path, std::string("'") + exclusive_key + "': true needs '" + key + "'");
        if (out) out->second = e.get<bool>();
      } else {
        const double v = number_at(exclusive_key);
        const bool tighter = std::string(key) == "minimum" ? !out || v >= out->first : !out || v <= out->first;
        if (tighter) out = std::make_pair(v, true);
      }
    }
    return out;
  }

  std::string integer(const Json& schema, const std::string& path) {
    check_keywords(schema, path, {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"});
    if (schema.contains("multipleOf") && !(schema["multipleOf"].is_number() && schema["multipleOf"].get<double>() == 1.0)) {
      refuse(path, "'multipleOf' other than 1 is not supported on integers");
    }
    const auto lo_bound = bound(schema, "minimum", "exclusiveMinimum", path);
    const auto hi_bound = bound(schema, "maximum", "exclusiveMaximum", path);
    if (!lo_bound && !hi_bound) return "json-int";
    // The smallest and largest integers inside the bounds.
    int64_t lo = -999999999999999, hi = 999999999999999;
    if (lo_bound) lo = int64_t(lo_bound->second ? std::floor(lo_bound->first) + 1 : std::ceil(lo_bound->first));
    if (hi_bound) hi = int64_t(hi_bound->second ? std::ceil(hi_bound->first) - 1 : std::floor(hi_bound->first));
    if (hi < lo) refuse(path, "the bounds hold no integer");
    return new_rule(integer_range_gbnf(lo, hi));
  }

  // Numbers with bounds or a decimal 'multipleOf' (0.01: two digits after
  // the point) are written without an exponent.
  std::string number(const Json& schema, const std::string& path) {
    check_keywords(schema, path, {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"});
    int fraction_digits = 16;
    if (schema.contains("multipleOf")) {
      const Json& m = schema["multipleOf"];
      fraction_digits = -1;
      for (int n = 0; n <= 16 && m.is_number(); ++n) {
        if (std::fabs(m.get<double>() * std::pow(10.0, n) - 1.0) < 1e-9) fraction_digits = n;
      }
      if (fraction_digits < 0) refuse(path, "'multipleOf' on a number is supported only as 1, 0.1, 0.01, ... (digits after the point)");
    }
    const auto lo = bound(schema, "minimum", "exclusiveMinimum", path);
    const auto hi = bound(schema, "maximum", "exclusiveMaximum", path);
    if (!lo && !hi && !schema.contains("multipleOf")) return "json-number";
    auto whole = [&](const std::optional<std::pair<double, bool>>& b, const char* key) -> std::optional<NumberBound> {
      if (!b) return std::nullopt;
      if (b->first != std::floor(b->first)) refuse(path, std::string("'") + key + "' on a number is supported only as a whole number");
      return NumberBound{int64_t(b->first), b->second};
    };
    try {
      return new_rule(number_range_gbnf(whole(lo, "minimum"), whole(hi, "maximum"), fraction_digits));
    } catch (const GrammarError& e) {
      refuse(path, e.what());
    }
  }

  const Json& root_;
  std::string body_;
  size_t rule_count_ = 0;
  std::map<std::string, std::string> refs_;
  std::string prefix_;
};

}  // namespace

std::string json_schema_to_gbnf(const Json& schema, const std::string& whitespace) {
  return SchemaConverter(schema, "s").convert("root") + json_value_rules(whitespace);
}

std::string json_schema_rules(const Json& schema, const std::string& name) {
  return SchemaConverter(schema, name + "-").convert(name);
}

std::string json_value_rules(const std::string& whitespace) { return "ws ::= " + whitespace + kPrimitiveRules; }

std::string json_object_gbnf(const std::string& whitespace) { return "root ::= json-object\n" + json_value_rules(whitespace); }

}  // namespace tessera::grammar
