#include "server/openai/completions_handler.h"

#include <ctime>

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

// OpenAI's legacy completion log-probabilities, grown token by token.
struct CompletionLogprobs {
  Json tokens = Json::array(), token_logprobs = Json::array(), top_logprobs = Json::array(), text_offset = Json::array();

  void add(const TokenLogprob& lp, size_t offset) {
    tokens.push_back(lp.token);
    token_logprobs.push_back(lp.logprob);
    Json top = Json::object();
    for (const auto& [tok, value] : lp.top) {
      if (!top.contains(tok)) top[tok] = value;
    }
    top_logprobs.push_back(top);
    text_offset.push_back(offset);
  }
  Json to_json() const {
    return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", text_offset}};
  }
};

struct ChoiceState {
  std::string text;
  CompletionLogprobs logprobs;
  std::string finish_reason;
};

}  // namespace

void handle_completions(const ApiContext& api, const Json& body, HttpExchange& ex) {
  RequestFields f(body);
  ServedModel& model = api.model(f.string("model").value_or(""));
  const std::string model_name = model.name();
  const Prompts prompts = read_prompts(f, model, api.limits.max_n);
  GenerationRequest request = read_generation_request(f);
  request.max_tokens = f.integer("max_tokens", 1, 1 << 30);
  const std::optional<int64_t> logprobs = f.integer("logprobs", 0, api.limits.max_top_logprobs);
  request.logprobs = logprobs.has_value();
  request.top_logprobs = logprobs;
  const bool echo = f.boolean("echo").value_or(false);
  if (echo && logprobs) throw ApiError::invalid("'echo' together with 'logprobs' (prompt log-probabilities) is not supported", "echo");
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
  std::vector<ChoiceState> choices(prompts.tokens.size() * size_t(params.n));
  if (echo) {
    for (size_t c = 0; c < choices.size(); ++c) choices[c].text = prompts.texts[c / size_t(params.n)];
  }
  auto chunk = [&](Json choice_list) {
    Json c{{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", model_name},
           {"system_fingerprint", model.fingerprint}, {"choices", std::move(choice_list)}};
    if (stream_options.continuous_usage) c["usage"] = usage_of(gens);
    return c;
  };
  std::string error;
  if (stream && !ex.begin_stream("text/event-stream")) return;
  if (stream && echo) {
    for (size_t c = 0; c < choices.size(); ++c) {
      ex.write_chunk(sse_event(chunk(Json::array({{{"index", c}, {"text", choices[c].text}, {"logprobs", nullptr}, {"finish_reason", nullptr}}}))));
    }
  }
  StreamClientWatch watch(ex);
  const bool completed = drive_generations(gens, [&] { return stream ? watch.gone() : ex.client_gone(); }, [&](size_t g, const ChoiceUpdate& u) {
    const size_t index = g * size_t(params.n) + size_t(u.index);
    ChoiceState& c = choices[index];
    if (!u.error.empty()) {
      error = u.error;
      return true;
    }
    CompletionLogprobs delta_lp;
    for (const auto& lp : u.logprobs) {
      c.logprobs.add(lp, c.text.size());
      delta_lp.add(lp, c.text.size());
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
    list.push_back({{"index", i}, {"text", choices[i].text},
                    {"logprobs", params.sampling.logprobs ? choices[i].logprobs.to_json() : Json()},
                    {"finish_reason", choices[i].finish_reason}});
  }
  Json response = chunk(std::move(list));
  response["usage"] = usage_of(gens);
  ex.respond(200, "application/json", json_text(response));
}

}  // namespace tessera
