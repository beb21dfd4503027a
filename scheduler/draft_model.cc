#include "scheduler/draft_model.h"

#include <algorithm>
#include <unordered_set>

#include "engine/core/error.h"
#include "engine/core/token_ids.h"

namespace tessera {
namespace {

// Same model kind and the same text for every id both vocabularies have:
// a draft may have a few tokens more or fewer (padding rows), no other
// difference.
void check_same_tokenizer(const Vocab& draft, const Vocab& target) {
  if (draft.model != target.model || draft.byte_level != target.byte_level) {
    throw Error("draft model: its tokenizer is of another kind than the served model's; a draft must share the tokenizer");
  }
  const size_t shared = std::min(draft.size(), target.size());
  if (std::max(draft.size(), target.size()) - shared > 128) {
    throw Error("draft model: its vocabulary has " + std::to_string(draft.size()) + " tokens, the served model's " +
                std::to_string(target.size()) + "; a draft must share the tokenizer");
  }
  for (size_t id = 0; id < shared; ++id) {
    if (draft.texts[id] != target.texts[id]) {
      throw Error("draft model: token " + std::to_string(id) + " is '" + draft.texts[id] + "' in the draft and '" +
                  target.texts[id] + "' in the served model; a draft must share the tokenizer");
    }
  }
}

}  // namespace

DraftModel::DraftModel(std::unique_ptr<ModelRunner> draft, const Model& target)
    : runner_(std::move(draft)),
      target_vocab_(target.spec().vocab_size),
      end_tokens_(target.tokenizer().vocab().end_of_generation),
      pages_(int32_t(runner_->kv_cache().n_pages())) {
  check_same_tokenizer(runner_->model().tokenizer().vocab(), target.tokenizer().vocab());
}

DraftModel::~DraftModel() = default;

void DraftModel::forget(uint64_t seq_id, StepPlan& plan) {
  auto it = mirrors_.find(seq_id);
  if (it == mirrors_.end()) return;
  for (int32_t page : it->second.pages) pages_.release(page);
  mirrors_.erase(it);
  plan.finished.push_back(seq_id);
}

bool DraftModel::ensure_pages(Mirror& m, size_t positions, std::span<const DraftJob> jobs, StepPlan& plan) {
  const size_t ps = size_t(runner_->page_size());
  const size_t needed = (positions + ps - 1) / ps;
  if (needed > m.pages.size() && int64_t(needed - m.pages.size()) > pages_.free_count()) {
    // Sequences not drafting in this step give their pages up first.
    std::unordered_set<uint64_t> busy;
    for (const DraftJob& j : jobs) busy.insert(j.seq_id);
    std::vector<uint64_t> idle;
    for (const auto& [id, mirror] : mirrors_) {
      if (!busy.count(id)) idle.push_back(id);
    }
    for (uint64_t id : idle) forget(id, plan);
  }
  while (m.pages.size() < needed) {
    const std::optional<int32_t> page = pages_.allocate();
    if (!page) return false;
    m.pages.push_back(*page);
  }
  return true;
}

DraftModel::Drafting DraftModel::prepare(const DraftJob& job, int room, StepPlan& plan) {
  const auto [it, fresh] = mirrors_.try_emplace(job.seq_id);
  Mirror& m = it->second;
  const size_t len = job.tokens.size();
  // The mirror agrees with the sequence up to `synced`; past it, up to the
  // first token the served model drew differently from the proposal.
  size_t agree = std::min(m.synced, len);
  while (agree < m.tokens.size() && agree < len && m.tokens[agree] == job.tokens[agree]) ++agree;
  // The sequence's last token always goes through the draft: its logits
  // give the first proposal.
  const size_t valid = std::min({agree, m.computed, len - 1});
  if (fresh || agree < m.tokens.size()) {
    // The runner's tokens for the sequence must end where they stop agreeing;
    // the pages stay, the keys past `valid` are written again.
    if (!fresh) plan.finished.push_back(job.seq_id);
    NewSequence& s = plan.new_sequences.emplace_back();
    s.seq_id = job.seq_id;
    s.tokens.assign(job.tokens.begin(), job.tokens.begin() + long(valid));
    s.prompt_len = uint32_t(valid);
    s.sampling.temperature = 0.0f;
    m.tokens = s.tokens;
    m.pages_sent = 0;
  }
  m.computed = valid;
  m.synced = valid;
  return {&job, &m, room, {}, false};
}

SequenceStep DraftModel::step_for(Mirror& m, uint64_t seq_id, std::span<const int32_t> tokens, size_t start, bool sample) {
  SequenceStep step;
  step.seq_id = seq_id;
  step.tokens.assign(tokens.begin(), tokens.end());
  step.start_position = int32_t(start);
  step.pages_from = uint32_t(m.pages_sent);
  step.pages.assign(m.pages.begin() + long(m.pages_sent), m.pages.end());
  m.pages_sent = m.pages.size();
  step.sample = sample;
  return step;
}

void DraftModel::record(Drafting& d, const SampledToken& token) {
  d.proposals.push_back(token.id);
  d.mirror->tokens.push_back(token.id);
  const bool ends = std::find(end_tokens_.begin(), end_tokens_.end(), token.id) != end_tokens_.end();
  if (ends || !token_in_vocabulary(token.id, target_vocab_) || int(d.proposals.size()) >= d.room) d.done = true;
}

void DraftModel::catch_up(StepPlan plan, std::vector<Drafting>& drafting) {
  const DecoderCapacity& cap = runner_->capacity();
  size_t budget = size_t(cap.max_tokens);
  std::vector<Drafting*> in_plan;
  for (Drafting& d : drafting) {
    const std::span<const int32_t> tokens = d.job->tokens;
    const size_t from = d.mirror->computed;
    const size_t n = std::min(tokens.size() - from, budget);
    if (n == 0 || int(plan.steps.size()) == cap.max_seqs) continue;
    plan.steps.push_back(step_for(*d.mirror, d.job->seq_id, tokens.subspan(from, n), from, from + n == tokens.size()));
    in_plan.push_back(&d);
    budget -= n;
  }
  const StepResult result = runner_->step(plan);
  for (size_t k = 0; k < in_plan.size(); ++k) {
    Drafting& d = *in_plan[k];
    Mirror& m = *d.mirror;
    const std::span<const int32_t> tokens = d.job->tokens;
    m.computed += plan.steps[k].tokens.size();
    // The runner now holds the sequence up to there (the mirror's tokens are a prefix of it).
    if (m.computed > m.tokens.size()) {
      m.tokens.insert(m.tokens.end(), tokens.begin() + long(m.tokens.size()), tokens.begin() + long(m.computed));
    }
    if (k < result.sequences.size() && result.sequences[k].sampled) record(d, result.sequences[k].token);
  }
}

bool DraftModel::extend(std::vector<Drafting>& drafting) {
  StepPlan plan;
  std::vector<Drafting*> in_plan;
  for (Drafting& d : drafting) {
    if (d.done || d.proposals.empty()) continue;
    const size_t position = d.mirror->tokens.size() - 1;  // of the last proposal, not yet through the draft
    plan.steps.push_back(step_for(*d.mirror, d.job->seq_id, std::span(d.mirror->tokens).subspan(position, 1), position, true));
    in_plan.push_back(&d);
  }
  if (plan.steps.empty()) return false;
  const StepResult result = runner_->step(plan);
  for (size_t k = 0; k < in_plan.size(); ++k) {
    ++in_plan[k]->mirror->computed;
    if (k < result.sequences.size() && result.sequences[k].sampled) record(*in_plan[k], result.sequences[k].token);
    else in_plan[k]->done = true;
  }
  return true;
}

void DraftModel::propose(StepPlan& plan, std::span<const DraftJob> jobs) {
  StepPlan first;
  for (uint64_t id : plan.finished) forget(id, first);
  const int64_t max_context = runner_->model().spec().max_context;
  std::vector<Drafting> drafting;
  drafting.reserve(jobs.size());
  for (const DraftJob& job : jobs) {
    if (job.step >= plan.steps.size() || plan.steps[job.step].seq_id != job.seq_id) {
      throw Error("draft model: a draft job names a step the plan does not have");
    }
    // The draft computes the sequence and all proposals but the last.
    const int room = int(std::min<int64_t>(job.room, max_context - int64_t(job.tokens.size())));
    if (room <= 0 || job.tokens.empty()) continue;
    Drafting d = prepare(job, room, first);
    if (!ensure_pages(*d.mirror, job.tokens.size() + size_t(room) - 1, jobs, first)) continue;
    drafting.push_back(std::move(d));
  }
  catch_up(std::move(first), drafting);
  while (extend(drafting)) {
  }
  for (Drafting& d : drafting) {
    d.mirror->synced = std::min(d.job->tokens.size(), d.mirror->tokens.size());
    SequenceStep& step = plan.steps[d.job->step];
    for (int32_t id : d.proposals) {
      if (!token_in_vocabulary(id, target_vocab_)) break;
      step.tokens.push_back(id);
      ++step.draft;
    }
  }
}

}  // namespace tessera
