// Output grammars: GBNF parsing, the byte-level parser, token masks
// against a token-by-token check, and the JSON schema / regex lowerings
// against independent matchers (std::regex, hand-checked JSON).
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <tuple>
#include <regex>

#include "engine/grammar/compiled_grammar.h"
#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/grammar_matcher.h"
#include "engine/grammar/integer_range.h"
#include "engine/grammar/json_schema_to_gbnf.h"
#include "engine/grammar/regex_to_gbnf.h"
#include "engine/runtime/tokenizer_texts.h"
#include "engine/grammar/utf8_ranges.h"
#include "models/gguf/gguf_file.h"
#include "models/tokenizer/tokenizer.h"
#include "engine/core/unicode.h"
#include "tests/unit/test_files.h"

namespace tessera::grammar {
namespace {

using Json = nlohmann::ordered_json;

bool matches(const std::string& gbnf, const std::string& text) {
  const Grammar g = parse_gbnf(gbnf);
  ParseStacks stacks(g, 1u << 20);
  StackSet state = stacks.initial(), next;
  for (unsigned char b : text) {
    stacks.advance(state, b, next);
    state.swap(next);
    if (state.empty()) return false;
  }
  return std::binary_search(state.begin(), state.end(), ParseStacks::kEmpty);
}

TEST(Gbnf, ParsesRulesAcrossLinesWithCommentsAndRepetitions) {
  const std::string g = R"(# a list of small numbers
root ::= "[" num
   ( "," num )* "]"   # rule bodies may span lines
num  ::= [1-9] [0-9]{0,2} | "0"
)";
  EXPECT_TRUE(matches(g, "[1,20,300]"));
  EXPECT_TRUE(matches(g, "[0]"));
  EXPECT_FALSE(matches(g, "[1000]"));
  EXPECT_FALSE(matches(g, "[01]"));
  EXPECT_FALSE(matches(g, "[1,]"));
}

TEST(Gbnf, RefusesBadGrammarsWithTheReason) {
  auto message = [](const std::string& g) {
    try {
      parse_gbnf(g);
    } catch (const GrammarError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("root ::= item\n").find("'item' is used but never defined"), std::string::npos);
  EXPECT_NE(message("root ::= root \"a\" | \"b\"\n").find("left recursion"), std::string::npos);
  EXPECT_NE(message("root ::= x root\nx ::= \"a\"?\n").find("left recursion"), std::string::npos);
  EXPECT_NE(message("root ::= \"a\\q\"\n").find("unknown escape"), std::string::npos);
  EXPECT_NE(message("root ::= \"a\"{3,1}\n").find("below its minimum"), std::string::npos);
  EXPECT_NE(message("root ::= \"a\"{99999}\n").find("above"), std::string::npos);
  EXPECT_NE(message("root ::= [b-a]\n").find("backwards"), std::string::npos);
  EXPECT_NE(message("x ::= \"a\"\n").find("no root"), std::string::npos);
  EXPECT_NE(message("root ::= ((((\"a\"\n").find("expected ')'"), std::string::npos);
}

TEST(Gbnf, ClassesWorkOnCodePointsSplitAcrossBytes) {
  const std::string g = "root ::= [α-ω]+ [^a-z]\n";
  EXPECT_TRUE(matches(g, "αβγ!"));
  EXPECT_TRUE(matches(g, "ω日"));
  EXPECT_FALSE(matches(g, "αz"));
  EXPECT_FALSE(matches(g, "a!"));
  EXPECT_FALSE(matches(g, "\xCE!"));  // a lone lead byte is not a character
}

TEST(Utf8Ranges, SequencesCoverExactlyTheRange) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    uint32_t lo = rng() % 0x110000, hi = rng() % 0x110000;
    if (lo > hi) std::swap(lo, hi);
    std::vector<ByteRangeSequence> seqs;
    utf8_sequences(lo, hi, [&](const ByteRangeSequence& s) { seqs.push_back(s); });
    for (int probe = 0; probe < 200; ++probe) {
      const uint32_t cp = probe < 4 ? std::vector<uint32_t>{lo, hi, lo ? lo - 1 : 0, hi + 1}[size_t(probe)] : rng() % 0x110000;
      if (cp > kMaxCodePoint || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
      std::string bytes;
      unicode::append_utf8(cp, &bytes);
      bool covered = false;
      for (const auto& s : seqs) {
        if (s.size() != bytes.size()) continue;
        bool all = true;
        for (size_t i = 0; i < s.size(); ++i) all &= uint8_t(bytes[i]) >= s[i].first && uint8_t(bytes[i]) <= s[i].second;
        covered |= all;
      }
      EXPECT_EQ(covered, cp >= lo && cp <= hi) << std::hex << cp << " in [" << lo << ", " << hi << "]";
    }
  }
}

// A vocabulary of JSON-ish pieces, some of which cross rule boundaries.
std::vector<std::string> small_vocab() {
  std::vector<std::string> v = {"", "{", "}", "\"", "\":", "\",", "\"}", "{\"", ":", ",", " ", "  ", "\n", "name", "age",
                                "na", "me", "1", "12", "0", "-", ".", "5", "true", "false", "null", "[", "]", "],", "\\",
                                "\\n", "\\\"", "ab", "é", "\xC3", "\xA9", "x\"", "\": \"", "\": ", "e", "E+", "[{", "}]"};
  for (int c = 32; c < 127; ++c) v.push_back(std::string(1, char(c)));
  return v;
}

TEST(CompiledGrammar, MasksEqualChecksTokenByToken) {
  const Json schema = Json::parse(R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
    "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3}},"required":["name"]})");
  const std::vector<std::string> texts = small_vocab();
  auto vocab = std::make_shared<TokenVocabulary>(texts);
  CompiledGrammar g(parse_gbnf(json_schema_to_gbnf(schema)), vocab);
  // Walk a valid output byte by byte and compare masks at every state reached.
  const std::string text = R"({"name": "x\"é", "age": -12, "tags": ["a","b"]})";
  StackSet state = g.initial();
  for (size_t i = 0; i <= text.size(); ++i) {
    const TokenMask& mask = g.allowed(state);
    for (int32_t id = 0; id < int32_t(vocab->size()); ++id) {
      EXPECT_EQ(mask.test(id), !vocab->text(id).empty() && g.accepts(state, id))
          << "token '" << vocab->text(id) << "' after '" << text.substr(0, i) << "'";
    }
    if (i == text.size()) break;
    const int32_t id = int32_t(std::find(texts.begin(), texts.end(), std::string(1, text[i])) - texts.begin());
    ASSERT_LT(size_t(id), texts.size()) << "no token for byte " << int(uint8_t(text[i]));
    state = g.advance(state, id);
    ASSERT_FALSE(state.empty()) << "the schema's grammar refused '" << text.substr(0, i + 1) << "'";
  }
  EXPECT_TRUE(std::binary_search(state.begin(), state.end(), ParseStacks::kEmpty));
  EXPECT_GT(g.tables_built(), 5u);
}

