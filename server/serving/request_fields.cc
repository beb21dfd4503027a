#include "server/serving/request_fields.h"

#include "server/serving/generation_request.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace tessera {

RequestFields::RequestFields(const Json& body, const BodySchema& schema) : body_(body), schema_(schema) {
  if (!body.is_object()) throw ApiError::invalid("the request body must be a JSON object");
}

const Json& RequestFields::declared(const std::string& key, const char* type) const {
  const Json* s = schema_.find(key);
  if (!s) throw std::logic_error("the handler reads '" + key + "', which its route's schema does not declare");
  const std::string want(type);
  if (!want.empty()) {
    const bool strings = want == "strings" && s->contains("anyOf");
    if (!strings && s->value("type", "") != want) {
      throw std::logic_error("the handler reads '" + key + "' as " + want + "; its route's schema says otherwise");
    }
  }
  return *s;
}

bool RequestFields::has(const std::string& key) const {
  auto it = body_.find(key);
  return it != body_.end() && !it->is_null();
}

const Json* RequestFields::raw(const std::string& key) {
  declared(key, "");
  return take(key);
}

const Json* RequestFields::take(const std::string& key) {
  read_.insert(key);
  auto it = body_.find(key);
  return it == body_.end() || it->is_null() ? nullptr : &*it;
}

std::optional<std::string> RequestFields::string(const std::string& key) {
  const Json& schema = declared(key, "string");
  const Json* v = take(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw ApiError::invalid("'" + key + "' must be a string", key);
  if (schema.contains("enum")) {
    std::string names;
    for (const Json& e : schema["enum"]) {
      if (e == *v) return v->get<std::string>();
      names += (names.empty() ? "" : ", ") + e.get<std::string>();
    }
    throw ApiError::invalid("'" + key + "' must be one of " + names, key);
  }
  return v->get<std::string>();
}

std::optional<bool> RequestFields::boolean(const std::string& key) {
  declared(key, "boolean");
  const Json* v = take(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw ApiError::invalid("'" + key + "' must be true or false", key);
  return v->get<bool>();
}

std::optional<int64_t> RequestFields::integer(const std::string& key) {
  const Json& schema = declared(key, "integer");
  const int64_t min = schema.value("minimum", std::numeric_limits<int64_t>::min());
  const int64_t max = schema.value("maximum", std::numeric_limits<int64_t>::max());
  const Json* v = take(key);
  if (!v) return std::nullopt;
  int64_t x = 0;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX)) {
      throw ApiError::invalid("'" + key + "' must be between " + std::to_string(min) + " and " + std::to_string(max), key);
    }
    x = v->get<int64_t>();
  } else if (v->is_number_float() && std::nearbyint(v->get<double>()) == v->get<double>() && std::fabs(v->get<double>()) < 9e18) {
    x = int64_t(v->get<double>());
  } else {
    throw ApiError::invalid("'" + key + "' must be an integer", key);
  }
  return checked_integer(key, x, min, max);
}

std::optional<double> RequestFields::number(const std::string& key) {
  const Json& schema = declared(key, "number");
  const double min = schema.value("minimum", -std::numeric_limits<double>::max());
  const double max = schema.value("maximum", std::numeric_limits<double>::max());
  const Json* v = take(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw ApiError::invalid("'" + key + "' must be a number", key);
  return checked_number(key, v->get<double>(), min, max);
}

std::vector<std::string> RequestFields::strings(const std::string& key) {
  const Json& schema = declared(key, "strings");
  size_t max_count = std::numeric_limits<size_t>::max();
  for (const Json& branch : schema["anyOf"]) max_count = branch.value("maxItems", max_count);
  const Json* v = take(key);
  if (!v) return {};
  std::vector<std::string> out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    for (const auto& s : *v) {
      if (!s.is_string()) throw ApiError::invalid("'" + key + "' must be a string or an array of strings", key);
      out.push_back(s.get<std::string>());
    }
  } else {
    throw ApiError::invalid("'" + key + "' must be a string or an array of strings", key);
  }
  if (out.size() > max_count) {
    throw ApiError::invalid("'" + key + "' has " + std::to_string(out.size()) + " entries; at most " +
                                std::to_string(max_count) + " are allowed", key);
  }
  return out;
}

void RequestFields::ignore(const std::string& key) { raw(key); }

void RequestFields::refuse(const std::string& key, const std::string& why) {
  raw(key);
  if (has(key)) throw ApiError::invalid("'" + key + "' is not supported: " + why, key);
}

void RequestFields::finish() const {
  for (const auto& [key, value] : body_.items()) {
    if (!read_.count(key)) throw ApiError::invalid("unrecognized request argument supplied: " + key, key);
  }
  for (const auto& [key, schema] : schema_.properties().items()) {
    if (!read_.count(key)) throw std::logic_error("the handler never reads '" + key + "', which its route's schema declares");
  }
}

}  // namespace tessera
