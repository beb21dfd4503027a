// Output grammars compiled on request threads: the engine's grammar from a
// prepared one gives the same masks as one it compiles itself, repeats are
// served from the cache (refusals too), the CPU budget and the slot limit
// refuse with 400 and 429.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_cache.h"
#include "engine/grammar/json_schema_to_gbnf.h"
#include "server/serving/api_error.h"
#include "server/serving/grammar_compiler.h"

namespace tessera {
namespace {

using Json = nlohmann::ordered_json;

std::vector<std::string> vocab_texts() {
  std::vector<std::string> v = {"", "{", "}", "\"", "\":", ",", " ", "name", "na", "me", "1", "12", "-", "true", "false",
                                "null", "[", "]", "\\", "ab", "\": "};
  for (int c = 32; c < 127; ++c) v.push_back(std::string(1, char(c)));
  return v;
}

const std::string kSchemaGbnf = grammar::json_schema_to_gbnf(
    Json::parse(R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"}},"required":["name"]})"));

TEST(GrammarCompiler, PreparedGrammarsMaskAsTheEngineWouldAndWalkNothingThere) {
  GrammarCompiler compiler(vocab_texts, StructuredOutputConfig{});
  const auto prepared = compiler.compile_text(kSchemaGbnf, "response_format").prepared;
  ASSERT_TRUE(prepared);
  grammar::GrammarCache engine(vocab_texts);
  auto from_prepared = engine.get(kSchemaGbnf, prepared);
  grammar::GrammarCache own(vocab_texts);
  auto compiled_here = own.get(kSchemaGbnf);
  const std::vector<std::string> texts = vocab_texts();
  const std::string text = R"({"name": "ab", "n": -12})";
  grammar::StackSet a = from_prepared->initial(), b = compiled_here->initial();
  for (size_t i = 0; i <= text.size(); ++i) {
    const grammar::TokenMask& ma = from_prepared->allowed(a);
    const grammar::TokenMask& mb = compiled_here->allowed(b);
    for (int32_t id = 0; id < int32_t(texts.size()); ++id) EXPECT_EQ(ma.test(id), mb.test(id)) << "after " << text.substr(0, i);
    if (i == text.size()) break;
    const int32_t id = int32_t(std::find(texts.begin(), texts.end(), std::string(1, text[i])) - texts.begin());
    a = from_prepared->advance(a, id);
    b = compiled_here->advance(b, id);
    ASSERT_FALSE(a.empty());
  }
  EXPECT_EQ(from_prepared->tables_built(), 0u) << "the engine walked the vocabulary for a prepared grammar";
  EXPECT_GT(compiled_here->tables_built(), 0u);
}

TEST(GrammarCompiler, RepeatsAndRefusalsComeFromTheCache) {
  GrammarCompiler compiler(vocab_texts, StructuredOutputConfig{});
  const auto first = compiler.compile_text(kSchemaGbnf, "response_format").prepared;
  EXPECT_EQ(compiler.compile_text(kSchemaGbnf, "response_format").prepared, first);
  EXPECT_EQ(compiler.compilations(), 1u);
  for (int i = 0; i < 2; ++i) {
    try {
      compiler.compile_text("root ::= undefined_rule\n", "grammar");
      FAIL() << "a grammar using an undefined rule compiled";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), "grammar");
      EXPECT_NE(std::string(e.what()).find("never defined"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(compiler.compilations(), 2u);
}

TEST(GrammarCompiler, AConstraintIsLoweredOnceAndItsRefusalKept) {
  GrammarCompiler compiler(vocab_texts, StructuredOutputConfig{});
  int lowered = 0;
  const auto identity = [] { return std::string("schema #1"); };
  const auto lower = [&] {
    ++lowered;
    return kSchemaGbnf;
  };
  const auto first = compiler.compile(identity, lower, "response_format");
  EXPECT_EQ(compiler.compile(identity, lower, "response_format").prepared, first.prepared);
  EXPECT_EQ(lowered, 1);
  EXPECT_EQ(first.gbnf, kSchemaGbnf);
  int refused = 0;
  const auto bad = [&]() -> std::string {
    ++refused;
    throw ApiError::invalid("'guided_json': the keyword 'if' is not supported", "guided_json");
  };
  for (int i = 0; i < 3; ++i) {
    try {
      compiler.compile([] { return std::string("schema #2"); }, bad, "guided_json");
      FAIL() << "a refused lowering compiled";
    } catch (const ApiError& e) {
      EXPECT_EQ(std::string(e.what()), "'guided_json': the keyword 'if' is not supported");
    }
  }
  EXPECT_EQ(refused, 1);
}

TEST(GrammarCompiler, ExpansionTooDeepIsTheClientsError) {
  // 5,000 rules, each calling the next before any byte: the parser's
  // expansion limit is met on the request thread, as a 400.
  std::string g = "root ::= r0\n";
  for (int i = 0; i < 5000; ++i) g += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  g += "r5000 ::= \"x\"\n";
  GrammarCompiler compiler(vocab_texts, StructuredOutputConfig{});
  try {
    compiler.compile_text(g, "grammar");
    FAIL() << "an expansion past the limit compiled";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("nests deeper than"), std::string::npos) << e.what();
  }
}

TEST(GrammarCompiler, WorkPastTheCpuBudgetIsRefused) {
  // Many distinct literals: a token table for each of their positions.
  std::string g = "root ::= ";
  for (int i = 0; i < 10000; ++i) g += (i ? " | \"" : "\"") + std::to_string(i * 7919) + "q\"";
  g += "\n";
  StructuredOutputConfig tight;
  tight.compile_budget_s = 0.01;
  GrammarCompiler compiler(vocab_texts, tight);
  try {
    compiler.compile_text(g, "grammar");
    FAIL() << "the budget did not hold";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("compile_budget_s"), std::string::npos) << e.what();
  }
}

TEST(GrammarCompiler, CompilationsBeyondTheSlotsAreToldToRetry) {
  // One slot; a vocabulary that takes its time to arrive holds it while a
  // second request tries.
  std::atomic<bool> release{false};
  std::atomic<bool> inside{false};
  StructuredOutputConfig one;
  one.max_concurrent_compiles = 1;
  GrammarCompiler compiler(
      [&] {
        inside = true;
        while (!release) std::this_thread::yield();
        return vocab_texts();
      },
      one);
  std::thread first([&] { compiler.compile_text(kSchemaGbnf, "response_format").prepared; });
  while (!inside) std::this_thread::yield();
  try {
    compiler.compile_text("root ::= \"x\"\n", "grammar");
    FAIL() << "a second compilation ran beside the first";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 429);
  }
  release = true;
  first.join();
  EXPECT_NO_THROW(compiler.compile_text("root ::= \"x\"\n", "grammar"));
}

}  // namespace
}  // namespace tessera
