#include "engine/runtime/model_runner.h"

#include <algorithm>
#include <array>

#include "engine/core/error.h"
#include "engine/core/token_ids.h"
#include "engine/runtime/tokenizer_texts.h"
#include "engine/runtime/parallel/plan_broadcast.h"

namespace tessera {

namespace {

// The KV budget that brings the memory in use to `fraction` of the total.
uint64_t budget_for_fraction(const Backend& backend, double fraction) {
  const MemoryInfo memory = backend.memory_info();
  if (fraction <= 0.0 || fraction > 1.0) throw Error("KV cache memory fraction must be in (0, 1]");
  const double in_use = double(memory.total_bytes - std::min(memory.free_bytes, memory.total_bytes));
  const double allowed = fraction * double(memory.total_bytes);
  if (allowed <= in_use) {
    throw Error("KV cache: the model already uses " + std::to_string(uint64_t(in_use) >> 20) + " MiB of " +
                std::to_string(memory.total_bytes >> 20) + " MiB on " + backend.describe() + ", more than the memory fraction " +
                std::to_string(fraction) + " allows; raise it or give a budget instead");
  }
  return uint64_t(allowed - in_use);
}

// The pages the configured budget, or memory fraction, holds.
int64_t budgeted_pages(const Backend& backend, const RunnerConfig& config, const KvLayout& layout, int n_layers) {
  const uint64_t budget =
      config.kv_memory_fraction > 0.0 ? budget_for_fraction(backend, config.kv_memory_fraction) : config.kv_budget_bytes;
  const int64_t pages = PagedKvCache::pages_for_budget(layout, n_layers, budget);
  if (pages < 1) {
    throw Error("KV cache budget of " + std::to_string(budget) + " bytes holds no page (one page needs " +
                std::to_string(PagedKvCache::bytes_per_page(layout, n_layers)) + " bytes)");
  }
  return pages;
}

// The sampler's view of a sequence's grammar.
class GrammarFilter : public TokenFilter {
 public:
  explicit GrammarFilter(grammar::GrammarMatcher& matcher) : matcher_(matcher) {}
  bool allows(int32_t token) override { return matcher_.allows(token); }
  void mask_logits(std::span<float> logits) override { matcher_.mask_logits(logits); }

