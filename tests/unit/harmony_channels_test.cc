// gpt-oss's harmony output split into reasoning (the analysis channel) and
// answer (final, commentary) as it streams: markers split across pieces,
// several messages, and output that is not harmony at all.
#include "server/serving/harmony_channels.h"

#include <gtest/gtest.h>

#include "server/serving/reasoning_parser.h"

namespace tessera {
namespace {

ReasoningSplit run(const std::vector<std::string>& pieces) {
  HarmonyChannels parser;
  ReasoningSplit all;
  auto add = [&](const ReasoningSplit& s) {
    all.reasoning += s.reasoning;
    all.content += s.content;
  };
  for (const auto& p : pieces) add(parser.feed(p));
  add(parser.finish());
  return all;
}

// Every split of `text` into two or three pieces gives the whole's result.
void expect_split_independent(const std::string& text, const std::string& reasoning, const std::string& content) {
  for (size_t a = 0; a <= text.size(); ++a) {
    for (size_t b = a; b <= text.size(); b += 7) {
      const ReasoningSplit s = run({text.substr(0, a), text.substr(a, b - a), text.substr(b)});
      ASSERT_EQ(s.reasoning, reasoning) << "cuts at " << a << ", " << b;
      ASSERT_EQ(s.content, content) << "cuts at " << a << ", " << b;
    }
  }
}

TEST(HarmonyChannels, AnalysisIsReasoningAndFinalTheAnswer) {
  expect_split_independent(
      "<|channel|>analysis<|message|>User asks 2+2. Easy: 4.<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>",
      "User asks 2+2. Easy: 4.", "2 + 2 = 4.");
}

TEST(HarmonyChannels, AnswerWithoutAnalysis) {
  expect_split_independent("<|channel|>final<|message|>Hello <b>there</b> < 3 |> x<|return|>", "", "Hello <b>there</b> < 3 |> x");
}

TEST(HarmonyChannels, CommentaryHeadersAreNotText) {
  expect_split_independent(
      "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather "
      "<|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
      "Need weather.", "{\"city\":\"Paris\"}");
}

TEST(HarmonyChannels, OutputThatIsNotHarmonyIsAllAnswer) {
  expect_split_independent("Just text, with a <tag> and <|odd marker.", "", "Just text, with a <tag> and <|odd marker.");
}

TEST(HarmonyChannels, AnalysisCutShortIsReasoning) {
  expect_split_independent("<|channel|>analysis<|message|>thinking until the tokens ran out", "thinking until the tokens ran out", "");
}

TEST(HarmonyChannels, StreamsAsItComes) {
  HarmonyChannels parser;
  EXPECT_EQ(parser.feed("<|channel|>analysis<|message|>step one, ").reasoning, "step one, ");
  EXPECT_EQ(parser.feed("step two<|e").reasoning, "step two");  // "<|e" may start <|end|>
  const ReasoningSplit next = parser.feed("nd|><|start|>assistant<|channel|>final<|message|>Done");
  EXPECT_EQ(next.reasoning, "");
  EXPECT_EQ(next.content, "Done");
}

// Text that only looks like the start of a header is not held back past a
// header's length: it streams, so nothing is rescanned as the output grows.
TEST(HarmonyChannels, WhatNeverBecomesAHeaderStreams) {
  for (const std::string opening : {"<|start|>assistant", "<|channel|>final"}) {
    HarmonyChannels parser;
    std::string streamed = parser.feed(opening).content;
    for (int i = 0; i < 1000; ++i) streamed += parser.feed("word ").content;
    EXPECT_GT(streamed.size(), 4000u) << opening;
    streamed += parser.finish().content;
    std::string whole = opening;
    for (int i = 0; i < 1000; ++i) whole += "word ";
    EXPECT_EQ(streamed, whole) << opening;
  }
}

TEST(HarmonyChannels, TheTemplateChoosesIt) {
  EXPECT_EQ(reasoning_format_of("auto", "{{- '<|start|>assistant<|channel|>final<|message|>' }}"), ReasoningFormat::kHarmony);
  EXPECT_EQ(reasoning_format_of("harmony", ""), ReasoningFormat::kHarmony);
  EXPECT_EQ(reasoning_format_of("none", "<|channel|>"), ReasoningFormat::kNone);
}

}  // namespace
}  // namespace tessera
