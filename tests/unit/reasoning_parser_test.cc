// A thinking model's output split into reasoning and answer as it streams,
// a few bytes at a time: tags the model writes, a block the prompt opened,
// tags split across pieces, and output without reasoning.
#include "server/serving/reasoning_parser.h"

#include <gtest/gtest.h>

#include <vector>

namespace tessera {
namespace {

ReasoningSplit run(bool opened, const std::vector<std::string>& pieces) {
  ReasoningParser parser(opened);
  ReasoningSplit all;
  auto add = [&](const ReasoningSplit& s) {
    all.reasoning += s.reasoning;
    all.content += s.content;
  };
  for (const auto& p : pieces) add(parser.feed(p));
  add(parser.finish());
  return all;
}

// Every split of `text` into two pieces gives the same result as the whole.
void expect_split_independent(bool opened, const std::string& text, const std::string& reasoning, const std::string& content) {
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const ReasoningSplit s = run(opened, {text.substr(0, cut), text.substr(cut)});
    EXPECT_EQ(s.reasoning, reasoning) << "cut at " << cut;
    EXPECT_EQ(s.content, content) << "cut at " << cut;
  }
}

TEST(ReasoningParser, TagsTheModelWrites) {
  expect_split_independent(false, "<think>\nLet me see. 2+2 is 4.\n</think>\n\nThe answer is 4.", "\nLet me see. 2+2 is 4.\n",
                           "The answer is 4.");
}

TEST(ReasoningParser, ABlockThePromptOpened) {
  expect_split_independent(true, "Hmm, <b>bold</b> thought.</think>Yes.", "Hmm, <b>bold</b> thought.", "Yes.");
}

TEST(ReasoningParser, OutputWithoutReasoningIsAllContent) {
  expect_split_independent(false, "Just an answer with a </think> inside.", "", "Just an answer with a </think> inside.");
  expect_split_independent(false, "<thin air", "", "<thin air");
}

TEST(ReasoningParser, ABlockNeverClosedIsAllReasoning) {
  expect_split_independent(true, "thinking until the tokens ran out </thi", "thinking until the tokens ran out </thi", "");
}

TEST(ReasoningParser, StreamsReasoningAsItComes) {
  ReasoningParser parser(true);
  EXPECT_EQ(parser.feed("step one, ").reasoning, "step one, ");
  EXPECT_EQ(parser.feed("step two </").reasoning, "step two ");  // "</" may start the closing tag
  const ReasoningSplit end = parser.feed("think>\n\nDone");
  EXPECT_EQ(end.reasoning, "");
  EXPECT_EQ(end.content, "Done");
}

TEST(ReasoningParser, FormatFromConfigAndTemplate) {
  EXPECT_EQ(reasoning_format_of("auto", "{{ '<think>' }}...{{ '</think>' }}"), ReasoningFormat::kThinkTags);
  EXPECT_EQ(reasoning_format_of("auto", "{{ messages }}"), ReasoningFormat::kNone);
  EXPECT_EQ(reasoning_format_of("none", "</think>"), ReasoningFormat::kNone);
  EXPECT_EQ(reasoning_format_of("think", ""), ReasoningFormat::kThinkTags);
  EXPECT_TRUE(prompt_opens_reasoning("<|Assistant|><think>\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<think>\n\n</think>\n\n"));
  EXPECT_FALSE(prompt_opens_reasoning("assistant\n"));
}

}  // namespace
}  // namespace tessera
