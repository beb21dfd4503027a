#pragma once
// The JSON body a route accepts, declared once as JSON Schema: RequestFields
// reads every field through it (types, bounds, enums and list lengths come
// from here), and /openapi.json publishes it, so the document is the
// validation. A handler that reads a field its schema does not declare, or
// leaves a declared field unread, is a bug both ways round: RequestFields
// ends that request with a 500, which the route's tests and the schema
// fuzzer see at once.
#include <string>
#include <vector>

#include "server/serving/bounded_json.h"

namespace tessera {

class BodySchema {
 public:
  // A field, its schema (without null: every field may be null, which
  // counts as absent) and what it does.
  BodySchema& field(const std::string& name, Json schema, const std::string& description);
  // Another schema's fields, as they are.
  BodySchema& fields_of(const BodySchema& other);
  BodySchema& require(const std::string& name);

  // The declared schema of `name`, or null.
  const Json* find(const std::string& name) const;
  const Json& properties() const { return properties_; }
  // The object schema /openapi.json publishes: each field but the
  // required ones also null, required fields listed, no other fields.
  Json document() const;

 private:
  Json properties_ = Json::object();
  std::vector<std::string> required_;
};

// Schema fragments the route declarations share.
namespace body {
Json string(const std::string& format_hint = "");
Json one_of_strings(std::initializer_list<const char*> values);
Json boolean();
Json integer(int64_t min, int64_t max);
Json any_integer();
Json number(double min, double max);
Json any_number();
Json object();
Json array_of(Json items, size_t max_items = 0);
// The same array schema, at least one item.
Json non_empty(Json array);
// A string, or an array of at most `max_items` strings.
Json string_or_strings(size_t max_items);
// Any JSON value; what it must be is checked where it is read.
Json any();
// Accepted for compatibility; its value changes nothing here.
Json ignored();
// Refused unless null (a 400 naming it).
Json refused();
}  // namespace body

}  // namespace tessera
