#include "server/serving/grammar_compiler.h"

#include <openssl/sha.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <exception>
#include <thread>

#include "engine/grammar/gbnf_parser.h"
#include "server/serving/api_error.h"

namespace tessera {
namespace {

// How much less CPU priority a compilation has than the model loop: the
// loop's threads win a shared core while a client's grammar compiles.
constexpr int kCompileNice = 10;

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

class BudgetExceeded : public std::exception {};

// One compilation slot, taken without waiting.
class Slot {
 public:
  Slot(std::atomic<int>& running, int limit) : running_(running) {
    taken_ = running_.fetch_add(1) < limit;
  }
  ~Slot() { running_.fetch_sub(1); }
  bool taken() const { return taken_; }

 private:
  std::atomic<int>& running_;
  bool taken_ = false;
};

}  // namespace

GrammarCompiler::GrammarCompiler(std::function<std::vector<std::string>()> vocabulary, const StructuredOutputConfig& config)
    : vocabulary_source_(std::move(vocabulary)), config_(config) {}

std::shared_ptr<const grammar::TokenVocabulary> GrammarCompiler::vocabulary() {
  std::call_once(vocab_once_, [&] { vocab_ = std::make_shared<const grammar::TokenVocabulary>(vocabulary_source_()); });
  return vocab_;
}

std::shared_ptr<const GrammarCompiler::Outcome> GrammarCompiler::cached(const Digest& key) {
  std::lock_guard lock(mutex_);
  auto found = index_.find(key);
  if (found == index_.end()) return nullptr;
  entries_.splice(entries_.end(), entries_, found->second);
  return found->second->second;
}

void GrammarCompiler::remember(const Digest& key, std::shared_ptr<const Outcome> outcome) {
  if (config_.cached_grammars <= 0) return;
  std::lock_guard lock(mutex_);
  if (index_.count(key)) return;
  if (entries_.size() >= size_t(config_.cached_grammars)) {
    index_.erase(entries_.front().first);
    entries_.pop_front();
  }
  entries_.emplace_back(key, std::move(outcome));
  index_[key] = std::prev(entries_.end());
}

GrammarCompiler::Outcome GrammarCompiler::build(const std::string& gbnf) {
  setpriority(PRIO_PROCESS, pid_t(syscall(SYS_gettid)), kCompileNice);
  const double start = thread_cpu_seconds();
  try {
    grammar::CompiledGrammar compiled(grammar::parse_gbnf(gbnf), vocabulary(), grammar::CompiledGrammarLimits{}, tables_);
    compiled.initial();  // expands the root: a grammar nesting too deep fails here, not in the model loop
    compiled.build_all_tables([&] {
      if (thread_cpu_seconds() - start > config_.compile_budget_s) throw BudgetExceeded();
    });
    return {compiled.prepared(), {}};
  } catch (const grammar::GrammarError& e) {
    return {nullptr, e.what()};
  } catch (const BudgetExceeded&) {
    return {nullptr, "the grammar needs more than " + std::to_string(config_.compile_budget_s) +
                         " s of CPU time to compile (structured_output.compile_budget_s); simplify it"};
  } catch (const std::exception& e) {
    return {nullptr, std::string("the grammar could not be compiled: ") + e.what()};
  }
}

std::shared_ptr<const grammar::PreparedGrammar> GrammarCompiler::compile(const std::string& gbnf, const std::string& param) {
  Digest key{};
  SHA256(reinterpret_cast<const unsigned char*>(gbnf.data()), gbnf.size(), key.data());
  std::shared_ptr<const Outcome> outcome = cached(key);
  if (!outcome) {
    Slot slot(running_, config_.max_concurrent_compiles);
    if (!slot.taken()) {
      throw ApiError(429, "rate_limit_error", "too many output grammars are compiling for this model; retry later", param,
                     "rate_limit_exceeded");
    }
    ++compilations_;
    // A thread of its own, so lowering its priority leaves the request
    // thread (and whatever runs on it next) as it was.
    Outcome built;
    std::thread worker([&] { built = build(gbnf); });
    worker.join();
    outcome = std::make_shared<const Outcome>(std::move(built));
    remember(key, outcome);
  }
  if (!outcome->prepared) throw ApiError::invalid("'" + param + "': " + outcome->error, param);
  return outcome->prepared;
}

}  // namespace tessera
