#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "engine/grammar/position_table_codec.h"
#include "engine/grammar/token_tables.h"
#include "engine/io/artifact_cache.h"

namespace tessera::grammar {
namespace {

namespace fs = std::filesystem;

// Token ids 0..9 with texts "a", "ab", "abc", … (front-coded below).
PositionTable sample_table(size_t vocab) {
  PositionTable t;
  t.accepted_ids = {1, 4, 7};
  t.accepted = TokenMask(vocab);
  t.accepted.set(3);
  t.dense = true;
  t.context_dependent = {2, 5};
  t.context_shared = {0, 2};
  t.context_suffixes = "abcxyz";
  t.context_suffix_end = {3, 6};
  return t;
}

TEST(GrammarTableCache, TablesRoundTripAndBadOnesAreRefused) {
  const PositionTable t = sample_table(100);
  const std::string bytes = encode_position_table(t);
  const PositionTable back = decode_position_table(bytes, 100);
  EXPECT_EQ(back.accepted_ids, t.accepted_ids);
  EXPECT_TRUE(back.dense);
  EXPECT_TRUE(back.accepted.test(3));
  EXPECT_FALSE(back.accepted.test(4));
  EXPECT_EQ(back.context_dependent, t.context_dependent);
  EXPECT_EQ(back.context_shared, t.context_shared);
  EXPECT_EQ(back.context_suffix_end, t.context_suffix_end);
  EXPECT_EQ(back.context_suffixes, t.context_suffixes);
  EXPECT_THROW(decode_position_table(bytes, 5), GrammarError);   // ids past a smaller vocabulary
  EXPECT_THROW(decode_position_table(bytes, 200), GrammarError); // a mask of another size
  EXPECT_THROW(decode_position_table(bytes.substr(0, bytes.size() - 1), 100), GrammarError);
  PositionTable overreach = t;
  overreach.context_shared = {0, 4};  // repeats 4 bytes of a 3-byte token
  EXPECT_THROW(decode_position_table(encode_position_table(overreach), 100), GrammarError);
}

TEST(GrammarTableCache, AStoreReadsWhatAnotherStoredForTheSameVocabularyOnly) {
  const fs::path dir = fs::temp_directory_path() / ("tessera-table-cache-" + std::to_string(getpid()));
  fs::remove_all(dir);
  auto cache = std::make_shared<const ArtifactCache>(dir);
  {
    TableStore first;
    first.persist_to(cache, "vocab-1", 100);
    first.insert("form", std::make_shared<const PositionTable>(sample_table(100)));
  }
  TableStore later;
  later.persist_to(cache, "vocab-1", 100);
  const auto found = later.find("form");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->accepted_ids, (std::vector<int32_t>{1, 4, 7}));
  EXPECT_EQ(later.loaded_from_cache(), 1u);
  EXPECT_FALSE(later.find("another form"));
  TableStore other_vocabulary;
  other_vocabulary.persist_to(cache, "vocab-2", 100);
  EXPECT_FALSE(other_vocabulary.find("form"));
  TableStore no_cache;
  EXPECT_FALSE(no_cache.find("form"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessera::grammar