// On a real vocabulary (GPT-2's 50,257 tokens), the masks of a schema with
// a bounded string (a new parser state after every character, whose
// multi-character tokens all leave the character's rule) equal
// token-by-token checks; also with a walk cache so small that it is
// compacted on the way.
TEST(CompiledGrammar, RealVocabularyMasksEqualChecksTokenByToken) {
  const Tokenizer tokenizer = Tokenizer::from_gguf(gguf::File::open(test::data_path("tokenizer-vectors/ggml-vocab-gpt-2.gguf")));
  auto vocab = std::make_shared<const TokenVocabulary>(tokenizer_texts(tokenizer, tokenizer.vocab().size()));
  const Json schema = Json::parse(R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},
    "note":{"type":"string"},"n":{"type":"integer","minimum":-5,"maximum":300}},"required":["name","n"]})");
  const std::string text = R"({"name":"Ada \"L\" é","note":"ok then","n":217})";
  const std::vector<int32_t> ids = tokenizer.encode(text);
  for (size_t walk_states : {size_t(4096), size_t(8)}) {
    CompiledGrammar g(parse_gbnf(json_schema_to_gbnf(schema)), vocab, {.walk_states = walk_states});
    StackSet state = g.initial();
    for (size_t i = 0; i <= ids.size(); ++i) {
      const TokenMask& mask = g.allowed(state);
      size_t wrong = 0;
      for (int32_t id = 0; id < int32_t(vocab->size()); ++id) {
        if (mask.test(id) != (!vocab->text(id).empty() && g.accepts(state, id))) ++wrong;
      }
      EXPECT_EQ(wrong, 0u) << "after " << i << " tokens, walk cache of " << walk_states;
      if (i == ids.size()) break;
      ASSERT_TRUE(mask.test(ids[i])) << "token " << i << " of the valid text refused";
      state = g.advance(state, ids[i]);
    }
    EXPECT_TRUE(std::binary_search(state.begin(), state.end(), ParseStacks::kEmpty));
  }
}

