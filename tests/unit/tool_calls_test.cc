// The tool-call parser over model output as it streams in: Hermes tags,
// bare objects, Llama 3.1 JSON, Mistral call lists, and everything that
// must stay text; and the grammars that force a call in each format.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/core/error.h"
#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/parse_stacks.h"
#include "server/serving/tool_call_grammar.h"
#include "server/serving/tool_calls.h"
#include "server/serving/api_error.h"

namespace tessera {
namespace {

struct Parsed {
  std::string text;
  std::vector<ToolCall> calls;
};

// Feeds `pieces` one by one, then finishes.
Parsed parse(const std::vector<std::string>& pieces, std::vector<std::string> tools = {"get_weather", "search"}) {
  ToolCallParser parser(std::move(tools));
  Parsed out;
  auto take = [&](std::vector<ToolCallPiece> got) {
    for (auto& p : got) {
      if (p.call) out.calls.push_back(*p.call);
      else out.text += p.text;
    }
  };
  for (const auto& piece : pieces) take(parser.feed(piece));
  take(parser.finish());
  return out;
}

// Whether the grammar text matches all of `text`.
bool grammar_accepts(const std::string& gbnf, const std::string& text) {
  const grammar::Grammar g = grammar::parse_gbnf(gbnf);
  grammar::ParseStacks stacks(g, 1u << 20);
  grammar::StackSet state = stacks.initial(), next;
  for (unsigned char b : text) {
    stacks.advance(state, b, next);
    state.swap(next);
  }
  return std::binary_search(state.begin(), state.end(), grammar::ParseStacks::kEmpty);
}

TEST(ToolCalls, TaggedCallSplitAcrossPieces) {
  const Parsed p = parse({"Let me check.\n<tool", "_call>\n{\"name\": \"get_weather\", \"argu", "ments\": {\"city\": \"Paris\"}}\n</tool_", "call>"});
  EXPECT_EQ(p.text, "Let me check.\n");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(p.calls[0].id.rfind("call_", 0), 0u);
  EXPECT_EQ(p.calls[0].id.size(), 29u);
}

TEST(ToolCalls, SeveralCallsAndTheLineBreaksBetweenThem) {
  const Parsed p = parse({"<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"a\"}}\n</tool_call>\n<tool_call>\n"
                          "{\"name\": \"search\", \"arguments\": {\"q\": \"b\"}}\n</tool_call>\n"});
  EXPECT_EQ(p.text, "");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[1].arguments, R"({"q":"b"})");
  EXPECT_NE(p.calls[0].id, p.calls[1].id);
}

TEST(ToolCalls, OneCharacterAtATime) {
  const std::string long_value(5000, 'x');
  const std::string output = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"" + long_value +
                             "</tool_\"}}\n</tool_call>\nDone.";
  std::vector<std::string> pieces;
  for (char c : output) pieces.push_back(std::string(1, c));
  const Parsed p = parse(pieces);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"q\":\"" + long_value + "</tool_\"}");
  EXPECT_EQ(p.text, "\nDone.");
}

TEST(ToolCalls, UnclosedCallAtTheEndStillCounts) {
  const Parsed p = parse({"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}"});
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{}");
}

TEST(ToolCalls, MalformedCallsStayText) {
  EXPECT_EQ(parse({"<tool_call>{not json}</tool_call>"}).text, "<tool_call>{not json}</tool_call>");
  EXPECT_EQ(parse({"<tool_call>{\"arguments\": {}}</tool_call>"}).calls.size(), 0u);
  EXPECT_EQ(parse({"a < b and <tool"}).text, "a < b and <tool");  // a held-back prefix comes out at the end
}

