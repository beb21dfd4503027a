// Output-grammar costs on a real vocabulary: for each JSON schema in a file
// ({"name": schema, ...}), the time to lower and compile it, to build the
// first token mask, and a steady-state mask (a state already seen).
//   tessera_grammar_bench MODEL.gguf SCHEMAS.json
// With a third file ({"name": instance, ...}, one valid instance a schema):
// each instance is tokenized and walked token by token (the token mask,
// then the step), once on a fresh grammar and once more on the same one,
// printing one JSON line a schema with the timings and the token ids. Each
// schema starts from no token tables, unless --shared-tables: then all share
// one store, first filled with every table of the any-JSON-object grammar
// (as a daemon's store is once it has served a JSON request).
//   tessera_grammar_bench MODEL.gguf SCHEMAS.json INSTANCES.json [--shared-tables]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "engine/grammar/compiled_grammar.h"
#include "engine/grammar/gbnf_parser.h"
#include "engine/grammar/json_schema_to_gbnf.h"
#include "engine/runtime/tokenizer_texts.h"
#include "models/gguf/gguf_file.h"
#include "models/tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

nlohmann::ordered_json read_json(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::ordered_json::parse(text.str());
}

// Microseconds for each token's mask and step along `tokens`; throws when
// the grammar refuses one.
std::vector<double> walk(tessera::grammar::CompiledGrammar& g, const std::vector<int32_t>& tokens) {
  std::vector<double> us;
  tessera::grammar::StackSet state = g.initial();
  for (int32_t token : tokens) {
    const auto t0 = Clock::now();
    const bool allowed = g.allowed(state).test(token);
    state = g.advance(state, token);
    us.push_back(ms_since(t0) * 1000.0);
    if (!allowed || state.empty()) throw std::runtime_error("token " + std::to_string(token) + " refused");
  }
  return us;
}

int walk_instances(const tessera::Tokenizer& tokenizer, std::shared_ptr<const tessera::grammar::TokenVocabulary> vocab,
                   const nlohmann::ordered_json& schemas, const nlohmann::ordered_json& instances, bool shared_tables) {
  auto shared = std::make_shared<tessera::grammar::TableStore>();
  if (shared_tables) {
    tessera::grammar::CompiledGrammar(tessera::grammar::parse_gbnf(tessera::grammar::json_object_gbnf()), vocab, {}, shared)
        .build_all_tables();
  }
  for (const auto& [name, schema] : schemas.items()) {
    const std::string text = instances.at(name).dump();  // compact: no whitespace
    const auto ids = tokenizer.encode(text);
    const std::vector<int32_t> tokens(ids.begin(), ids.end());
    auto t0 = Clock::now();
    tessera::grammar::CompiledGrammar g(tessera::grammar::parse_gbnf(tessera::grammar::json_schema_to_gbnf(schema)), vocab, {},
                                        shared_tables ? shared : std::make_shared<tessera::grammar::TableStore>());
    const double compile = ms_since(t0);
    const std::vector<double> cold = walk(g, tokens);
    const std::vector<double> warm = walk(g, tokens);
    nlohmann::ordered_json line = {{"schema", name}, {"compile_ms", compile}, {"cold_us", cold}, {"warm_us", warm},
                                   {"tokens", tokens}, {"text", text}};
    std::cout << line.dump() << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool shared_tables = argc == 5 && std::string(argv[4]) == "--shared-tables";
  if (argc != 3 && argc != 4 && !shared_tables) {
    std::cerr << "usage: tessera_grammar_bench MODEL.gguf SCHEMAS.json [INSTANCES.json [--shared-tables]]\n";
    return 2;
  }
  const tessera::Tokenizer tokenizer = tessera::Tokenizer::from_gguf(tessera::gguf::File::open(argv[1]));
  auto t0 = Clock::now();
  auto vocab = std::make_shared<const tessera::grammar::TokenVocabulary>(tessera::grammar::tokenizer_texts(tokenizer, tokenizer.vocab().size()));
  const auto schemas = read_json(argv[2]);
  if (argc >= 4) return walk_instances(tokenizer, vocab, schemas, read_json(argv[3]), shared_tables);
  std::printf("vocabulary: %zu tokens sorted in %.1f ms\n", vocab->size(), ms_since(t0));
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
