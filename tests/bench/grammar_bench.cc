// Output-grammar costs on a real vocabulary: for each JSON schema in a file
// ({"name": schema, ...}), the time to lower and compile it, to build the
// first token mask, and a steady-state mask (a state already seen).
//   tessera_grammar_bench MODEL.gguf SCHEMAS.json
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "engine/grammar/compiled_grammar.h"
#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema_to_gbnf.h"
#include "engine/grammar/tokenizer_texts.h"
#include "models/gguf/gguf_file.h"
#include "models/tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: tessera_grammar_bench MODEL.gguf SCHEMAS.json\n";
    return 2;
  }
  const tessera::Tokenizer tokenizer = tessera::Tokenizer::from_gguf(tessera::gguf::File::open(argv[1]));
  auto t0 = Clock::now();
  auto vocab = std::make_shared<const tessera::grammar::TokenVocabulary>(tessera::grammar::tokenizer_texts(tokenizer, tokenizer.vocab().size()));
  std::printf("vocabulary: %zu tokens sorted in %.1f ms\n", vocab->size(), ms_since(t0));
  std::ifstream in(argv[2]);
  std::stringstream text;
  text << in.rdbuf();
  const auto schemas = nlohmann::ordered_json::parse(text.str());
  // Schemas after the first find the tables their primitives share in the store.
  auto store = std::make_shared<tessera::grammar::TableStore>();
  std::printf("%-16s %10s %12s %12s %14s %8s %8s\n", "schema", "compile_ms", "first_mask_ms", "cached_us", "all_tables_ms",
              "built", "shared");
  for (const auto& [name, schema] : schemas.items()) {
    t0 = Clock::now();
    tessera::grammar::CompiledGrammar g(tessera::grammar::parse_gbnf(tessera::grammar::json_schema_to_gbnf(schema)), vocab, {},
                                        store);
    const tessera::grammar::StackSet start = g.initial();
    const double compile = ms_since(t0);
    t0 = Clock::now();
    const size_t allowed = g.allowed(start).count();
    const double first = ms_since(t0);
    t0 = Clock::now();
    for (int i = 0; i < 100; ++i) g.allowed(start);
    const double cached = ms_since(t0) * 10.0;
    t0 = Clock::now();
    g.build_all_tables();
    const double all = ms_since(t0);
    std::printf("%-16s %10.2f %12.2f %12.1f %14.1f %8zu %8zu  (%zu tokens allowed first)\n", name.c_str(), compile, first,
                cached, all, g.tables_built(), g.tables_shared(), allowed);
  }
  return 0;
}