// A second schema takes the tables its primitives share with the first
// from the store, and its masks still equal token-by-token checks.
TEST(CompiledGrammar, SharedTablesGiveTheSameMasks) {
  const std::vector<std::string> texts = small_vocab();
  auto vocab = std::make_shared<TokenVocabulary>(texts);
  auto store = std::make_shared<TableStore>();
  const Json first = Json::parse(R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}})");
  CompiledGrammar a(parse_gbnf(json_schema_to_gbnf(first)), vocab, {}, store);
  a.build_all_tables();  // positions of one grammar with the same reachable form share too
  const Json second = Json::parse(R"({"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"}},"required":["name"]})");
  CompiledGrammar b(parse_gbnf(json_schema_to_gbnf(second)), vocab, {}, store);
  CompiledGrammar alone(parse_gbnf(json_schema_to_gbnf(second)), vocab);
  const std::string text = R"({"name": "a\"b", "n": -3})";
  StackSet sb = b.initial(), sa = alone.initial();
  for (size_t i = 0; i <= text.size(); ++i) {
    const TokenMask& shared_mask = b.allowed(sb);
    const TokenMask& own_mask = alone.allowed(sa);
    for (int32_t id = 0; id < int32_t(vocab->size()); ++id) {
      EXPECT_EQ(shared_mask.test(id), own_mask.test(id)) << "token '" << texts[size_t(id)] << "' after '" << text.substr(0, i) << "'";
    }
    if (i == text.size()) break;
    const int32_t id = int32_t(std::find(texts.begin(), texts.end(), std::string(1, text[i])) - texts.begin());
    ASSERT_LT(size_t(id), texts.size());
    sb = b.advance(sb, id);
    sa = alone.advance(sa, id);
    ASSERT_FALSE(sb.empty());
  }
  EXPECT_GT(b.tables_shared(), 3u);
  EXPECT_LT(b.tables_built(), alone.tables_built());
}

// An ambiguous grammar costs work per stack; past the budget the mask
// throws instead of holding the model loop.
TEST(CompiledGrammar, WorkBeyondTheBudgetIsRefused) {
  std::string alternatives;
  // 200 copies of the same repetition: 200 parses alive after every letter.
  for (int i = 0; i < 200; ++i) alternatives += (i ? " | " : "") + std::string("[a-z]+");
  const std::string gbnf = "root ::= " + alternatives + "\n";
  auto vocab = std::make_shared<TokenVocabulary>(small_vocab());
  CompiledGrammar tight(parse_gbnf(gbnf), vocab, {.mask_budget = 5000, .token_budget = 100});
  const StackSet start = tight.initial();
  EXPECT_THROW(tight.allowed(start), GrammarError);
  EXPECT_THROW(tight.advance(start, 13), GrammarError);  // "name": 4 bytes over 200 parses
  CompiledGrammar roomy(parse_gbnf(gbnf), vocab);
  EXPECT_TRUE(roomy.allowed(roomy.initial()).test(13));
}