 private:
  grammar::GrammarMatcher& matcher_;
};

}  // namespace

ModelRunner::ModelRunner(std::shared_ptr<Backend> backend, const std::string& model_path, const RunnerConfig& config,
                         Communicator* comm)
    : backend_(std::move(backend)),
      comm_(comm),
      model_(Model::load(model_path, *backend_, config.load)),
      grammars_([this] { return grammar::tokenizer_texts(model_->tokenizer(), size_t(model_->spec().vocab_size)); }) {
  const DecoderSpec& spec = model_->rank_spec();
  // The activations and logits first, so a memory fraction sees them in use.
  decoder_ = std::make_unique<Decoder>(spec, model_->weights(), *backend_, config.capacity, comm_);
  logits_for(config.capacity.max_seqs);
  const KvLayout layout{config.kv_dtype, config.page_size, spec.n_kv_heads, spec.head_dim};
  // Every rank of a group holds the same pages, counted as if unsharded.
  const KvLayout whole{config.kv_dtype, config.page_size, model_->spec().n_kv_heads, spec.head_dim};
  const int64_t pages =
      agreed_pages(config.kv_pages > 0 ? config.kv_pages : budgeted_pages(*backend_, config, whole, spec.n_layers));
  kv_ = std::make_unique<PagedKvCache>(*backend_, layout, spec.n_layers, pages);
  const int64_t pages_per_seq = std::min<int64_t>(pages, (int64_t(spec.max_context) + config.page_size - 1) / config.page_size);
  batch_ = std::make_unique<BatchBuffers>(*backend_, config.capacity, int(std::max<int64_t>(pages_per_seq, 1)));
  if (parallel() && !model_->weights().shard.sharded()) {
    context_ = std::make_unique<ContextSteps>(*backend_, *comm_, config.context_min_tokens);
  }
}

ModelRunner::~ModelRunner() = default;

// Rank 0 numbers pages for every rank, so each rank must hold as many; a
// memory fraction may give each a different count, and the fewest win.
// The shape the ranks loaded is compared too: a rank that loaded another
// file or configuration would run plans it cannot follow.
int64_t ModelRunner::agreed_pages(int64_t local_pages) {
  if (!comm_ || comm_->world() <= 1) return local_pages;
  const DecoderSpec& spec = model_->spec();
  const DecoderCapacity& cap = decoder_->capacity();
  const std::array<int64_t, 8> mine = {local_pages, spec.n_layers, spec.vocab_size, spec.d_model, spec.n_heads,
                                        spec.n_kv_heads, cap.max_tokens, cap.max_seqs};
  std::vector<std::array<int64_t, 8>> all(size_t(comm_->world()));
  comm_->all_gather(mine.data(), sizeof(mine), all.data(), backend_->default_stream());
  int64_t pages = local_pages;
  for (size_t r = 0; r < all.size(); ++r) {
    if (!std::equal(all[r].begin() + 1, all[r].end(), mine.begin() + 1)) {
      throw Error("rank " + std::to_string(r) + " of the group loaded a different model or step capacity than rank " +
                  std::to_string(comm_->rank()) + "; every rank must load the same configuration");
    }
    pages = std::min(pages, all[r][0]);
  }
  return pages;
}

void ModelRunner::heartbeat() {
  if (parallel()) broadcast_heartbeat(*comm_, backend_->default_stream());
}

void ModelRunner::release_followers() {
  if (parallel() && comm_->rank() == 0) broadcast_stop(*comm_, backend_->default_stream());
}

float* ModelRunner::logits_for(int rows) {
  const size_t bytes = size_t(rows) * size_t(model_->spec().vocab_size) * sizeof(float);
  if (logits_.size() < bytes) logits_ = DeviceBuffer(*backend_, bytes);
  return logits_.data_as<float>();
}

float* ModelRunner::hidden_for(int rows) {
  if (rows == 0) return nullptr;
  const size_t bytes = size_t(rows) * size_t(model_->spec().d_model) * sizeof(float);
  if (hidden_.size() < bytes) hidden_ = DeviceBuffer(*backend_, bytes);
  return hidden_.data_as<float>();
}

namespace {

// Throws naming the sequence; the message is built only when it fails.
[[noreturn]] void fail(uint64_t seq_id, const std::string& what) {
  throw Error("sequence " + std::to_string(seq_id) + ": " + what);
}

}  // namespace

void ModelRunner::check_tokens(uint64_t seq_id, const std::vector<int32_t>& tokens) const {
  const int vocab = model_->spec().vocab_size;
  for (int32_t t : tokens) {
    if (!token_in_vocabulary(t, vocab)) fail(seq_id, "token id " + std::to_string(t) + " outside the vocabulary of " + std::to_string(vocab));
  }
}

void ModelRunner::register_sequences(const StepPlan& plan) {
  for (uint64_t id : plan.finished) sequences_.erase(id);
  for (const NewSequence& s : plan.new_sequences) {
    if (sequences_.count(s.seq_id)) fail(s.seq_id, "registered twice");
    if (s.prompt_len > s.tokens.size()) fail(s.seq_id, "prompt length exceeds its tokens");
    check_tokens(s.seq_id, s.tokens);
    SequenceState& state = sequences_[s.seq_id];
    state.tokens = s.tokens;
    state.prompt_len = s.prompt_len;
    state.sampling = s.sampling;
    state.rng.seed(s.seed);
    if (!s.sampling.grammar.empty()) start_grammar(s.seq_id, state);
  }
}

void ModelRunner::start_grammar(uint64_t seq_id, SequenceState& state) {
  // Output that does not fit its grammar is a malformed plan. A grammar
  // that runs out of work or state is this sequence's error, reported at
  // its first draw.
  bool fits = true;
  try {
    state.matcher = std::make_unique<grammar::GrammarMatcher>(grammars_.get(state.sampling.grammar.gbnf, state.sampling.grammar.prepared),
                                                              state.sampling.grammar.end_tokens);
    for (size_t i = state.prompt_len; i < state.tokens.size() && fits; ++i) fits = state.matcher->advance(state.tokens[i]);
  } catch (const grammar::GrammarError& e) {
    grammars_.forget(state.sampling.grammar.gbnf);
    state.grammar_error = grammar::kOutputGrammarErrorPrefix + std::string(e.what());
  }
  if (!fits) fail(seq_id, "its output so far does not fit its grammar");
}

bool ModelRunner::draw(SequenceState& state, size_t row, SampledToken& token, std::string& error) {
  const size_t vocab = size_t(model_->spec().vocab_size);
  if (!state.grammar_error.empty()) {
    error = state.grammar_error;
    return false;
  }
  std::copy(host_logits_.begin() + long(row * vocab), host_logits_.begin() + long((row + 1) * vocab), sample_scratch_.begin());
  if (!state.matcher) {
    token = sample_token(sample_scratch_, state.sampling, state.tokens, state.prompt_len, state.rng);
  } else {
    try {
      GrammarFilter filter(*state.matcher);
      token = sample_token(sample_scratch_, state.sampling, state.tokens, state.prompt_len, state.rng, &filter);
      if (!state.matcher->advance(token.id)) {
        error = grammar::kOutputGrammarErrorPrefix + std::string("it admits no token here");
        return false;
      }
    } catch (const grammar::GrammarError& e) {
      grammars_.forget(state.sampling.grammar.gbnf);
      error = grammar::kOutputGrammarErrorPrefix + std::string(e.what());
      return false;
    }
  }
  state.tokens.push_back(token.id);
  return true;
}

void ModelRunner::apply_steps(const StepPlan& plan, bool follower) {
  const int ps = page_size();
  for (const SequenceStep& s : plan.steps) {
    auto found = sequences_.find(s.seq_id);
    if (found == sequences_.end()) fail(s.seq_id, "not known to the engine");
    SequenceState& state = found->second;
    if (s.tokens.empty()) fail(s.seq_id, "no tokens in the step");
    if (s.draft != 0 && (s.draft >= s.tokens.size() || !s.sample || s.all_logits || s.hidden != HiddenStates::kNone)) {
      fail(s.seq_id, "draft tokens need a sampled step with a token before them and no other logits");
    }
    if (s.hidden != HiddenStates::kNone && context_) fail(s.seq_id, "hidden states are not available under context parallelism");
    // A follower keeps no tokens: rank 0 checks them and samples.
    if (s.start_position < 0 || (!follower && size_t(s.start_position) > state.tokens.size())) {
      fail(s.seq_id, "start position out of range");
    }
    check_tokens(s.seq_id, s.tokens);
    if (s.pages_from > state.pages.size()) fail(s.seq_id, "page table update starts past its end");
    for (int32_t page : s.pages) {
      if (page < 0 || page >= kv_->n_pages()) fail(s.seq_id, "page " + std::to_string(page) + " outside the cache");
    }
    state.pages.resize(s.pages_from);
    state.pages.insert(state.pages.end(), s.pages.begin(), s.pages.end());
    const int64_t end = int64_t(s.start_position) + int64_t(s.tokens.size());
    if (int64_t(state.pages.size()) * ps < end) fail(s.seq_id, "page table too short for position " + std::to_string(end - 1));
    // The step's tokens must agree with what the sequence already holds;
    // the part beyond it extends the sequence; draft tokens join it only once
    // accepted.
    if (follower) continue;
    for (size_t i = 0; i < s.tokens.size() - s.draft; ++i) {
      const size_t pos = size_t(s.start_position) + i;
      if (pos == state.tokens.size()) state.tokens.push_back(s.tokens[i]);
      else if (state.tokens[pos] != s.tokens[i]) fail(s.seq_id, "step token at position " + std::to_string(pos) + " disagrees with the sequence");
    }
  }
}

StepResult ModelRunner::step(const StepPlan& plan) {
  register_sequences(plan);
  apply_steps(plan, false);
  if (parallel()) broadcast_plan(*comm_, plan, backend_->default_stream());
  const int n_logit_rows = run_forward(plan, true);
  if (n_logit_rows < 0) return {};
  return sample(plan, n_logit_rows);
}

void ModelRunner::follow(const StepPlan& plan) {
  for (uint64_t id : plan.finished) sequences_.erase(id);
  for (const NewSequence& s : plan.new_sequences) {
    check_tokens(s.seq_id, s.tokens);
    sequences_[s.seq_id] = SequenceState{};
  }
  apply_steps(plan, true);
  run_forward(plan, false);
}

std::vector<BatchSequence> ModelRunner::batch_sequences(const StepPlan& plan) {
  if (context_) {
    std::vector<const int32_t*> pages;
    pages.reserve(plan.steps.size());
    for (const SequenceStep& s : plan.steps) pages.push_back(sequences_.at(s.seq_id).pages.data());
    return context_->divide(plan, pages, page_size(), backend_->default_stream());
  }
  std::vector<BatchSequence> seqs;
  seqs.reserve(plan.steps.size());
  for (const SequenceStep& s : plan.steps) {
    const SequenceState& state = sequences_.at(s.seq_id);
    seqs.push_back({s.tokens.data(), int32_t(s.tokens.size()), s.start_position, state.pages.data(), s.all_logits || s.draft > 0,
                    s.sample, s.hidden == HiddenStates::kAll, s.hidden == HiddenStates::kLast});
  }
  return seqs;
}

int ModelRunner::run_forward(const StepPlan& plan, bool copy_logits) {
  if (plan.steps.empty()) return -1;
  const std::vector<BatchSequence> seqs = batch_sequences(plan);
  Stream& stream = backend_->default_stream();
  ForwardBatch batch = batch_->fill(seqs, page_size(), stream);
  if (context_) batch.context = context_->share();
  float* logits = logits_for(batch.n_logit_rows);
  float* hidden = hidden_for(batch.n_hidden_rows);
  auto enqueue = [&] { decoder_->forward(*backend_, stream, batch, kv_->layout(), kv_->layers(), logits, hidden); };
  // A recording replays the logit rows' head only: a step with hidden rows runs as it is.
  if (decoder_->recordable() && batch.n_hidden_rows == 0) {
    if (logits != recorded_logits_) recordings_.clear();
    recorded_logits_ = logits;
    recordings_.run({batch.n_tokens, batch.attention.n_seqs, batch.n_logit_rows}, *backend_, stream, enqueue);
  } else {
    enqueue();
  }
  if (context_) {
    context_->collect_logits(logits, model_->spec().vocab_size, host_logits_, stream);
    stream.synchronize();
    return int(context_->plan_logit_rows());
  }
  if (!copy_logits) {
    stream.synchronize();
    return batch.n_logit_rows;
  }
  const size_t n_values = size_t(batch.n_logit_rows) * size_t(model_->spec().vocab_size);
  host_logits_.resize(n_values);
  backend_->copy_device_to_host(host_logits_.data(), logits, n_values * sizeof(float), stream);
  host_hidden_.resize(size_t(batch.n_hidden_rows) * size_t(model_->spec().d_model));
  if (!host_hidden_.empty()) backend_->copy_device_to_host(host_hidden_.data(), hidden, host_hidden_.size() * sizeof(float), stream);
  stream.synchronize();
  return batch.n_logit_rows;
}

StepResult ModelRunner::sample(const StepPlan& plan, int n_logit_rows) {
  const size_t vocab = size_t(model_->spec().vocab_size);
  const size_t width = size_t(model_->spec().d_model);
  StepResult result;
  size_t row = 0, hidden_row = 0;
  sample_scratch_.resize(vocab);
  for (const SequenceStep& s : plan.steps) {
    SequenceResult& r = result.sequences.emplace_back();
    r.seq_id = s.seq_id;
    if (s.hidden != HiddenStates::kNone) {
      const size_t rows = s.hidden == HiddenStates::kAll ? s.tokens.size() : 1;
      if ((hidden_row + rows) * width > host_hidden_.size()) throw Error("engine: hidden rows do not match the plan");
      r.hidden.assign(host_hidden_.begin() + long(hidden_row * width), host_hidden_.begin() + long((hidden_row + rows) * width));
      hidden_row += rows;
    }
    size_t last_row = row;
    if (s.draft > 0) {
      verify_draft(s, row, r);
      row += s.tokens.size();
      continue;
    }
    if (s.all_logits) {
      r.logits.assign(host_logits_.begin() + long(row * vocab), host_logits_.begin() + long((row + s.tokens.size()) * vocab));
      row += s.tokens.size();
      last_row = row - 1;
    } else if (s.sample) {
      last_row = row++;
    }
    if (!s.sample) continue;
    r.sampled = draw(sequences_.at(s.seq_id), last_row, r.token, r.error);
  }
  if (row != size_t(n_logit_rows)) throw Error("engine: logit rows do not match the plan");
  return result;
}

void ModelRunner::verify_draft(const SequenceStep& s, size_t first_row, SequenceResult& r) {
  // Row i holds the logits after step token i; the proposal for the next
  // position is step token i + 1.
  const size_t first_draft = s.tokens.size() - s.draft;
  SequenceState& state = sequences_.at(s.seq_id);
  for (size_t i = first_draft - 1; i < s.tokens.size(); ++i) {
    SampledToken drawn;
    if (!draw(state, first_row + i, drawn, r.error)) return;
    if (i + 1 < s.tokens.size() && drawn.id == s.tokens[i + 1]) {
      r.accepted.push_back(drawn);
      continue;
    }
    r.token = drawn;
    r.sampled = true;
    return;
  }
}

}  // namespace tessera
