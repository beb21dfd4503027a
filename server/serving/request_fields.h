#pragma once
// Typed, validated reads of a request's JSON fields. Every field a request
// carries must be read (or explicitly refused) before finish(), which
// rejects anything left over: a field is implemented or refused with 400.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/serving/api_error.h"
#include "server/serving/bounded_json.h"

namespace tessera {

class RequestFields {
 public:
  explicit RequestFields(const Json& body);

  // Null counts as absent, as OpenAI clients send it for unset options.
  bool has(const std::string& key) const;
  const Json* raw(const std::string& key);
  std::optional<std::string> string(const std::string& key);
  std::optional<bool> boolean(const std::string& key);
  std::optional<int64_t> integer(const std::string& key, int64_t min, int64_t max);
  std::optional<double> number(const std::string& key, double min, double max);
  // A string or an array of strings.
  std::vector<std::string> strings(const std::string& key, size_t max_count);
  // Fields accepted for compatibility whose values change nothing here.
  void ignore(const std::string& key);
  // A field present with a value other than null is refused.
  void refuse(const std::string& key, const std::string& why);
  void finish() const;

 private:
  const Json& body_;
  std::set<std::string> read_;
};

}  // namespace tessera