TEST(GrammarMatcher, AllowsEndTokensOnlyOnceTheGrammarMatched) {
  auto vocab = std::make_shared<TokenVocabulary>(std::vector<std::string>{"", "yes", "no", "y", "es", "!"});
  auto g = std::make_shared<CompiledGrammar>(parse_gbnf("root ::= \"yes\" | \"no\"\n"), vocab);
  GrammarMatcher m(g, {0});
  EXPECT_FALSE(m.allows(0));
  EXPECT_FALSE(m.allows(5));
  EXPECT_TRUE(m.allows(3));
  std::vector<float> logits = {1.0f, 0.5f, 0.2f, 3.0f, 0.1f, 9.0f};
  m.mask_logits(logits);
  EXPECT_EQ(logits[5], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(logits[0], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(logits[3], 3.0f);
  ASSERT_TRUE(m.advance(3));
  EXPECT_FALSE(m.advance(2));
  ASSERT_TRUE(m.advance(4));
  EXPECT_TRUE(m.complete());
  std::vector<float> end = {1.0f, 0.5f, 0.2f, 3.0f, 0.1f, 9.0f};
  m.mask_logits(end);
  EXPECT_EQ(end[0], 1.0f);  // the end token keeps its logit
  for (size_t i = 1; i < end.size(); ++i) EXPECT_EQ(end[i], -std::numeric_limits<float>::infinity());
}

TEST(IntegerRange, AcceptsExactlyTheRange) {
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 0}, {0, 9}, {1, 100}, {-5, 5}, {18, 120}, {-1234, -17}, {7, 7},
                                                           {99, 1001}, {-1000000, 999999}};
  for (const auto& [lo, hi] : ranges) {
    const std::string g = "root ::= " + integer_range_gbnf(lo, hi) + "\n";
    for (int64_t v = lo - 150; v <= hi + 150; v += (hi - lo > 5000 ? 997 : 1)) {
      EXPECT_EQ(matches(g, std::to_string(v)), v >= lo && v <= hi) << v << " in [" << lo << ", " << hi << "]";
    }
    EXPECT_FALSE(matches(g, "007"));
    EXPECT_FALSE(matches(g, "-0"));
  }
}

TEST(RegexLowering, AgreesWithStdRegex) {
  const std::vector<std::string> patterns = {"[a-c]+x?", "(ab|cd){2,3}", "\\d{3}-\\d{4}", "[^0-9]*[0-9]", "a.c",
                                             "(?:[A-Z][a-z]+ ?)+", "\\w+@\\w+\\.(com|org)", "colou?r", "x{2,}y{0,1}",
                                             "^(true|false)$", "[\\s,]+", "(a|b)*c"};
  std::mt19937 rng(3);
  const std::string alphabet = "abcdxyzACZ019-@. ,\nrolu";
  for (const std::string& p : patterns) {
    const std::string g = regex_to_gbnf(p);
    const std::regex reference(p, std::regex::ECMAScript);
    int agreed_matches = 0;
    for (int i = 0; i < 3000; ++i) {
      std::string s;
      const int len = int(rng() % 9);
      for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
      const bool expected = std::regex_match(s, reference);
      EXPECT_EQ(matches(g, s), expected) << "pattern " << p << " on '" << s << "'";
      agreed_matches += expected;
    }
    (void)agreed_matches;
  }
  for (const std::string p : {"123-4567", "ccx", "Hello World", "me@x.org", "colour", "abcdcd", "xxx"}) {
    bool any = false;
    for (const std::string& pattern : patterns) any |= matches(regex_to_gbnf(pattern), p) && std::regex_match(p, std::regex(pattern));
    EXPECT_TRUE(any) << p;
  }
}

TEST(RegexLowering, RefusesWhatAGrammarCannotExpress) {
  for (const char* p : {"(a)\\1", "(?=a)b", "\\bword", "a$b", "(abc", "[z-a]", "a++"}) {
    EXPECT_THROW(regex_to_gbnf(p), GrammarError) << p;
  }
}

TEST(JsonSchemaLowering, AcceptsValidAndRefusesInvalidDocuments) {
  const Json schema = Json::parse(R"({
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]}},
    "type": "object",
    "properties": {
      "id": {"type": "string", "format": "uuid"},
      "kind": {"enum": ["a", "b", 3]},
      "points": {"type": "array", "items": {"$ref": "#/$defs/point"}, "minItems": 1, "maxItems": 2},
      "note": {"type": ["string", "null"], "maxLength": 4},
      "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "fixed": {"const": {"k": [1, 2]}}
    },
    "required": ["id", "points"]
  })");
  const std::string g = json_schema_to_gbnf(schema);
  const std::string id = "\"123e4567-e89b-12d3-a456-426614174000\"";
  EXPECT_TRUE(matches(g, "{\"id\": " + id + ", \"points\": [{\"x\": 1, \"y\": -2.5e3}]}"));
  EXPECT_TRUE(matches(g, "{\"id\":" + id + ",\"kind\":3,\"points\":[{\"x\":0,\"y\":0},{\"x\":1,\"y\":1}],\"note\":null,\"age\":150,\"fixed\":{\"k\":[1,2]}}"));
  EXPECT_TRUE(matches(g, "{\"id\":" + id + ",\"points\":[{\"x\":0,\"y\":0}],\"note\":\"abcd\"}"));
  EXPECT_FALSE(matches(g, "{\"id\":" + id + ",\"points\":[]}"));                      // minItems
  EXPECT_FALSE(matches(g, "{\"points\":[{\"x\":0,\"y\":0}]}"));                       // required id
  EXPECT_FALSE(matches(g, "{\"id\":" + id + ",\"points\":[{\"x\":0}]}"));             // required y
  EXPECT_FALSE(matches(g, "{\"id\":" + id + ",\"points\":[{\"x\":0,\"y\":0}],\"note\":\"abcde\"}"));  // maxLength
  EXPECT_FALSE(matches(g, "{\"id\":" + id + ",\"points\":[{\"x\":0,\"y\":0}],\"age\":151}"));
  EXPECT_FALSE(matches(g, "{\"id\":" + id + ",\"points\":[{\"x\":0,\"y\":0}],\"other\":1}"));  // no additional keys
  EXPECT_FALSE(matches(g, "{\"id\":\"nope\",\"points\":[{\"x\":0,\"y\":0}]}"));               // format
}

