#include "server/openai/chat_handler.h"

#include <algorithm>
#include <ctime>

#include "server/openai/event_stream.h"
#include "server/openai/generation_fields.h"
#include "server/openai/completion_logprobs.h"
#include "server/serving/chat_prompt.h"
#include "server/serving/generation_driver.h"
#include "server/serving/harmony_channels.h"
#include "server/serving/reasoning_parser.h"
#include "server/serving/tool_calls.h"
#include "server/serving/tool_request.h"

namespace tessera {
namespace {

Json chat_logprob(const TokenLogprob& lp) {
  auto bytes_of = [](const std::string& s) {
    Json b = Json::array();
    for (unsigned char c : s) b.push_back(int(c));
    return b;
  };
  Json top = Json::array();
  for (const auto& [tok, value] : lp.top) top.push_back({{"token", tok}, {"logprob", value}, {"bytes", bytes_of(tok)}});
  return {{"token", lp.token}, {"logprob", lp.logprob}, {"bytes", bytes_of(lp.token)}, {"top_logprobs", top}};
}

struct ChoiceState {
  std::string text;
  Json logprobs = Json::array();
  std::string finish_reason;
  ToolCallParser parser;        // when the request offers tools
  std::vector<ToolCall> calls;  // parsed from `text`; `text` then holds the rest
  std::optional<ReasoningParser> reasoning;  // for a thinking model
  std::optional<HarmonyChannels> harmony;    // for gpt-oss
  std::string reasoning_text;
};

// The update's text split into the model's reasoning (returned) and its
// answer (left in `text`), for a thinking model.
std::string take_reasoning(ChoiceState& c, std::string& text, bool last) {
  if (!c.reasoning && !c.harmony) return "";
  ReasoningSplit split = c.harmony ? c.harmony->feed(text) : c.reasoning->feed(text);
  if (last) {
    ReasoningSplit rest = c.harmony ? c.harmony->finish() : c.reasoning->finish();
    split.reasoning += rest.reasoning;
    split.content += rest.content;
  }
  text = std::move(split.content);
  c.reasoning_text += split.reasoning;
  return split.reasoning;
}

// Whether the rendered prompt already opened the reasoning block.
bool prompt_opens_reasoning_block(const ServedModel& model, const std::vector<int32_t>& prompt) {
  const size_t tail = std::min<size_t>(prompt.size(), 8);
  return prompt_opens_reasoning(model.tokenizer().decode(std::vector<int32_t>(prompt.end() - tail, prompt.end())));
}

}  // namespace

void handle_chat_completions(const ApiContext& api, const Json& body, HttpExchange& ex) {
  RequestFields f(body, api.bodies.chat_completions);
  const ModelHandle held_model = api.model(f.string("model").value_or(""));
  ServedModel& model = *held_model;
  const std::string model_name = model.name();
  const Json* messages = f.raw("messages");
  if (!messages) throw ApiError::invalid("'messages' is required", "messages");
  GenerationRequest request = read_generation_request(f);
  request.max_tokens = f.integer("max_completion_tokens");
  if (auto legacy = f.integer("max_tokens")) request.max_tokens = request.max_tokens ? request.max_tokens : legacy;
  request.logprobs = f.boolean("logprobs").value_or(false);
  request.top_logprobs = f.integer("top_logprobs");
  const bool stream = f.boolean("stream").value_or(false);
  const StreamOptions stream_options = read_stream_options(f);
  // vLLM's prompt_logprobs: the rendered prompt's tokens scored, returned
  // beside the choices (not streamed, as in vLLM).
  const std::optional<int64_t> prompt_top = f.integer("prompt_logprobs");
  if (prompt_top && stream) throw ApiError::invalid("'prompt_logprobs' is not available with 'stream'", "prompt_logprobs");
  if (prompt_top) request.prompt_logprobs = prompt_top;
  const bool add_generation_prompt = f.boolean("add_generation_prompt").value_or(true);
  const Json* kwargs_field = f.raw("chat_template_kwargs");
  if (kwargs_field && !kwargs_field->is_object()) throw ApiError::invalid("'chat_template_kwargs' must be an object", "chat_template_kwargs");
  Json kwargs = kwargs_field ? *kwargs_field : Json::object();
  // Templates that take it read the reasoning effort as a variable; the rest ignore it.
  if (auto effort = f.string("reasoning_effort")) {
    if (!kwargs.contains("reasoning_effort")) kwargs["reasoning_effort"] = *effort;
  }
  for (const char* key : {"functions", "function_call"}) f.refuse(key, "the legacy function-calling fields are not supported; use 'tools'");
  const ToolRequest tool_request = read_tool_request(f, model);
  if (tool_request.forced) {
    if (request.structured) {
      throw ApiError::invalid("tool_choice " + std::string("that forces a call cannot be combined with '") + request.structured->param + "'",
                              "tool_choice");
    }
    request.structured = tool_request.forced;
  }
  f.refuse("audio", "audio output is not available");
  f.finish();

  std::vector<int32_t> prompt =
      chat_prompt_tokens(model, *messages, add_generation_prompt, kwargs, false, tool_request.tools);
  if (prompt.empty()) throw ApiError::invalid("the rendered conversation has no tokens", "messages");
  GenerationParams params = validate_generation(request, model, api.limits, model.max_model_len - int(prompt.size()));
  // Harmony's channel markers are special tokens the parser must see.
  const bool harmony = model.reasoning == ReasoningFormat::kHarmony;
  params.render_special = params.render_special || tool_request.parse || harmony;
  auto gens = start_generations(model, {prompt}, params);

  const std::string id = new_response_id("chatcmpl-");
  const int64_t created = std::time(nullptr);
  std::vector<ChoiceState> choices(size_t(params.n));
  const bool thinking = model.reasoning == ReasoningFormat::kThinkTags;
  const bool opened = thinking && prompt_opens_reasoning_block(model, prompt);
  for (ChoiceState& c : choices) {
    c.parser = ToolCallParser(tool_request.names, tool_request.parallel);
    if (thinking) c.reasoning.emplace(opened);
    if (harmony) c.harmony.emplace();
  }
  auto chunk = [&](Json choice_list) {
    Json c{{"id", id}, {"object", "chat.completion.chunk"}, {"created", created}, {"model", model_name},
           {"system_fingerprint", model.fingerprint}, {"choices", std::move(choice_list)}};
    if (stream_options.continuous_usage) c["usage"] = usage_of(gens);
    return c;
  };
  VllmPromptLogprobs prompt_scores;  // the first choice's: every choice scores the same prompt
  std::string error;
  if (stream) {
    if (!ex.begin_stream("text/event-stream")) return;
    for (int i = 0; i < params.n; ++i) {
      ex.write_chunk(sse_event(chunk(Json::array({{{"index", i}, {"delta", {{"role", "assistant"}, {"content", ""}}},
                                                   {"logprobs", nullptr}, {"finish_reason", nullptr}}}))));
    }
  }
  StreamClientWatch watch(ex);
  const bool completed = drive_generations(gens, [&] { return stream ? watch.gone() : ex.client_gone(); }, [&](size_t, const ChoiceUpdate& u) {
    ChoiceState& c = choices[size_t(u.index)];
    if (!u.error.empty()) {
      error = u.error;
      return true;
    }
    if (!u.prompt_logprobs.empty()) {
      if (u.index == 0) {
        for (const TokenLogprob& lp : u.prompt_logprobs) prompt_scores.add(lp, size_t(*prompt_top));
      }
      return true;
    }
    Json delta_lp = Json::array();
    for (const auto& lp : u.logprobs) {
      c.logprobs.push_back(chat_logprob(lp));
      delta_lp.push_back(chat_logprob(lp));
    }
    // The update as deltas: its reasoning, then its text, or, when tools are
    // offered, the text and calls the parser completed with it.
    std::string text = u.text;
    const std::string thought = take_reasoning(c, text, u.finish_reason.has_value());
    std::vector<ToolCallPiece> pieces = output_pieces(c.parser, tool_request.parse, text, u.finish_reason.has_value());
    Json deltas = Json::array();
    // Both names: clients read one or the other.
    if (!thought.empty()) deltas.push_back({{"reasoning_content", thought}, {"reasoning", thought}});
    for (ToolCallPiece& p : pieces) {
      if (!p.call) {
        c.text += p.text;
        deltas.push_back({{"content", std::move(p.text)}});
      } else {
        Json call = tool_call_json(*p.call);
        call["index"] = c.calls.size();
        deltas.push_back({{"tool_calls", Json::array({std::move(call)})}});
        c.calls.push_back(std::move(*p.call));
      }
    }
    if (u.finish_reason) c.finish_reason = *u.finish_reason == "stop" && !c.calls.empty() ? "tool_calls" : *u.finish_reason;
    if (!stream) return true;
    if (deltas.empty() && (!delta_lp.empty() || u.finish_reason)) {
      deltas.push_back(delta_lp.empty() ? Json::object() : Json{{"content", ""}});
    }
    for (size_t k = 0; k < deltas.size(); ++k) {
      const Json lp = params.sampling.logprobs && k == 0 ? Json{{"content", delta_lp}} : Json();
      const Json reason = k + 1 == deltas.size() && u.finish_reason ? Json(c.finish_reason) : Json();
      if (!ex.write_chunk(sse_event(chunk(Json::array({{{"index", u.index}, {"delta", deltas[k]}, {"logprobs", lp},
                                                         {"finish_reason", reason}}}))))) {
        return false;
      }
    }
    return true;
  });
  if (!completed) return;
  const Json usage = usage_of(gens);
  if (stream) return end_event_stream(ex, error, chunk(Json::array()), usage, stream_options);
  if (!error.empty()) throw ApiError::from_generation(error);
  Json list = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    Json message = {{"role", "assistant"}, {"content", choices[i].text}};
    if (choices[i].reasoning) {
      const std::string& thought = choices[i].reasoning_text;
      message["reasoning_content"] = thought.empty() ? Json() : Json(thought);
      message["reasoning"] = message["reasoning_content"];
    }
    if (!choices[i].calls.empty()) {
      // Beside calls, the text is what the model wrote before them, if anything.
      const std::string& text = choices[i].text;
      const size_t first = text.find_first_not_of(" \t\r\n"), last = text.find_last_not_of(" \t\r\n");
      message["content"] = first == std::string::npos ? Json() : Json(text.substr(first, last - first + 1));
      message["tool_calls"] = Json::array();
      for (const ToolCall& call : choices[i].calls) message["tool_calls"].push_back(tool_call_json(call));
    }
    list.push_back({{"index", i}, {"message", std::move(message)},
                    {"logprobs", params.sampling.logprobs ? Json{{"content", choices[i].logprobs}} : Json()},
                    {"finish_reason", choices[i].finish_reason}});
  }
  Json response = {{"id", id}, {"object", "chat.completion"}, {"created", created}, {"model", model_name},
                   {"system_fingerprint", model.fingerprint}, {"choices", list}, {"usage", usage}};
  if (prompt_top) response["prompt_logprobs"] = prompt_scores.to_json();
  ex.respond(200, "application/json", json_text(response));
}

}  // namespace tessera
