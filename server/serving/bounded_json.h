#pragma once
// Request bodies parsed as JSON in time and memory linear in their size.
// The caps (nesting, array length, members per object) are enforced while
// parsing, so a body that breaks one costs no more than the bytes read up to
// that point. Duplicate member names are refused: two parsers reading the
// same body must not see different requests.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tessera {

using Json = nlohmann::ordered_json;

struct JsonLimits {
  int max_depth = 64;
  size_t max_array_length = 262144;
  size_t max_object_members = 4096;
};

// The parsed document; ApiError 400 naming the broken cap or the syntax error.
Json parse_bounded_json(std::string_view text, const JsonLimits& limits);

// The same parse without throwing: `value` holds the document, or `error`
// says why not and `over_limit` whether a cap (not the syntax) was broken.
struct BoundedJsonResult {
  Json value;
  std::string error;
  bool over_limit = false;
  bool ok() const { return error.empty(); }
};
BoundedJsonResult try_parse_bounded_json(std::string_view text, const JsonLimits& limits);

}  // namespace tessera