TEST(JsonSchemaLowering, RecursiveReferencesAndAdditionalProperties) {
  const Json tree = Json::parse(R"({"type":"object","properties":{"v":{"type":"integer"},
    "children":{"type":"array","items":{"$ref":"#"}}},"required":["v"],"additionalProperties":{"type":"boolean"}})");
  const std::string g = json_schema_to_gbnf(tree);
  EXPECT_TRUE(matches(g, R"({"v":1,"children":[{"v":2},{"v":3,"children":[{"v":4,"x":true}]}]})"));
  EXPECT_FALSE(matches(g, R"({"v":1,"children":[{"w":2}]})"));
  EXPECT_FALSE(matches(g, R"({"v":1,"x":3})"));
  const Json bounded = Json::parse(R"({"type":"object","properties":{"v":{"type":"integer"}},"additionalProperties":true,"maxProperties":3})");
  const std::string b = json_schema_to_gbnf(bounded);
  EXPECT_TRUE(matches(b, R"({"v":1,"a":2,"b":[3]})"));
  EXPECT_TRUE(matches(b, R"({"a":2,"b":3})"));
  EXPECT_FALSE(matches(b, R"({"v":1,"a":2,"b":3,"c":4})"));
  EXPECT_FALSE(matches(b, R"({"a":2,"b":3,"c":4})"));  // sound even when 'v' is left out
}

