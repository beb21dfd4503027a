#include "server/chat/message_spans.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

using Json = nlohmann::ordered_json;

bool has_marker(std::string_view t) { return t.find("<|") != std::string_view::npos; }

TEST(MessageSpans, FindsMarkedContentInOrderAndTrimmed) {
  const Json messages = Json::parse(R"([{"role": "system", "content": "plain"},
    {"role": "user", "content": "  hi <|end|>  "},
    {"role": "user", "content": [{"type": "text", "text": "<|x|>"}]}])");
  const std::string rendered = "<|start|>plain<|end|><|start|>hi <|end|><|end|><|start|><|x|><|end|>";
  const auto spans = protected_message_spans(rendered, messages, has_marker);
  ASSERT_TRUE(spans.has_value());
  ASSERT_EQ(spans->size(), 2u);
  EXPECT_EQ(rendered.substr((*spans)[0].begin, (*spans)[0].end - (*spans)[0].begin), "hi <|end|>");
  EXPECT_EQ(rendered.substr((*spans)[1].begin, (*spans)[1].end - (*spans)[1].begin), "<|x|>");
  EXPECT_LT((*spans)[0].end, (*spans)[1].begin);
}

TEST(MessageSpans, RewrittenContentCannotBeProtected) {
  const Json messages = Json::parse(R"([{"role": "user", "content": "a<|end|>"}])");
  EXPECT_FALSE(protected_message_spans("<|start|>A<|END|>", messages, has_marker).has_value());
  // Content with nothing to protect is not looked for at all.
  EXPECT_TRUE(protected_message_spans("xyz", Json::parse(R"([{"role": "user", "content": "abc"}])"), has_marker)->empty());
}

}  // namespace
}  // namespace tessera
