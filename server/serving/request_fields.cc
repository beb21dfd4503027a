#include "server/serving/request_fields.h"

#include "server/serving/generation_request.h"

#include <cmath>
#include <cstdio>

namespace tessera {

RequestFields::RequestFields(const Json& body) : body_(body) {
  if (!body.is_object()) throw ApiError::invalid("the request body must be a JSON object");
}

bool RequestFields::has(const std::string& key) const {
  auto it = body_.find(key);
  return it != body_.end() && !it->is_null();
}

const Json* RequestFields::raw(const std::string& key) {
  read_.insert(key);
  auto it = body_.find(key);
  return it == body_.end() || it->is_null() ? nullptr : &*it;
}

std::optional<std::string> RequestFields::string(const std::string& key) {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) throw ApiError::invalid("'" + key + "' must be a string", key);
  return v->get<std::string>();
}

std::optional<bool> RequestFields::boolean(const std::string& key) {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) throw ApiError::invalid("'" + key + "' must be true or false", key);
  return v->get<bool>();
}

std::optional<int64_t> RequestFields::integer(const std::string& key, int64_t min, int64_t max) {
  const Json* v = raw(key);
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

std::optional<double> RequestFields::number(const std::string& key, double min, double max) {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  if (!v->is_number()) throw ApiError::invalid("'" + key + "' must be a number", key);
  return checked_number(key, v->get<double>(), min, max);
}

std::vector<std::string> RequestFields::strings(const std::string& key, size_t max_count) {
  const Json* v = raw(key);
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

void RequestFields::ignore(const std::string& key) { read_.insert(key); }

void RequestFields::refuse(const std::string& key, const std::string& why) {
  read_.insert(key);
  if (has(key)) throw ApiError::invalid("'" + key + "' is not supported: " + why, key);
}

void RequestFields::finish() const {
  for (const auto& [key, value] : body_.items()) {
    if (!read_.count(key)) throw ApiError::invalid("unrecognized request argument supplied: " + key, key);
  }
}

}  // namespace tessera