// Number bounds and decimal steps, against strtod: every candidate is
// accepted exactly when it is a JSON number without exponent, with no more
// digits after the point than the step allows, inside the bounds.
TEST(JsonSchemaLowering, NumberRangesAgreeWithParsedValues) {
  std::vector<std::string> candidates = {"1e2", "0e0", "01", "1.", ".5", "--1", "+1", "-", "1.5.0", "-0"};
  for (const char* sign : {"", "-"}) {
    for (const char* whole : {"0", "1", "2", "3", "5", "9", "10", "11", "99", "100", "101", "150"}) {
      for (const char* fraction : {"", ".0", ".00", ".5", ".25", ".05", ".001", ".999", ".10"}) {
        candidates.push_back(std::string(sign) + whole + fraction);
      }
    }
  }
  struct Case {
    const char* schema;
    double lo, hi;
    bool lo_open, hi_open;
    int digits;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<Case> cases = {
      {R"({"type":"number","minimum":0,"maximum":100})", 0, 100, false, false, 16},
      {R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":10})", 0, 10, true, true, 16},
      {R"({"type":"number","minimum":-5,"exclusiveMaximum":3,"multipleOf":0.01})", -5, 3, false, true, 2},
      {R"({"type":"number","maximum":-2})", -inf, -2, false, false, 16},
      {R"({"type":"number","exclusiveMinimum":-1,"maximum":0})", -1, 0, true, false, 16},
      {R"({"type":"number","minimum":1,"exclusiveMinimum":true,"maximum":2})", 1, 2, true, false, 16},
      {R"({"type":"number","multipleOf":0.1})", -inf, inf, false, false, 1},
      {R"({"type":"number","minimum":3,"multipleOf":1})", 3, inf, false, false, 0},
  };
  const std::regex plain_number("-?(0|[1-9][0-9]*)(\\.([0-9]+))?");
  for (const Case& c : cases) {
    const std::string g = json_schema_to_gbnf(Json::parse(c.schema));
    for (const std::string& text : candidates) {
      std::smatch m;
      bool expected = std::regex_match(text, m, plain_number) && int(m[3].length()) <= c.digits;
      if (expected) {
        const double v = std::strtod(text.c_str(), nullptr);
        expected = (c.lo_open ? v > c.lo : v >= c.lo) && (c.hi_open ? v < c.hi : v <= c.hi);
      }
      EXPECT_EQ(matches(g, text), expected) << c.schema << " on " << text;
    }
  }
  EXPECT_THROW(json_schema_to_gbnf(Json::parse(R"({"type":"number","exclusiveMinimum":1,"exclusiveMaximum":1})")), GrammarError);
}

TEST(JsonSchemaLowering, IntegerBoundsMayBeExclusiveOrFractional) {
  const std::vector<std::tuple<const char*, int, int>> cases = {
      {R"({"type":"integer","exclusiveMinimum":-3,"maximum":7.5})", -2, 7},
      {R"({"type":"integer","minimum":-2.5,"exclusiveMaximum":4})", -2, 3},
      {R"({"type":"integer","minimum":0,"exclusiveMinimum":true,"maximum":5,"exclusiveMaximum":true})", 1, 4},
      {R"({"type":"integer","minimum":1,"exclusiveMinimum":4,"maximum":9})", 5, 9},
  };
  for (const auto& [schema, lo, hi] : cases) {
    const std::string g = json_schema_to_gbnf(Json::parse(schema));
    for (int v = -12; v <= 12; ++v) EXPECT_EQ(matches(g, std::to_string(v)), v >= lo && v <= hi) << schema << " on " << v;
    EXPECT_FALSE(matches(g, std::to_string(lo) + ".0"));
  }
}

TEST(JsonSchemaLowering, HostnamesAndImpliedMinProperties) {
  const std::string host = json_schema_to_gbnf(Json::parse(R"({"type":"string","format":"hostname"})"));
  for (const char* ok : {"\"localhost\"", "\"example.com\"", "\"a-b.c-d.e9\"", "\"x\""}) EXPECT_TRUE(matches(host, ok)) << ok;
  for (const char* bad : {"\"-a.com\"", "\"a-.com\"", "\"a..b\"", "\"a_b\"", "\"\"", "\"a.\""}) EXPECT_FALSE(matches(host, bad)) << bad;
  EXPECT_TRUE(matches(host, "\"" + std::string(63, 'a') + ".b\""));
  EXPECT_FALSE(matches(host, "\"" + std::string(64, 'a') + ".b\""));
  const std::string g = json_schema_to_gbnf(Json::parse(R"({"type":"object","properties":{"a":{"type":"integer"},
    "b":{"type":"integer"}},"required":["a"],"minProperties":1})"));
  EXPECT_TRUE(matches(g, R"({"a":1})"));
  EXPECT_FALSE(matches(g, R"({})"));
}

TEST(JsonSchemaLowering, NamesTheUnsupportedKeyword) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type":"array","uniqueItems":true})", "uniqueItems"},
      {R"({"type":"number","multipleOf":2})", "multipleOf"},
      {R"({"type":"object","patternProperties":{}})", "patternProperties"},
      {R"({"type":"string","format":"ipv6"})", "ipv6"},
      {R"({"type":"integer","multipleOf":3})", "multipleOf"},
      {R"({"type":"number","minimum":0.5})", "minimum"},
      {R"({"type":"object","properties":{"a":{}},"minProperties":1})", "minProperties"},
      {R"({"$ref":"http://example.com/s.json"})", "$ref"},
      {R"({"not":{"type":"string"}})", "not"},
  };
  for (const auto& [text, keyword] : cases) {
    try {
      json_schema_to_gbnf(Json::parse(text));
      ADD_FAILURE() << text << " was accepted";
    } catch (const GrammarError& e) {
      EXPECT_NE(std::string(e.what()).find(keyword), std::string::npos) << e.what();
    }
  }
}

TEST(JsonSchemaLowering, JsonObjectAcceptsAnyObjectOnly) {
  const std::string g = json_object_gbnf();
  EXPECT_TRUE(matches(g, R"({"a": [1, {"b": null}], "c": "\u00e9"})"));
  EXPECT_TRUE(matches(g, "{}"));
  EXPECT_FALSE(matches(g, "[1]"));
  EXPECT_FALSE(matches(g, R"({"a": 01})"));
}

}  // namespace
}  // namespace tessera::grammar
