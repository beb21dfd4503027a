#include "server/serving/bounded_json.h"

#include <gtest/gtest.h>

#include "server/serving/api_error.h"

namespace tessera {
namespace {

std::string error_of(const std::string& text, const JsonLimits& limits) {
  try {
    parse_bounded_json(text, limits);
  } catch (const ApiError& e) {
    return e.what();
  }
  return "";
}

TEST(BoundedJson, BuildsTheSameDocumentAsTheLibraryParser) {
  const std::string text =
      R"({"z": 1, "a": [1, -2, 3.5, "x\u00e9", true, null, {"k": []}], "m": {"b": 18446744073709551615, "a": {}}})";
  const Json j = parse_bounded_json(text, {});
  EXPECT_EQ(j, Json::parse(text));
  EXPECT_EQ(j.dump(), Json::parse(text).dump());  // member order kept
  EXPECT_EQ(j.begin().key(), "z");
}

TEST(BoundedJson, CapsAreEnforcedWhileParsing) {
  const JsonLimits limits{.max_depth = 4, .max_array_length = 3, .max_object_members = 2};
  EXPECT_EQ(error_of("[[[[1]]]]", limits), "");
  EXPECT_NE(error_of("[[[[[1]]]]]", limits).find("deeper than 4"), std::string::npos);
  EXPECT_EQ(error_of("[1,2,3]", limits), "");
  EXPECT_NE(error_of("[1,2,3,4]", limits).find("more than 3 entries"), std::string::npos);
  EXPECT_NE(error_of("[[],[],[],[]]", limits).find("more than 3 entries"), std::string::npos);
  EXPECT_EQ(error_of(R"({"a":1,"b":2})", limits), "");
  EXPECT_NE(error_of(R"({"a":1,"b":2,"c":3})", limits).find("more than 2 members"), std::string::npos);
  // A cap stops the parse at once, even if the rest of the text is broken.
  EXPECT_NE(error_of("[1,2,3,4,@@@", limits).find("more than 3 entries"), std::string::npos);
}

TEST(BoundedJson, DuplicateMembersAndBadSyntaxAreRefused) {
  EXPECT_NE(error_of(R"({"model":"a","model":"b"})", {}).find("'model' appears twice"), std::string::npos);
  EXPECT_EQ(error_of(R"({"a":{"x":1},"b":{"x":1}})", {}), "");  // same name in different objects
  EXPECT_NE(error_of(R"({"a": )", {}).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("", {}).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("[1] [2]", {}).find("not valid JSON"), std::string::npos);
}

}  // namespace
}  // namespace tessera
