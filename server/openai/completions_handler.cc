#include "server/openai/completions_handler.h"

#include <ctime>

#include "server/openai/completion_logprobs.h"
#include "server/openai/event_stream.h"
#include "server/openai/generation_fields.h"
#include "server/serving/generation_driver.h"

namespace tessera {
namespace {

struct Prompts {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::string> texts;  // for echo
};

// A string, an array of strings, an array of token ids, or an array of
// arrays of token ids.
Prompts read_prompts(RequestFields& f, const ServedModel& m, int max_prompts) {
  const Json* p = f.raw("prompt");
  if (!p) throw ApiError::invalid("'prompt' is required", "prompt");
  Prompts out;
  auto add_text = [&](const std::string& text) {
    check_prompt_bytes(m, text.size(), "prompt");
    out.tokens.push_back(m.tokenizer().encode(text, {.add_special = true, .parse_special = true}));
    out.texts.push_back(text);
  };
  if (p->is_string()) {
    add_text(p->get<std::string>());
  } else if (p->is_array() && !p->empty() && (*p)[0].is_number()) {
    out.tokens.push_back(read_token_ids(*p, m, "prompt"));
    out.texts.push_back(m.tokenizer().decode(out.tokens.back()));
  } else if (p->is_array() && !p->empty()) {
    if (p->size() > size_t(max_prompts)) throw ApiError::invalid("at most " + std::to_string(max_prompts) + " prompts per request", "prompt");
    for (const auto& e : *p) {
      if (e.is_string()) {
        add_text(e.get<std::string>());
      } else if (e.is_array()) {
        out.tokens.push_back(read_token_ids(e, m, "prompt"));
        out.texts.push_back(m.tokenizer().decode(out.tokens.back()));
      } else {
        throw ApiError::invalid("'prompt' must be a string, an array of strings or an array of token ids", "prompt");
      }
    }
  } else {
    throw ApiError::invalid("'prompt' must be a non-empty string, array of strings or array of token ids", "prompt");
  }
  for (const auto& t : out.tokens) {
    if (t.empty()) throw ApiError::invalid("'prompt' has no tokens", "prompt");
  }
  return out;
}

struct ChoiceState {
  std::string text;
  CompletionLogprobs logprobs;
  VllmPromptLogprobs prompt_logprobs;
  size_t prompt_scored = 0;   // prompt tokens with a score so far (the first never has one)
  size_t prompt_offset = 0;   // text offset after the prompt tokens listed so far
  bool prompt_sent = false;   // streaming: the echo (or prompt_logprobs) chunk is out
  std::string finish_reason;
};

// What a completion reports of its prompt: the echoed text, its tokens'
// log-probabilities (echo with logprobs) and vLLM's prompt_logprobs.
struct PromptReport {
  bool echo = false;
  std::optional<int64_t> echo_top;     // echo with logprobs: alternatives per prompt token
  std::optional<int64_t> vllm_top;     // prompt_logprobs
  bool scored() const { return echo_top || vllm_top; }
  int top() const { return int(std::max(echo_top.value_or(0), vllm_top.value_or(0))); }
};

}  // namespace

void handle_completions(const ApiContext& api, const Json& body, HttpExchange& ex) {
  RequestFields f(body, api.bodies.completions);
  const ModelHandle held_model = api.model(f.string("model").value_or(""));
  ServedModel& model = *held_model;
  const std::string model_name = model.name();
  const Prompts prompts = read_prompts(f, model, api.limits.max_n);
  GenerationRequest request = read_generation_request(f);
  PromptReport report;
  report.echo = f.boolean("echo").value_or(false);
  const std::optional<int64_t> logprobs = f.integer("logprobs");
  request.logprobs = logprobs.has_value();
  request.top_logprobs = logprobs;
  if (report.echo && logprobs) report.echo_top = logprobs;
  report.vllm_top = f.integer("prompt_logprobs");
  if (report.scored()) request.prompt_logprobs = report.top();
  // max_tokens 0 scores the prompt only (lm-evaluation-harness's loglikelihood).
  request.max_tokens = f.integer("max_tokens");
  const bool stream = f.boolean("stream").value_or(false);
  const StreamOptions stream_options = read_stream_options(f);
  f.refuse("suffix", "insertion is not available for these models");
  f.finish();
  const GenerationParams params = validate_generation(request, model, api.limits, 16);
  if (int64_t(prompts.tokens.size()) * params.n > api.limits.max_n) {
    throw ApiError::invalid("prompts times n must be at most " + std::to_string(api.limits.max_n), "n");
  }

  auto gens = start_generations(model, prompts.tokens, params);
  const std::string id = new_response_id("cmpl-");
  const int64_t created = std::time(nullptr);
  const size_t n = size_t(params.n);
  std::vector<ChoiceState> choices(prompts.tokens.size() * n);
  for (size_t c = 0; c < choices.size(); ++c) {
    const std::vector<int32_t>& prompt = prompts.tokens[c / n];
    if (report.echo) choices[c].text = prompts.texts[c / n];
    if (report.echo_top) {
      const std::string first = model.tokenizer().token_bytes(prompt[0], true);
      choices[c].logprobs.add_unscored(first, 0);
      choices[c].prompt_offset = first.size();
    }
  }
  auto chunk = [&](Json choice_list) {
    Json c{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model_name},
           {"system_fingerprint", model.fingerprint}, {"choices", std::move(choice_list)}};
    if (stream_options.continuous_usage) c["usage"] = usage_of(gens);
    return c;
  };
  auto choice_json = [&](size_t index, const std::string& text, const Json& logprobs_json, const Json& finish) {
    Json c{{"index", index}, {"text", text}, {"logprobs", logprobs_json}, {"finish_reason", finish}};
    if (report.vllm_top) c["prompt_logprobs"] = choices[index].prompt_logprobs.to_json();
    return c;
  };
  // Streaming: the prompt's chunk goes out once every prompt token is scored.
  auto send_prompt = [&](size_t index) {
    ChoiceState& c = choices[index];
    if (!stream || c.prompt_sent || (!report.echo && !report.vllm_top)) return true;
    if (report.scored() && c.prompt_scored + 1 < prompts.tokens[index / n].size()) return true;
    c.prompt_sent = true;
    const Json lp = report.echo_top ? c.logprobs.to_json() : Json();
    return ex.write_chunk(sse_event(chunk(Json::array({choice_json(index, report.echo ? c.text : "", lp, Json())}))));
  };
  std::string error;
  if (stream && !ex.begin_stream("text/event-stream")) return;
  for (size_t c = 0; c < choices.size(); ++c) {
    if (!send_prompt(c)) return;
  }
  StreamClientWatch watch(ex);
  const bool completed = drive_generations(gens, [&] { return stream ? watch.gone() : ex.client_gone(); }, [&](size_t g, const ChoiceUpdate& u) {
    const size_t index = g * n + size_t(u.index);
    ChoiceState& c = choices[index];
    if (!u.error.empty()) {
      error = u.error;
      return true;
    }
    for (const TokenLogprob& lp : u.prompt_logprobs) {
      ++c.prompt_scored;
      if (report.echo_top) {
        c.logprobs.add(lp, c.prompt_offset, size_t(*report.echo_top));
        c.prompt_offset += lp.token.size();
      }
      if (report.vllm_top) c.prompt_logprobs.add(lp, size_t(*report.vllm_top));
    }
    if (!u.prompt_logprobs.empty()) return send_prompt(index);
    CompletionLogprobs delta_lp;
    for (const auto& lp : u.logprobs) {
      c.logprobs.add(lp, c.text.size(), lp.top.size());
      delta_lp.add(lp, c.text.size(), lp.top.size());
    }
    c.text += u.text;
    if (u.finish_reason) c.finish_reason = *u.finish_reason;
    if (!stream || (u.text.empty() && u.logprobs.empty() && !u.finish_reason)) return true;
    return ex.write_chunk(sse_event(chunk(Json::array({{{"index", index}, {"text", u.text},
                                                         {"logprobs", params.sampling.logprobs ? delta_lp.to_json() : Json()},
                                                         {"finish_reason", u.finish_reason ? Json(*u.finish_reason) : Json()}}}))));
  });
  if (!completed) return;
  if (stream) return end_event_stream(ex, error, chunk(Json::array()), usage_of(gens), stream_options);
  if (!error.empty()) throw ApiError::from_generation(error);
  Json list = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    list.push_back(choice_json(i, choices[i].text, params.sampling.logprobs ? choices[i].logprobs.to_json() : Json(),
                               choices[i].finish_reason));
  }
  Json response = chunk(std::move(list));
  response["usage"] = usage_of(gens);
  ex.respond(200, "application/json", json_text(response));
}

}  // namespace tessera
