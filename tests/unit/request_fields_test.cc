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

BodySchema schema_of_the_tests() {
  using namespace body;
  BodySchema s;
  s.field("a", integer(0, 10), "").field("b", number(0, 1), "").field("c", string(), "").field("d", boolean(), "");
  s.field("e", integer(0, 10), "").field("f", string_or_strings(4), "").field("g", integer(0, 10), "");
  return s;
}

TEST(RequestFields, TypedReadsWithTheSchemasRangesAndNullAsAbsent) {
  const Json body = Json::parse(R"({"a": 1, "b": 0.5, "c": "x", "d": true, "e": null, "f": ["p", "q"], "g": 2.0})");
  const BodySchema schema = schema_of_the_tests();
  RequestFields f(body, schema);
  EXPECT_EQ(f.integer("a"), 1);
  EXPECT_EQ(f.number("b"), 0.5);
  EXPECT_EQ(f.string("c"), "x");
  EXPECT_EQ(f.boolean("d"), true);
  EXPECT_EQ(f.integer("e"), std::nullopt);
  EXPECT_EQ(f.strings("f"), (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(f.integer("g"), 2);  // integral floats are integers, as in Python clients
  f.finish();
}

TEST(RequestFields, BadValuesNameTheField) {
  using namespace body;
  BodySchema schema;
  schema.field("t", number(0, 2), "").field("s", string(), "").field("n", integer(0, 5), "").field("l", string_or_strings(5), "");
  schema.field("big", integer(0, 5), "").field("e", one_of_strings({"float", "base64"}), "");
  const Json body = Json::parse(R"({"t": 3, "s": 5, "n": 1.5, "l": ["a", 1], "big": 18446744073709551615, "e": "hex"})");
  RequestFields f(body, schema);
  EXPECT_EQ(error_of([&] { f.number("t"); }), "400 t: 't' must be between 0 and 2");
  EXPECT_EQ(error_of([&] { f.string("s"); }), "400 s: 's' must be a string");
  EXPECT_EQ(error_of([&] { f.integer("n"); }), "400 n: 'n' must be an integer");
  EXPECT_NE(error_of([&] { f.strings("l"); }).find("array of strings"), std::string::npos);
  EXPECT_NE(error_of([&] { f.integer("big"); }).find("between"), std::string::npos);
  EXPECT_EQ(error_of([&] { f.string("e"); }), "400 e: 'e' must be one of float, base64");
}

TEST(RequestFields, UnreadAndRefusedFieldsAreRejected) {
  using namespace body;
  BodySchema schema;
  schema.field("model", string(), "").field("suffix", refused(), "").field("stop", string_or_strings(2), "");
  const Json body = Json::parse(R"({"model": "m", "surprise": 1, "suffix": "x"})");
  RequestFields f(body, schema);
  f.string("model");
  EXPECT_NE(error_of([&] { f.refuse("suffix", "no"); }).find("'suffix' is not supported"), std::string::npos);
  EXPECT_EQ(error_of([&] { f.strings("stop"); }), "");
  EXPECT_EQ(error_of([&] { f.finish(); }), "400 surprise: unrecognized request argument supplied: surprise");
  const Json many = Json::parse(R"({"stop": ["a", "b", "c"]})");
  RequestFields g(many, schema);
  EXPECT_NE(error_of([&] { g.strings("stop"); }).find("at most 2"), std::string::npos);
}

// The schema is what /openapi.json publishes: a handler that reads past it,
// or leaves part of it unread, fails every request it serves.
TEST(RequestFields, AHandlerAndItsSchemaCannotDrift) {
  using namespace body;
  BodySchema schema;
  schema.field("a", integer(0, 10), "").field("b", string(), "");
  const Json body = Json::parse(R"({"a": 1})");
  {
    RequestFields f(body, schema);
    EXPECT_THROW(f.raw("undeclared"), std::logic_error);
    EXPECT_THROW(f.string("a"), std::logic_error);  // declared as an integer
  }
  {
    RequestFields f(body, schema);
    f.integer("a");
    EXPECT_THROW(f.finish(), std::logic_error);  // 'b' never read
    f.string("b");
    EXPECT_NO_THROW(f.finish());
  }
}

TEST(BodySchema, PublishesEachFieldAsAlsoNullAndNoOtherFields) {
  using namespace body;
  BodySchema schema;
  schema.field("n", integer(1, 4), "how many").field("e", one_of_strings({"x"}), "").field("any", any(), "");
  schema.field("s", string_or_strings(3), "").field("m", integer(1, 4), "").require("n");
  const Json doc = schema.document();
  EXPECT_EQ(doc["type"], "object");
  EXPECT_EQ(doc["additionalProperties"], false);
  EXPECT_EQ(doc["required"], Json::array({"n"}));
  EXPECT_EQ(doc["properties"]["n"]["type"], "integer");  // required: null would be absent
  EXPECT_EQ(doc["properties"]["n"]["maximum"], 4);
  EXPECT_EQ(doc["properties"]["m"]["type"], Json::array({"integer", "null"}));
  EXPECT_EQ(doc["properties"]["n"]["description"], "how many");
  EXPECT_EQ(doc["properties"]["e"]["anyOf"][1], Json({{"type", "null"}}));
  EXPECT_EQ(doc["properties"]["any"], Json::object());
  EXPECT_EQ(doc["properties"]["s"]["anyOf"][1], Json({{"type", "null"}}));
  EXPECT_THROW(schema.field("n", any(), ""), std::logic_error);
  EXPECT_THROW(schema.require("missing"), std::logic_error);
}

TEST(RequestFields, JsonBodiesAreBoundedInDepthAndMustParse) {
  const JsonLimits limits{.max_depth = 64};
  EXPECT_NO_THROW(parse_bounded_json(std::string(64, '[') + std::string(64, ']'), limits));
  EXPECT_NE(error_of([&] { parse_bounded_json(std::string(65, '[') + std::string(65, ']'), limits); }).find("deeper"), std::string::npos);
  EXPECT_NE(error_of([&] { parse_bounded_json("{\"a\": ", limits); }).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of([] { RequestFields f(Json::array(), BodySchema{}); }).find("JSON object"), std::string::npos);
}

TEST(ApiError, SerialisesAsTheOpenAiErrorObject) {
  const ApiError e(429, "rate_limit_error", "slow down", "", "rate_limit_exceeded");
  EXPECT_EQ(e.to_json().dump(),
            R"({"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}})");
}

}  // namespace
}  // namespace tessera
