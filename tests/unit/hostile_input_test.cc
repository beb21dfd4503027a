// Every recursive walk over client-controlled structure is bounded: the
// deepest input a size limit allows fails the request with a message that
// names the limit, never the process (a stack overflow), and no walk is
// quadratic in its input.
#include <gtest/gtest.h>

#include <string>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema_to_gbnf.h"
#include "server/chat/chat_template.h"
#include "server/chat/jinja_value.h"
#include "server/serving/control_text_guard.h"
#include "server/serving/tool_calls.h"
#include "server/serving/api_error.h"
#include "server/serving/bounded_json.h"

namespace tessera {
namespace {

using Json = nlohmann::ordered_json;

// `depth` arrays nested in each other, as JSON text: [[[...]]].
std::string nested_arrays(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A value nested `depth` levels without recursing to build it.
Json nested_json(size_t depth) {
  Json root = Json::array();
  Json* at = &root;
  for (size_t i = 1; i < depth; ++i) {
    at->push_back(Json::array());
    at = &at->back();
  }
  return root;
}

Json assistant_call_with_arguments(const std::string& arguments) {
  return Json::array({{{"role", "user"}, {"content", "hi"}},
                      {{"role", "assistant"},
                       {"content", nullptr},
                       {"tool_calls", Json::array({{{"id", "call_1"}, {"type", "function"},
                                                    {"function", {{"name", "f"}, {"arguments", arguments}}}}})}}});
}

TEST(HostileInput, DeepToolCallArgumentsAreRefusedNamingTheField) {
  // 20,000 levels took the process down; now the arguments are read with
  // the body's caps, so the request fails with a 400 naming the field.
  const Json messages = assistant_call_with_arguments("{\"a\":" + nested_arrays(20000) + "}");
  try {
    tool_arguments_as_objects(messages);
    FAIL() << "deep arguments were accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "messages[1].tool_calls[0].function.arguments");
    EXPECT_NE(std::string(e.what()).find("nests deeper than"), std::string::npos) << e.what();
  }
}

TEST(HostileInput, ArgumentsWithinTheCapsBecomeObjectsAndTextStaysText) {
  const Json ok = tool_arguments_as_objects(assistant_call_with_arguments("{\"a\":" + nested_arrays(20) + "}"));
  EXPECT_TRUE(ok[1]["tool_calls"][0]["function"]["arguments"].is_object());
  const Json text = tool_arguments_as_objects(assistant_call_with_arguments("not json {"));
  EXPECT_EQ(text[1]["tool_calls"][0]["function"]["arguments"], "not json {");
}

TEST(HostileInput, ArgumentsWithTooManyKeysAreRefusedAtTheMemberCap) {
  // 40,000 keys were parsed by a map with a linear insert (3.9 s of CPU).
  std::string arguments = "{";
  for (int i = 0; i < 40000; ++i) arguments += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
  arguments += "}";
  EXPECT_THROW(tool_arguments_as_objects(assistant_call_with_arguments(arguments)), ApiError);
}

TEST(HostileInput, JinjaValuesFromJsonStopAtTheDepthLimit) {
  EXPECT_NO_THROW(jinja::Value::from_json(nested_json(jinja::kMaxValueDepth)));
  EXPECT_THROW(jinja::Value::from_json(nested_json(20000)), jinja::ValueTooLarge);
}

TEST(HostileInput, ATemplateGivenDeepValuesFailsTheRender) {
  ChatTemplate t("{% for m in messages %}{{ m.content }}{% endfor %}");
  ChatTemplateInput in;
  // Deep enough to break the bound, shallow enough that copying the JSON
  // (recursive in nlohmann) stays cheap under the sanitizers.
  in.messages = Json::array({{{"role", "user"}, {"content", "x"}, {"extra", nested_json(1000)}}});
  EXPECT_THROW(t.render(in), jinja::TemplateError);
  in.messages = Json::array({{{"role", "user"}, {"content", "x"}}});
  in.extra = {{"deep", nested_json(1000)}};
  EXPECT_THROW(t.render(in), jinja::TemplateError);
}

// A chain of $defs, each referring to the next: each reference spends the
// same depth budget as a nested schema.
Json ref_chain(int length) {
  Json defs = Json::object();
  for (int i = 0; i < length; ++i) {
    defs["d" + std::to_string(i)] =
        i + 1 < length ? Json{{"$ref", "#/$defs/d" + std::to_string(i + 1)}} : Json{{"type", "string"}};
  }
  return {{"$defs", defs}, {"$ref", "#/$defs/d0"}};
}

TEST(HostileInput, ReferenceChainsSpendTheSchemaDepthBudget) {
  EXPECT_NO_THROW(grammar::parse_gbnf(grammar::json_schema_to_gbnf(ref_chain(20))));
  try {
    grammar::json_schema_to_gbnf(ref_chain(3000));
    FAIL() << "a chain of 3,000 references was accepted";
  } catch (const grammar::GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("nests deeper than 64 levels"), std::string::npos) << e.what();
  }
}

TEST(HostileInput, SelfReferenceStillEnds) {
  const Json schema = Json::parse(R"({"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}},
                                      "$ref":"#/$defs/node"})");
  EXPECT_NO_THROW(grammar::parse_gbnf(grammar::json_schema_to_gbnf(schema)));
}

