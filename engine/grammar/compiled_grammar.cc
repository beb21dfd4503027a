#include "engine/grammar/compiled_grammar.h"

#include <algorithm>
#include <limits>

#include "engine/grammar/state_cache.h"

namespace tessera::grammar {
namespace {

std::string state_key(const StackSet& state) {
  return std::string(reinterpret_cast<const char*>(state.data()), state.size() * sizeof(uint32_t));
}

}  // namespace

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab, CompiledGrammarLimits limits,
                                 std::shared_ptr<TableStore> shared)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), limits_(limits), stacks_(grammar_, limits.max_stack_nodes),
      shared_(std::move(shared)), tables_(grammar_.elements.size()), fit_states_(stacks_, limits_.walk_states) {}

CompiledGrammar::CompiledGrammar(const PreparedGrammar& prepared, std::shared_ptr<const TokenVocabulary> vocab,
                                 CompiledGrammarLimits limits)
    : CompiledGrammar(prepared.grammar, std::move(vocab), limits, nullptr) {
  if (prepared.tables.size() != tables_.size()) throw GrammarError("internal: a prepared grammar's tables do not match it");
  tables_ = prepared.tables;
}

std::shared_ptr<const PreparedGrammar> CompiledGrammar::prepared() const {
  return std::make_shared<const PreparedGrammar>(PreparedGrammar{grammar_, tables_, vocab_});
}

StackSet CompiledGrammar::advance(const StackSet& state, int32_t token) {
  stacks_.set_budget(limits_.token_budget);
  return advance_bytes(state, token);
}

StackSet CompiledGrammar::advance_bytes(const StackSet& state, int32_t token) {
  const std::string& bytes = vocab_->text(token);
  if (bytes.empty()) return {};
  scratch_a_ = state;
  for (unsigned char b : bytes) {
    stacks_.advance(scratch_a_, b, scratch_b_);
    std::swap(scratch_a_, scratch_b_);
    if (scratch_a_.empty()) break;
  }
  return scratch_a_;
}

const PositionTable& CompiledGrammar::table(uint32_t position) {
  std::shared_ptr<const PositionTable>& t = tables_[position];
  if (t) return *t;
  const std::string form = shared_ ? reachable_form(grammar_, position, limits_.max_shared_form_bytes) : std::string();
  if (!form.empty()) t = shared_->find(form);
  if (t) {
    ++tables_shared_;
    return *t;
  }
  t = build_table(position);
  ++tables_built_;
  if (!form.empty()) shared_->insert(form, t);
  return *t;
}

// Walks every token from a stack holding only `position` above kExit, in
// sorted order so each token reuses the states of the prefix it shares with
// the previous one. A token is accepted when its bytes are consumed (its
// rule may end exactly at its last byte), context-dependent when the rule
// ended with bytes left over, rejected otherwise.
std::shared_ptr<const PositionTable> CompiledGrammar::build_table(uint32_t position) {
  auto table = std::make_shared<PositionTable>();
  PositionTable& t = *table;
  enum Verdict : uint8_t { kReject, kAccept, kDepends };
  const std::vector<int32_t>& sorted = vocab_->sorted();
  const std::vector<uint32_t>& shared = vocab_->shared_prefix();
  const size_t longest = vocab_->longest();
  StateCache states(stacks_, limits_.walk_states);
  std::vector<uint32_t> history(longest + 1);  // [bytes consumed] -> state, along the current token
  std::vector<uint8_t> exited(longest + 1, 0);
  history[0] = states.intern({stacks_.start_at(position)});
  size_t valid = 0;                                        // history[0..valid] belong to the previous token
  size_t dead_at = std::numeric_limits<size_t>::max();     // where the previous token's state emptied
  std::vector<int32_t> accepted;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const std::string& bytes = vocab_->text(sorted[i]);
    const size_t common = std::min<size_t>(shared[i], valid);
    Verdict verdict;
    if (dead_at != std::numeric_limits<size_t>::max() && shared[i] >= dead_at) {
      verdict = exited[dead_at] ? kDepends : kReject;  // a prefix already failed
    } else {
      dead_at = std::numeric_limits<size_t>::max();
      if (states.nearly_full(bytes.size())) states.keep_only(history.data(), common + 1);
      size_t j = common;
      while (j < bytes.size()) {
        exited[j + 1] = exited[j] || states.holds_exit(history[j]);
        history[j + 1] = states.step(history[j], static_cast<unsigned char>(bytes[j]));
        ++j;
        if (history[j] == StateCache::kDead) {
          dead_at = j;
          break;
        }
      }
      valid = j;
      if (dead_at == j) verdict = exited[j] ? kDepends : kReject;
      else verdict = kAccept;
    }
    if (verdict == kAccept) accepted.push_back(sorted[i]);
    else if (verdict == kDepends) t.context_dependent.push_back(sorted[i]);
  }
  if (accepted.size() * 32 > vocab_->size()) {
    t.dense = true;
    t.accepted = TokenMask(vocab_->size());
    for (int32_t id : accepted) t.accepted.set(id);
  } else {
    t.accepted_ids = std::move(accepted);
  }
  front_code_context_tokens(*vocab_, t);
  return table;
}

