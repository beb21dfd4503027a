// The model name a GET route reads from its request target's query.
#include <gtest/gtest.h>

#include "server/tokenizer_files.h"

namespace tessera {
namespace {

TEST(QueryParameter, FindsTheKeyAndDecodesIt) {
  EXPECT_EQ(query_parameter("/tokenizer_info?model=smollm2", "model"), "smollm2");
  EXPECT_EQ(query_parameter("/t?models=a&model=b", "model"), "b");  // a longer key is another key
  EXPECT_EQ(query_parameter("/t?x=1&model=org%2Fname+v2&y", "model"), "org/name v2");
  EXPECT_EQ(query_parameter("/t?model=%41%62", "model"), "Ab");
}

TEST(QueryParameter, AbsentOrMalformedIsEmpty) {
  EXPECT_EQ(query_parameter("/tokenizer_info", "model"), "");
  EXPECT_EQ(query_parameter("/t?model", "model"), "");
  EXPECT_EQ(query_parameter("/t?model=%zz", "model"), "");
  EXPECT_EQ(query_parameter("/t?model=abc%4", "model"), "");
  EXPECT_EQ(query_parameter("/t?model=abc%", "model"), "");
  EXPECT_EQ(query_parameter("/t?", "model"), "");
}

}  // namespace
}  // namespace tessera
