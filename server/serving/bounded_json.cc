#include "server/serving/bounded_json.h"

#include <string>
#include <unordered_set>
#include <vector>

#include "server/serving/api_error.h"

namespace tessera {
namespace {

// Builds the document from SAX events. Members are appended to the ordered
// object's storage directly (its own insert searches linearly), with one
// hash set of names per open object to refuse duplicates.
class BoundedBuilder {
 public:
  explicit BoundedBuilder(const JsonLimits& limits) : limits_(limits) {}

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool v) { return put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string&) { return put(Json(v)); }
  bool string(std::string& v) { return put(Json(std::move(v))); }
  bool binary(Json::binary_t&) { return fail("binary values are not JSON"); }

  bool start_object(size_t) { return open(Json::object()); }
  bool start_array(size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(std::string& name) {
    Frame& f = stack_.back();
    if (f.members.size() >= limits_.max_object_members) {
      return fail("a JSON object has more than " + std::to_string(limits_.max_object_members) + " members");
    }
    if (!f.members.insert(name).second) return fail("the JSON object member '" + clip(name) + "' appears twice");
    pending_key_ = std::move(name);
    return true;
  }

  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception& e) {
    syntax_error_ = true;
    return fail(std::string("the request body is not valid JSON: ") + e.what());
  }

  Json take() { return std::move(root_); }
  const std::string& error() const { return error_; }
  bool syntax_error() const { return syntax_error_; }

 private:
  struct Frame {
    Json* value;
    std::unordered_set<std::string> members;  // objects only
  };

  static std::string clip(const std::string& s) { return s.size() > 64 ? s.substr(0, 64) + "..." : s; }

  bool fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  // Places a value at the current position; returns where it now lives.
  Json* place(Json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json& parent = *stack_.back().value;
    if (parent.is_array()) {
      auto& items = *parent.get_ptr<Json::array_t*>();
      if (items.size() >= limits_.max_array_length) return nullptr;
      items.push_back(std::move(v));
      return &items.back();
    }
    auto& storage = static_cast<Json::object_t::Container&>(*parent.get_ptr<Json::object_t*>());
    storage.emplace_back(std::move(pending_key_), std::move(v));
    return &storage.back().second;
  }

  bool put(Json&& v) {
    if (!place(std::move(v))) return array_too_long();
    return true;
  }

  bool open(Json&& container) {
    if (int(stack_.size()) >= limits_.max_depth) {
      return fail("the request JSON nests deeper than " + std::to_string(limits_.max_depth) + " levels");
    }
    Json* at = place(std::move(container));
    if (!at) return array_too_long();
    stack_.push_back(Frame{at, {}});
    return true;
  }

  bool close() {
    stack_.pop_back();
    return true;
  }

  bool array_too_long() {
    return fail("a JSON array has more than " + std::to_string(limits_.max_array_length) + " entries");
  }

  const JsonLimits& limits_;
  Json root_;
  std::vector<Frame> stack_;
  std::string pending_key_;
  std::string error_;
  bool syntax_error_ = false;
};

}  // namespace

BoundedJsonResult try_parse_bounded_json(std::string_view text, const JsonLimits& limits) {
  BoundedBuilder builder(limits);
  BoundedJsonResult result;
  const bool ok = Json::sax_parse(text.begin(), text.end(), &builder, nlohmann::detail::input_format_t::json, true);
  if (ok) {
    result.value = builder.take();
    return result;
  }
  result.error = builder.error().empty() ? "the request body is not valid JSON" : builder.error();
  result.over_limit = !builder.error().empty() && !builder.syntax_error();
  return result;
}

Json parse_bounded_json(std::string_view text, const JsonLimits& limits) {
  BoundedJsonResult result = try_parse_bounded_json(text, limits);
  if (!result.ok()) throw ApiError::invalid(result.error);
  return std::move(result.value);
}

}  // namespace tessera
