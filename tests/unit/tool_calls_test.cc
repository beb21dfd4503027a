// The tool-call parser over model output as it streams in: Hermes tags,
// bare objects, and everything that must stay text.
#include <gtest/gtest.h>

#include "engine/error.h"
#include "server/openai/tool_calls.h"
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

TEST(ToolCalls, FormatFromTheTemplate) {
  EXPECT_EQ(tool_call_format_of("... <tool_call>\n{\"name\": ...} </tool_call>"), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_of("{% for m in messages %}{{ m.content }}{% endfor %}"), ToolCallFormat::kNone);
}

}  // namespace
}  // namespace tessera