TEST(ToolCalls, BareObjectsNamingOfferedTools) {
  const Parsed one = parse({"{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Paris\"}}"});
  ASSERT_EQ(one.calls.size(), 1u);
  EXPECT_EQ(one.text, "");
  const Parsed two = parse({"{\"name\": \"search\", \"arguments\": {\"q\": 1}}\n{\"name\": \"search\", \"arguments\": {}}\n"});
  EXPECT_EQ(two.calls.size(), 2u);
  // JSON that is not only calls of offered tools is the model's answer.
  EXPECT_EQ(parse({"{\"name\": \"other\", \"arguments\": {}}"}).calls.size(), 0u);
  EXPECT_EQ(parse({"{\"name\": \"search\", \"arguments\": {}}\nand more"}).text,
            "{\"name\": \"search\", \"arguments\": {}}\nand more");
  EXPECT_EQ(parse({"{\"temperature\": 18}"}).text, "{\"temperature\": 18}");
}

TEST(ToolCalls, FencedJsonAsQwenCoderWritesIt) {
  // One object over several lines, streamed a few bytes at a time.
  const Parsed one = parse({"``", "`json\n{\n  \"name\": \"get_weather\",\n", "  \"arguments\": {\"city\": \"Oslo\"}\n}\n``", "`"});
  ASSERT_EQ(one.calls.size(), 1u);
  EXPECT_EQ(one.calls[0].name, "get_weather");
  EXPECT_EQ(one.calls[0].arguments, "{\"city\":\"Oslo\"}");
  EXPECT_EQ(one.text, "");
  // Two fences, a list in one fence, and a fence the model never closed.
  EXPECT_EQ(parse({"```json\n{\"name\": \"search\", \"arguments\": {}}\n```\n\n```json\n"
                   "{\"name\": \"get_weather\", \"arguments\": {}}\n```"}).calls.size(), 2u);
  EXPECT_EQ(parse({"```\n[{\"name\": \"search\", \"arguments\": {}}, {\"name\": \"search\", \"arguments\": {}}]\n```"})
                .calls.size(), 2u);
  EXPECT_EQ(parse({"```json\n{\"name\": \"search\", \"arguments\": {\"q\": 1}}\n"}).calls.size(), 1u);
  // Anything else stays the model's text, unchanged.
  for (const std::string text : {"```json\n{\"name\": \"search\", \"arguments\": {}}\n```\nThat is the call.",
                                 "```json\n{\"temperature\": 18}\n```", "```python\nprint(1)\n```", "``not a fence",
                                 "```json\n{\"name\": \"unknown\", \"arguments\": {}}\n```"}) {
    const Parsed p = parse({text});
    EXPECT_EQ(p.calls.size(), 0u) << text;
    EXPECT_EQ(p.text, text);
  }
}

TEST(ToolCalls, AFenceOfCodeStreamsAsItComes) {
  ToolCallParser parser({"search"});
  std::string streamed;
  for (const auto& p : parser.feed("```python\nprint(1)\n")) streamed += p.text;
  EXPECT_EQ(streamed, "```python\nprint(1)\n");
}

TEST(ToolCalls, ToolDefinitionsAreChecked) {
  using Json = nlohmann::ordered_json;
  EXPECT_NO_THROW(check_tools(Json::parse(R"([{"type": "function", "function": {"name": "f_1", "parameters": {}}}])")));
  for (const char* bad : {R"({})", R"([{"type": "code"}])", R"([{"type": "function", "function": {"name": "has space"}}])",
                          R"([{"type": "function", "function": {"name": "f", "parameters": []}}])"}) {
    EXPECT_THROW(check_tools(Json::parse(bad)), ApiError) << bad;
  }
}

TEST(ToolCalls, HistoryArgumentsBecomeObjects) {
  using Json = nlohmann::ordered_json;
  const Json messages = Json::parse(R"([{"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}}]}])");
  const Json out = tool_arguments_as_objects(messages);
  EXPECT_EQ(out[0]["tool_calls"][0]["function"]["arguments"], Json::parse(R"({"x": 1})"));
}

