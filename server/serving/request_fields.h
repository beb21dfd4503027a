#pragma once
// Typed, validated reads of a request's JSON fields, each through the
// route's BodySchema: its type, bounds, enum and list length are the
// schema's (what /openapi.json publishes). Every field a request carries
// must be read (or explicitly refused) before finish(), which rejects
// anything left over: a field is implemented or refused with 400.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/serving/api_error.h"
#include "server/serving/body_schema.h"
#include "server/serving/bounded_json.h"

namespace tessera {

class RequestFields {
 public:
  RequestFields(const Json& body, const BodySchema& schema);

  // Null counts as absent, as OpenAI clients send it for unset options.
  bool has(const std::string& key) const;
  const Json* raw(const std::string& key);
  // One of the schema's `enum` values where it declares them.
  std::optional<std::string> string(const std::string& key);
  std::optional<bool> boolean(const std::string& key);
  // Within the schema's minimum and maximum (any value where it has none).
  std::optional<int64_t> integer(const std::string& key);
  std::optional<double> number(const std::string& key);
  // A string or an array of strings, at most the schema's maxItems.
  std::vector<std::string> strings(const std::string& key);
  // Fields accepted for compatibility whose values change nothing here.
  void ignore(const std::string& key);
  // A field present with a value other than null is refused.
  void refuse(const std::string& key, const std::string& why);
  // 400 for a field no read took; a declared field left unread is a bug
  // (std::logic_error, a 500).
  void finish() const;

 private:
  // The declared schema of `key`, whose type must be `type` (or any, for
  // an empty `type`); std::logic_error where the handler and schema differ.
  const Json& declared(const std::string& key, const char* type) const;
  // Marks `key` read; its value, or null when absent or null.
  const Json* take(const std::string& key);

  const Json& body_;
  const BodySchema& schema_;
  std::set<std::string> read_;
};

}  // namespace tessera