void CompiledGrammar::build_all_tables(const std::function<void()>& after_each) {
  for (uint32_t p = 0; p < grammar_.elements.size(); ++p) {
    if (grammar_.elements[p].kind == Element::Kind::kBytes && !tables_[p]) {
      stacks_.set_budget(limits_.mask_budget);
      table(p);
      if (after_each) after_each();
    }
  }
}

// Adds the context-dependent tokens of `table` that fit on `stack`. Like a
// table's walk, each token starts from the states of the prefix it shares
// with the token before it, so checking thousands of tokens that leave a
// short rule (every token past one character of a bounded string) costs a
// walk over their front-coded bytes, not a parse of each.
void CompiledGrammar::add_fitting(uint32_t stack, const PositionTable& table, StateCache& states, TokenMask& mask) {
  const std::vector<int32_t>& tokens = table.context_dependent;
  if (tokens.empty()) return;
  std::vector<uint32_t> history(vocab_->longest() + 1);  // [bytes consumed] -> state, along the token before
  history[0] = states.intern({stack});
  size_t dead_from = std::numeric_limits<size_t>::max();  // where the token before's state emptied
  const char* suffix = table.context_suffixes.data();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const char* const suffix_end = table.context_suffixes.data() + table.context_suffix_end[i];
    const size_t shared = table.context_shared[i];
    const size_t length = shared + size_t(suffix_end - suffix);
    if (shared >= dead_from) {  // a prefix already failed
      suffix = suffix_end;
      continue;
    }
    dead_from = std::numeric_limits<size_t>::max();
    if (states.nearly_full(length)) states.keep_only(history.data(), shared + 1);
    size_t j = shared;
    for (; suffix != suffix_end; ++suffix, ++j) {
      history[j + 1] = states.step(history[j], static_cast<unsigned char>(*suffix));
      if (history[j + 1] == StateCache::kDead) {
        dead_from = j + 1;
        break;
      }
    }
    suffix = suffix_end;
    if (dead_from > length) mask.set(tokens[i]);
  }
}

const TokenMask& CompiledGrammar::allowed(const StackSet& state) {
  const std::string key = state_key(state);
  if (auto found = mask_index_.find(key); found != mask_index_.end()) {
    masks_.splice(masks_.end(), masks_, found->second);
    return found->second->second;
  }
  stacks_.set_budget(limits_.mask_budget);
  TokenMask mask(vocab_->size());
  for (uint32_t stack : state) {
    if (stack == ParseStacks::kEmpty || stack == ParseStacks::kExit) continue;
    const PositionTable& t = table(stacks_.top(stack));
    if (t.dense) mask.merge(t.accepted);
    for (int32_t id : t.accepted_ids) mask.set(id);
    add_fitting(stack, t, fit_states_, mask);
  }
  if (masks_.size() >= limits_.cached_masks) {
    mask_index_.erase(masks_.front().first);
    masks_.pop_front();
  }
  masks_.emplace_back(key, std::move(mask));
  mask_index_[key] = std::prev(masks_.end());
  return masks_.back().second;
}

}  // namespace tessera::grammar