TEST(ToolCalls, LlamaJsonWithParametersAndPythonTag) {
  const Parsed plain = parse({"{\"name\": \"search\", \"parameters\": {\"q\": \"cats\"}}"});
  ASSERT_EQ(plain.calls.size(), 1u);
  EXPECT_EQ(plain.calls[0].arguments, "{\"q\":\"cats\"}");
  const Parsed tagged = parse({"<|pyth", "on_tag|>{\"name\": \"get_weather\", \"parameters\": {}}"});
  ASSERT_EQ(tagged.calls.size(), 1u);
  EXPECT_EQ(tagged.calls[0].name, "get_weather");
  EXPECT_EQ(tagged.text, "");
  EXPECT_EQ(parse({"<|python_tag|>print(1)"}).text, "print(1)");  // code for the interpreter stays text
}

TEST(ToolCalls, MistralCallLists) {
  const Parsed two = parse({"[TOOL", "_CALLS][{\"name\": \"search\", \"arguments\": {\"q\": 1}}, ",
                            "{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}]"});
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[1].arguments, "{\"city\":\"Oslo\"}");
  EXPECT_EQ(parse({"[TOOL_CALLS] not json"}).text, "[TOOL_CALLS] not json");
  EXPECT_EQ(parse({"[1, 2]"}).text, "[1, 2]");
}

TEST(ToolCalls, WithoutParallelCallsOnlyTheFirstIsKept) {
  const std::string two = "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": 1}}\n</tool_call>\n"
                          "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>";
  for (bool parallel : {true, false}) {
    ToolCallParser parser({"search", "get_weather"}, parallel);
    std::vector<ToolCall> calls;
    for (size_t i = 0; i < two.size(); i += 7) {
      for (auto& p : parser.take(two.substr(i, 7), i + 7 >= two.size())) {
        if (p.call) calls.push_back(*p.call);
      }
    }
    ASSERT_EQ(calls.size(), parallel ? 2u : 1u);
    EXPECT_EQ(calls[0].name, "search");
  }
}

TEST(ToolCalls, FormatFromTheTemplate) {
  EXPECT_EQ(tool_call_format_of("... <tool_call>\n{\"name\": ...} </tool_call>"), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_of("Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}"),
            ToolCallFormat::kLlamaJson);
  EXPECT_EQ(tool_call_format_of("{{- '[AVAILABLE_TOOLS]' }} ... {{- '[TOOL_CALLS]' }}"), ToolCallFormat::kMistral);
  EXPECT_EQ(tool_call_format_of("{% for m in messages %}{{ m.content }}{% endfor %}"), ToolCallFormat::kNone);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// A forced call's grammar accepts exactly the format's calls, and the
// parser reads what it accepts back as those calls.
TEST(ToolCallGrammar, EachFormatsForcedCallParsesBack) {
  using Json = nlohmann::ordered_json;
  const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "search",
      "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}])");
  const std::vector<std::pair<ToolCallFormat, std::string>> cases = {
      {ToolCallFormat::kHermes, "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n</tool_call>"},
      {ToolCallFormat::kLlamaJson, "{\"name\": \"search\", \"parameters\": {\"q\": \"x\"}}"},
      {ToolCallFormat::kMistral, "[TOOL_CALLS][{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}]"},
  };
  for (const auto& [format, text] : cases) {
    const std::string g = tool_call_gbnf(tools, true, format);
    EXPECT_TRUE(grammar_accepts(g, text)) << text;
    EXPECT_FALSE(grammar_accepts(g, text.substr(0, text.size() - 1))) << text;
    const Parsed parsed = parse({text}, {"search"});
    ASSERT_EQ(parsed.calls.size(), 1u) << text;
    EXPECT_EQ(parsed.calls[0].arguments, "{\"q\":\"x\"}");
  }
  EXPECT_FALSE(grammar_accepts(tool_call_gbnf(tools, false, ToolCallFormat::kHermes),
                               "<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>"));  // q is required
}

}  // namespace
}  // namespace tessera
