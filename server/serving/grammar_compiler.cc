#include "server/serving/grammar_compiler.h"

#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <time.h>

#include <exception>

#include "engine/grammar/gbnf_parser.h"
#include "engine/io/content_hash.h"
#include "server/serving/api_error.h"
#include "server/serving/low_priority.h"

namespace tessera {
namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

class BudgetExceeded : public std::exception {};

// One compilation slot, taken without waiting.
class Slot {
 public:
  Slot(std::atomic<int>& running, int limit) : running_(running) { taken_ = running_.fetch_add(1) < limit; }
  ~Slot() { running_.fetch_sub(1); }
  bool taken() const { return taken_; }

 private:
  std::atomic<int>& running_;
  bool taken_ = false;
};

class SlotsTaken : public std::exception {};

}  // namespace

GrammarCompiler::GrammarCompiler(std::function<std::vector<std::string>()> vocabulary, const StructuredOutputConfig& config,
                                 std::shared_ptr<const ArtifactCache> cache)
    : vocabulary_source_(std::move(vocabulary)), config_(config), cache_(std::move(cache)) {}

std::shared_ptr<const grammar::TokenVocabulary> GrammarCompiler::vocabulary() {
  std::call_once(vocab_once_, [&] {
    std::vector<std::string> texts = vocabulary_source_();
    if (cache_) {
      // The vocabulary's name in the cache: every token's bytes, in id order.
      ContentHash digest;
      digest.add_number(int64_t(texts.size()));
      for (const std::string& t : texts) digest.add(t);
      tables_->persist_to(cache_, digest.hex(), texts.size());
    }
    vocab_ = std::make_shared<const grammar::TokenVocabulary>(std::move(texts));
  });
  return vocab_;
}

std::shared_ptr<const GrammarCompiler::Outcome> GrammarCompiler::cached(const Digest& key) {
  std::lock_guard lock(mutex_);
  auto found = index_.find(key);
  if (found == index_.end()) return nullptr;
  entries_.splice(entries_.end(), entries_, found->second);
  return found->second->second;
}

void GrammarCompiler::remember(const Digest& key, const std::shared_ptr<const Outcome>& outcome) {
  if (config_.cached_grammars <= 0) return;
  std::lock_guard lock(mutex_);
  if (index_.count(key)) return;
  if (entries_.size() >= size_t(config_.cached_grammars)) {
    index_.erase(entries_.front().first);
    entries_.pop_front();
  }
  entries_.emplace_back(key, outcome);
  index_[key] = std::prev(entries_.end());
}

GrammarCompiler::Outcome GrammarCompiler::build(std::string gbnf, double cpu_spent) {
  const double start = thread_cpu_seconds() - cpu_spent;
  Outcome out;
  try {
    grammar::CompiledGrammar compiled(grammar::parse_gbnf(gbnf), vocabulary(), grammar::CompiledGrammarLimits{}, tables_);
    const size_t from_cache = tables_->loaded_from_cache();
    compiled.initial();  // expands the root: a grammar nesting too deep fails here, not in the model loop
    compiled.build_all_tables([&] {
      if (thread_cpu_seconds() - start > config_.compile_budget_s) throw BudgetExceeded();
    });
    if (const size_t read = tables_->loaded_from_cache() - from_cache; read > 0) {
      spdlog::info("output grammar: {} position tables walked, {} read from the artifact cache", compiled.tables_built(), read);
    }
    out.compiled = {std::move(gbnf), compiled.prepared()};
  } catch (const grammar::GrammarError& e) {
    out = {{}, 400, e.what()};
  } catch (const BudgetExceeded&) {
    out = {{}, 400, "the grammar needs more than " + std::to_string(config_.compile_budget_s) +
                        " s of CPU time to compile (structured_output.compile_budget_s); simplify it"};
  }
  return out;
}

std::shared_ptr<const GrammarCompiler::Outcome> GrammarCompiler::find_or_build(const std::function<std::string()>& identity,
                                                                               const std::function<std::string()>& lower) {
  const auto digest = [](const std::string& text) {
    Digest d{};
    SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), d.data());
    return d;
  };
  const Digest request_key = digest(identity());
  if (auto hit = cached(request_key)) return hit;
  Slot slot(running_, config_.max_concurrent_compiles);
  if (!slot.taken()) throw SlotsTaken();
  const double start = thread_cpu_seconds();
  std::shared_ptr<const Outcome> outcome;
  std::string gbnf;
  try {
    gbnf = lower();
  } catch (const ApiError& e) {
    outcome = std::make_shared<const Outcome>(Outcome{{}, e.status(), e.what(), e.param()});
  }
  if (!outcome) {
    const Digest text_key = digest(gbnf);
    outcome = cached(text_key);
    if (!outcome) {
      ++compilations_;
      outcome = std::make_shared<const Outcome>(build(std::move(gbnf), thread_cpu_seconds() - start));
      remember(text_key, outcome);
    }
  }
  remember(request_key, outcome);
  return outcome;
}

GrammarCompiler::Compiled GrammarCompiler::compile(const std::function<std::string()>& identity,
                                                   const std::function<std::string()>& lower, const std::string& param) {
  std::shared_ptr<const Outcome> outcome;
  try {
    run_at_low_priority([&] { outcome = find_or_build(identity, lower); });
  } catch (const SlotsTaken&) {
    throw ApiError(429, "rate_limit_error", "too many output grammars are compiling for this model; retry later", param,
                   "rate_limit_exceeded");
  }
  if (!outcome->compiled.prepared) {
    // A lowering refusal is passed on as it was; a compile refusal is named here.
    if (!outcome->param.empty()) throw ApiError(outcome->status, "invalid_request_error", outcome->error, outcome->param);
    throw ApiError(outcome->status, "invalid_request_error", "'" + param + "': " + outcome->error, param);
  }
  return outcome->compiled;
}

GrammarCompiler::Compiled GrammarCompiler::compile_text(const std::string& gbnf, const std::string& param) {
  return compile([&] { return gbnf; }, [&] { return gbnf; }, param);
}

}  // namespace tessera