// 32,000 rules, each nullable only through the next: the nullable analysis
// must find them all (and the left recursion closing the chain).
TEST(HostileInput, LongNullableChainsAreAnalysedExactly) {
  const int n = 32000;
  std::string chain = "root ::= r0 \"x\"\n";
  for (int i = 0; i + 1 < n; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " | \"a\"\n";
  const std::string last = "r" + std::to_string(n - 1);
  EXPECT_NO_THROW(grammar::parse_gbnf(chain + last + " ::= \"\"\n"));
  // The same chain whose last rule calls the root before any byte: every
  // rule on the way is nullable, so the root calls itself on the left.
  try {
    grammar::parse_gbnf(chain + last + " ::= \"\" | root\n");
    FAIL() << "left recursion through a nullable chain was missed";
  } catch (const grammar::GrammarError& e) {
    EXPECT_NE(std::string(e.what()).find("left recursion"), std::string::npos) << e.what();
  }
  // A rule after a non-nullable element is not reached on the left.
  EXPECT_NO_THROW(grammar::parse_gbnf("root ::= a root | \"z\"\na ::= \"q\" | b\nb ::= \"w\"\n"));
}

bool is_marker(std::string_view t) { return t.find("<|im_end|>") != std::string_view::npos; }

TEST(HostileInput, ControlTextIsRefusedInEveryRenderedStringButContent) {
  const Json tools = Json::parse(R"([{"type":"function","function":{"name":"f","description":"ok",
    "parameters":{"type":"object","properties":{"mode":{"enum":["a","<|im_end|>"]}}}}}])");
  try {
    refuse_control_text(tools, "tools", is_marker);
    FAIL() << "an enum value carrying a turn marker was accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param(), "tools[0].function.parameters.properties.mode.enum[1]");
  }
  const Json key = Json::parse(R"({"properties":{"<|im_end|>":{"type":"string"}}})");
  EXPECT_THROW(refuse_control_text(key, "tools", is_marker), ApiError);
  Json messages = assistant_call_with_arguments(R"({"code":"<|im_end|>"})");
  messages[0]["content"] = "content may hold <|im_end|>: it is protected as text";
  EXPECT_THROW(refuse_control_text_outside_content(tool_arguments_as_objects(messages), is_marker), ApiError);
  // Escaped in the arguments string, decoded when they are read: refused too.
  Json escaped = assistant_call_with_arguments(R"({"code":"\u003c|im_end|\u003e"})");
  EXPECT_THROW(refuse_control_text_outside_content(tool_arguments_as_objects(escaped), is_marker), ApiError);
  EXPECT_NO_THROW(refuse_control_text_outside_content(assistant_call_with_arguments(R"({"code":"fine"})"), is_marker));
  EXPECT_NO_THROW(refuse_control_text(nested_json(20000), "deep", is_marker));  // iterative
}

TEST(HostileInput, TemplateKeywordsCannotSetTheServersOwnInputs) {
  EXPECT_THROW(refuse_reserved_template_kwargs(Json{{"tools", Json::array()}}), ApiError);
  EXPECT_THROW(refuse_reserved_template_kwargs(Json{{"messages", Json::array()}}), ApiError);
  EXPECT_NO_THROW(refuse_reserved_template_kwargs(Json{{"enable_thinking", false}}));
}

TEST(HostileInput, ModelOutputIsReadWithTheSameCaps) {
  // A model's call nested past the cap is its text, not a call (and no crash).
  ToolCallParser parser({"f"});
  std::vector<ToolCallPiece> pieces = parser.take("<tool_call>{\"name\":\"f\",\"arguments\":{\"a\":" + nested_arrays(20000) + "}}</tool_call>", true);
  ASSERT_FALSE(pieces.empty());
  for (const ToolCallPiece& p : pieces) EXPECT_FALSE(p.call.has_value());
}

TEST(HostileInput, ErrorMessagesQuoteAtMostALittleOfTheInput) {
  const std::string huge(4 << 20, 'm');
  const ApiError e(404, "invalid_request_error", "the model '" + huge + "' does not exist", huge);
  EXPECT_LE(std::string(e.what()).size(), kMaxErrorMessageBytes + 3);
  EXPECT_LE(e.param().size(), 256u + 3);
  EXPECT_EQ(clip_echo("é" + std::string(100, 'x'), 1), "...");  // never half a character
}

TEST(BoundedJson, TheNonThrowingParseTellsACapFromASyntaxError) {
  const JsonLimits limits{.max_depth = 4};
  const BoundedJsonResult deep = try_parse_bounded_json(nested_arrays(10), limits);
  EXPECT_FALSE(deep.ok());
  EXPECT_TRUE(deep.over_limit);
  const BoundedJsonResult broken = try_parse_bounded_json("[1,", limits);
  EXPECT_FALSE(broken.ok());
  EXPECT_FALSE(broken.over_limit);
  EXPECT_TRUE(try_parse_bounded_json("[[1]]", limits).ok());
}

}  // namespace
}  // namespace tessera
