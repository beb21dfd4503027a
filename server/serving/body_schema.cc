#include "server/serving/body_schema.h"

#include <algorithm>
#include <stdexcept>

namespace tessera {

BodySchema& BodySchema::field(const std::string& name, Json schema, const std::string& description) {
  if (properties_.contains(name)) throw std::logic_error("body schema declares '" + name + "' twice");
  if (!description.empty()) schema["description"] = description;
  properties_[name] = std::move(schema);
  return *this;
}

BodySchema& BodySchema::fields_of(const BodySchema& other) {
  for (const auto& [name, schema] : other.properties_.items()) field(name, schema, "");
  return *this;
}

BodySchema& BodySchema::require(const std::string& name) {
  if (!properties_.contains(name)) throw std::logic_error("body schema requires undeclared '" + name + "'");
  required_.push_back(name);
  return *this;
}

const Json* BodySchema::find(const std::string& name) const {
  auto it = properties_.find(name);
  return it == properties_.end() ? nullptr : &*it;
}

namespace {

// The same schema, also accepting null (read as absent).
Json or_null(const Json& schema) {
  if (schema.contains("type") && schema["type"] == "null") return schema;
  if (schema.contains("type") && schema["type"].is_string() && !schema.contains("enum")) {
    Json out = schema;
    out["type"] = Json::array({schema["type"], "null"});
    return out;
  }
  if (schema.empty() || (schema.size() == 1 && schema.contains("description"))) return schema;  // anything
  Json inner = schema;
  Json out = Json::object();
  if (inner.contains("description")) {
    out["description"] = inner["description"];
    inner.erase("description");
  }
  out["anyOf"] = Json::array({std::move(inner), {{"type", "null"}}});
  return out;
}

}  // namespace

Json BodySchema::document() const {
  Json properties = Json::object();
  // A required field must be there, so null (absent) is not one of its values.
  for (const auto& [name, schema] : properties_.items()) {
    const bool required = std::find(required_.begin(), required_.end(), name) != required_.end();
    properties[name] = required ? schema : or_null(schema);
  }
  Json out = {{"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!required_.empty()) out["required"] = required_;
  return out;
}

namespace body {

Json string(const std::string& format_hint) {
  Json s = {{"type", "string"}};
  if (!format_hint.empty()) s["format"] = format_hint;
  return s;
}

Json one_of_strings(std::initializer_list<const char*> values) {
  Json e = Json::array();
  for (const char* v : values) e.push_back(v);
  return {{"type", "string"}, {"enum", std::move(e)}};
}

Json boolean() { return {{"type", "boolean"}}; }
Json integer(int64_t min, int64_t max) { return {{"type", "integer"}, {"minimum", min}, {"maximum", max}}; }
Json any_integer() { return {{"type", "integer"}}; }
Json number(double min, double max) { return {{"type", "number"}, {"minimum", min}, {"maximum", max}}; }
Json any_number() { return {{"type", "number"}}; }
Json object() { return {{"type", "object"}}; }

Json array_of(Json items, size_t max_items) {
  Json a = {{"type", "array"}, {"items", std::move(items)}};
  if (max_items) a["maxItems"] = max_items;
  return a;
}

Json non_empty(Json array) {
  array["minItems"] = 1;
  return array;
}

Json string_or_strings(size_t max_items) {
  return {{"anyOf", Json::array({{{"type", "string"}}, array_of(string(), max_items)})}};
}

Json any() { return Json::object(); }
Json ignored() { return {{"x-tessera-ignored", true}}; }
Json refused() { return {{"type", "null"}}; }

}  // namespace body
}  // namespace tessera
