// Prompt lookup proposes what followed the latest earlier occurrence of the
// longest suffix it finds, checked against the tokens themselves.
#include <gtest/gtest.h>

#include "scheduler/prompt_lookup.h"

namespace tessera {
namespace {

std::vector<int32_t> propose(PromptLookup& lookup, const std::vector<int32_t>& tokens, size_t k) {
  lookup.extend(tokens);
  return lookup.propose(tokens, k);
}

TEST(PromptLookup, ProposesWhatFollowedTheLongestSuffix) {
  PromptLookup lookup(1, 3);
  // "5 6" occurs twice; "4 5 6" once, followed by 7 8 9.
  const std::vector<int32_t> tokens = {1, 5, 6, 2, 4, 5, 6, 7, 8, 9, 3, 4, 5, 6};
  EXPECT_EQ(propose(lookup, tokens, 3), (std::vector<int32_t>{7, 8, 9}));
  EXPECT_EQ(lookup.propose(tokens, 10), (std::vector<int32_t>{7, 8, 9, 3, 4, 5, 6}));  // up to the end
  EXPECT_TRUE(lookup.propose(tokens, 0).empty());
}

TEST(PromptLookup, TheLatestOccurrenceWins) {
  PromptLookup lookup(2, 2);
  const std::vector<int32_t> tokens = {1, 2, 3, 9, 1, 2, 4, 9, 1, 2};
  EXPECT_EQ(propose(lookup, tokens, 2), (std::vector<int32_t>{4, 9}));
}

TEST(PromptLookup, NothingBelowTheShortestNgram) {
  PromptLookup lookup(2, 4);
  // The last token, 7, occurred before, but no pair ending in it did.
  EXPECT_TRUE(propose(lookup, {1, 7, 2, 3, 7}, 4).empty());
  PromptLookup unigram(1, 4);
  EXPECT_EQ(propose(unigram, {1, 7, 2, 3, 7}, 4), (std::vector<int32_t>{2, 3, 7}));
}

TEST(PromptLookup, GrowsIncrementallyLikeOneBuild) {
  std::vector<int32_t> tokens;
  PromptLookup incremental(1, 3);
  for (int i = 0; i < 300; ++i) {
    tokens.push_back((i * 7 + i / 13) % 11);
    incremental.extend(tokens);
    PromptLookup whole(1, 3);
    whole.extend(tokens);
    ASSERT_EQ(incremental.propose(tokens, 5), whole.propose(tokens, 5)) << "after " << tokens.size() << " tokens";
  }
}

TEST(PromptLookup, TokensThatChangedUnderTheIndexProposeNothingWrong) {
  PromptLookup lookup(2, 2);
  lookup.extend(std::vector<int32_t>{1, 2, 3, 1, 2});
  // Another sequence of the same length: any hit is checked against it.
  const std::vector<int32_t> other = {8, 8, 8, 1, 2};
  for (int32_t t : lookup.propose(other, 3)) EXPECT_NE(t, 3);
}

}  // namespace
}  // namespace tessera
