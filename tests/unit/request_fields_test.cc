#include <gtest/gtest.h>

#include "server/serving/request_fields.h"

namespace tessera {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return std::to_string(e.status()) + " " + e.param() + ": " + e.what();
  }
  return "";
}

TEST(RequestFields, TypedReadsWithRangesAndNullAsAbsent) {
  const Json body = Json::parse(R"({"a": 1, "b": 0.5, "c": "x", "d": true, "e": null, "f": ["p", "q"], "g": 2.0})");
  RequestFields f(body);
  EXPECT_EQ(f.integer("a", 0, 10), 1);
  EXPECT_EQ(f.number("b", 0, 1), 0.5);
  EXPECT_EQ(f.string("c"), "x");
  EXPECT_EQ(f.boolean("d"), true);
  EXPECT_EQ(f.integer("e", 0, 10), std::nullopt);
  EXPECT_EQ(f.strings("f", 4), (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(f.integer("g", 0, 10), 2);  // integral floats are integers, as in Python clients
  f.finish();
}

TEST(RequestFields, BadValuesNameTheField) {
  const Json body = Json::parse(R"({"t": 3, "s": 5, "n": 1.5, "l": ["a", 1], "big": 18446744073709551615})");
  RequestFields f(body);
  EXPECT_EQ(error_of([&] { f.number("t", 0, 2); }), "400 t: 't' must be between 0 and 2");
  EXPECT_EQ(error_of([&] { f.string("s"); }), "400 s: 's' must be a string");
  EXPECT_EQ(error_of([&] { f.integer("n", 0, 5); }), "400 n: 'n' must be an integer");
  EXPECT_NE(error_of([&] { f.strings("l", 5); }).find("array of strings"), std::string::npos);
  EXPECT_NE(error_of([&] { f.integer("big", 0, 5); }).find("between"), std::string::npos);
}

TEST(RequestFields, UnreadAndRefusedFieldsAreRejected) {
  const Json body = Json::parse(R"({"model": "m", "surprise": 1, "suffix": "x"})");
  RequestFields f(body);
  f.string("model");
  EXPECT_NE(error_of([&] { f.refuse("suffix", "no"); }).find("'suffix' is not supported"), std::string::npos);
  EXPECT_EQ(error_of([&] { f.finish(); }), "400 surprise: unrecognized request argument supplied: surprise");
  EXPECT_EQ(error_of([&] { f.strings("stop", 1); }), "");
  const Json many = Json::parse(R"({"stop": ["a", "b", "c"]})");
  RequestFields g(many);
  EXPECT_NE(error_of([&] { g.strings("stop", 2); }).find("at most 2"), std::string::npos);
}

TEST(RequestFields, JsonBodiesAreBoundedInDepthAndMustParse) {
  const JsonLimits limits{.max_depth = 64};
  EXPECT_NO_THROW(parse_bounded_json(std::string(64, '[') + std::string(64, ']'), limits));
  EXPECT_NE(error_of([&] { parse_bounded_json(std::string(65, '[') + std::string(65, ']'), limits); }).find("deeper"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_bounded_json("{\"a\": ", limits); }).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of([] { RequestFields f(Json::array()); }).find("JSON object"), std::string::npos);
}

TEST(ApiError, SerialisesAsTheOpenAiErrorObject) {
  const ApiError e(429, "rate_limit_error", "slow down", "", "rate_limit_exceeded");
  EXPECT_EQ(e.to_json().dump(),
            R"({"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}})");
}

}  // namespace
}  // namespace tessera
