#include "server/openai/generation_fields.h"

#include <algorithm>
#include <charconv>
#include <limits>

namespace tessera {
namespace {

constexpr int64_t kAnyInteger = std::numeric_limits<int64_t>::max();

std::vector<std::pair<int64_t, double>> read_logit_bias(RequestFields& f) {
  std::vector<std::pair<int64_t, double>> bias;
  const Json* v = f.raw("logit_bias");
  if (!v) return bias;
  if (!v->is_object()) throw ApiError::invalid("'logit_bias' must map token ids to numbers", "logit_bias");
  if (v->size() > kMaxLogitBias) {
    throw ApiError::invalid("'logit_bias' has more than " + std::to_string(kMaxLogitBias) + " entries", "logit_bias");
  }
  for (const auto& [key, value] : v->items()) {
    int64_t id = -1;
    const auto r = std::from_chars(key.data(), key.data() + key.size(), id);
    if (r.ec != std::errc() || r.ptr != key.data() + key.size()) {
      throw ApiError::invalid("'logit_bias' key '" + key + "' is not a token id", "logit_bias");
    }
    if (!value.is_number()) throw ApiError::invalid("'logit_bias' values must be numbers between -100 and 100", "logit_bias");
    bias.emplace_back(id, value.get<double>());
  }
  return bias;
}

std::vector<int64_t> read_stop_token_ids(RequestFields& f) {
  std::vector<int64_t> ids;
  const Json* v = f.raw("stop_token_ids");
  if (!v) return ids;
  if (!v->is_array()) throw ApiError::invalid("'stop_token_ids' must be an array of token ids", "stop_token_ids");
  for (const auto& id : *v) {
    if (!id.is_number_integer()) throw ApiError::invalid("'stop_token_ids' entries must be token ids of this model", "stop_token_ids");
    ids.push_back(id.is_number_unsigned() && id.get<uint64_t>() > uint64_t(kAnyInteger) ? -1 : id.get<int64_t>());
  }
  return ids;
}

// A schema given as an object, or as JSON text (vLLM accepts both).
Json schema_value(const Json& v, const std::string& param) {
  if (v.is_object() || v.is_boolean()) return v;
  if (v.is_string()) return parse_bounded_json(v.get<std::string>(), JsonLimits{});
  throw ApiError::invalid("'" + param + "' must be a JSON schema (an object, or its text)", param);
}

std::string text_value(const Json& v, const std::string& param) {
  if (!v.is_string()) throw ApiError::invalid("'" + param + "' must be a string", param);
  return v.get<std::string>();
}

std::vector<std::string> choice_values(const Json& v, const std::string& param) {
  if (!v.is_array()) throw ApiError::invalid("'" + param + "' must be an array of strings", param);
  std::vector<std::string> out;
  for (const Json& c : v) {
    if (!c.is_string()) throw ApiError::invalid("'" + param + "' must be an array of strings", param);
    out.push_back(c.get<std::string>());
  }
  return out;
}

std::optional<StructuredOutput> from_response_format(const Json& rf) {
  const std::string param = "response_format";
  if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string()) {
    throw ApiError::invalid("'response_format' must be an object with a 'type'", param);
  }
  const std::string type = rf["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  StructuredOutput s;
  s.param = param;
  if (type == "json_object") return s;
  if (type != "json_schema") {
    throw ApiError::invalid("'response_format' type must be 'text', 'json_object' or 'json_schema'", param);
  }
  const Json* spec = rf.contains("json_schema") ? &rf["json_schema"] : nullptr;
  if (!spec || !spec->is_object() || !spec->contains("schema")) {
    throw ApiError::invalid("'response_format' of type 'json_schema' needs 'json_schema': {name, schema}", param);
  }
  s.kind = StructuredOutput::Kind::kJsonSchema;
  s.schema = schema_value((*spec)["schema"], param);
  return s;
}

// vLLM's structured_outputs object: one of json, regex, choice, grammar, json_object.
StructuredOutput from_structured_outputs(const Json& so) {
  const std::string param = "structured_outputs";
  if (!so.is_object()) throw ApiError::invalid("'structured_outputs' must be an object", param);
  std::optional<StructuredOutput> found;
  bool no_whitespace = false;
  auto take = [&](StructuredOutput s) {
    if (found) throw ApiError::invalid("'structured_outputs' must name one of json, regex, choice, grammar, json_object", param);
    s.param = param;
    found = std::move(s);
  };
  for (const auto& [key, value] : so.items()) {
    if (value.is_null()) continue;
    StructuredOutput s;
    if (key == "json") s.kind = StructuredOutput::Kind::kJsonSchema, s.schema = schema_value(value, param);
    else if (key == "regex") s.kind = StructuredOutput::Kind::kRegex, s.text = text_value(value, param);
    else if (key == "choice") s.kind = StructuredOutput::Kind::kChoice, s.choices = choice_values(value, param);
    else if (key == "grammar") s.kind = StructuredOutput::Kind::kGrammar, s.text = text_value(value, param);
    else if (key == "json_object") {
      if (!value.is_boolean()) throw ApiError::invalid("'structured_outputs.json_object' must be a boolean", param);
      if (!value.get<bool>()) continue;
    } else if (key == "disable_any_whitespace") {
      if (!value.is_boolean()) throw ApiError::invalid("'structured_outputs.disable_any_whitespace' must be a boolean", param);
      if (value.get<bool>()) no_whitespace = true;
      continue;
    } else if (key == "disable_fallback" || key == "disable_additional_properties") {
      continue;
    } else {
      throw ApiError::invalid("'structured_outputs." + key + "' is not supported", param);
    }
    take(std::move(s));
  }
  if (!found) throw ApiError::invalid("'structured_outputs' must name one of json, regex, choice, grammar, json_object", param);
  if (no_whitespace) found->whitespace_pattern = "";
  return *found;
}

// At most one way of constraining the output per request.
std::optional<StructuredOutput> read_structured_output(RequestFields& f) {
  std::optional<StructuredOutput> out;
  auto set = [&](std::optional<StructuredOutput> s, const std::string& param) {
    if (!s) return;
    if (out) {
      throw ApiError::invalid("'" + param + "' and '" + out->param + "' both constrain the output; send one", param);
    }
    s->param = param;
    out = std::move(s);
  };
  if (const Json* v = f.raw("response_format")) set(from_response_format(*v), "response_format");
  if (const Json* v = f.raw("structured_outputs")) set(from_structured_outputs(*v), "structured_outputs");
  if (const Json* v = f.raw("guided_json")) {
    StructuredOutput s{StructuredOutput::Kind::kJsonSchema, schema_value(*v, "guided_json"), {}, {}, {}};
    set(std::move(s), "guided_json");
  }
  if (const Json* v = f.raw("guided_regex")) set(StructuredOutput{StructuredOutput::Kind::kRegex, {}, text_value(*v, "guided_regex"), {}, {}}, "guided_regex");
  if (const Json* v = f.raw("guided_choice")) set(StructuredOutput{StructuredOutput::Kind::kChoice, {}, {}, choice_values(*v, "guided_choice"), {}}, "guided_choice");
  if (const Json* v = f.raw("guided_grammar")) set(StructuredOutput{StructuredOutput::Kind::kGrammar, {}, text_value(*v, "guided_grammar"), {}, {}}, "guided_grammar");
  f.ignore("guided_decoding_backend");
  if (const Json* v = f.raw("guided_whitespace_pattern")) {
    if (!v->is_null() && !v->is_string()) throw ApiError::invalid("'guided_whitespace_pattern' must be a string", "guided_whitespace_pattern");
    // As vLLM: it shapes JSON outputs and is ignored for the others.
    if (out && v->is_string()) out->whitespace_pattern = v->get<std::string>();
  }
  return out;
}

// Fields current SDKs send by default that change nothing about the output
// here: OpenAI's storage, billing, caching-key and tracking fields, and a
// speed hint. docs/serving-api.md lists them.
void ignore_fields_that_change_nothing(RequestFields& f) {
  for (const char* key : {"user", "store", "metadata", "service_tier", "prompt_cache_key", "safety_identifier", "verbosity",
                          "prediction"}) {
    f.ignore(key);
  }
  if (const Json* m = f.raw("modalities")) {
    if (!m->is_array() || m->empty() || std::any_of(m->begin(), m->end(), [](const Json& v) { return v != "text"; })) {
      throw ApiError::invalid("'modalities' may only be [\"text\"]: only text is available", "modalities");
    }
  }
}

}  // namespace

GenerationRequest read_generation_request(RequestFields& f) {
  GenerationRequest r;
  r.temperature = f.number("temperature");
  r.top_p = f.number("top_p");
  r.top_k = f.integer("top_k");
  r.min_p = f.number("min_p");
  r.presence_penalty = f.number("presence_penalty");
  r.frequency_penalty = f.number("frequency_penalty");
  r.repetition_penalty = f.number("repetition_penalty");
  r.seed = f.integer("seed");
  r.logit_bias = read_logit_bias(f);
  r.n = f.integer("n");
  r.best_of = f.integer("best_of");
  r.stop = f.strings("stop");
  r.stop_token_ids = read_stop_token_ids(f);
  r.ignore_eos = f.boolean("ignore_eos").value_or(false);
  r.min_tokens = f.integer("min_tokens");
  r.skip_special_tokens = f.boolean("skip_special_tokens").value_or(true);
  r.include_stop_str_in_output = f.boolean("include_stop_str_in_output").value_or(false);
  r.priority = f.integer("priority");
  r.structured = read_structured_output(f);
  ignore_fields_that_change_nothing(f);
  return r;
}

std::vector<int32_t> read_token_ids(const Json& array, const ServedModel& model, const std::string& param) {
  if (!array.is_array()) throw ApiError::invalid("'" + param + "' must be an array of token ids", param);
  std::vector<int64_t> ids;
  ids.reserve(array.size());
  for (const auto& t : array) {
    // Out-of-range integers become -1 so the check below names them.
    ids.push_back(t.is_number_integer() && !(t.is_number_unsigned() && t.get<uint64_t>() > uint64_t(kAnyInteger)) ? t.get<int64_t>() : -1);
  }
  return checked_token_ids(ids, model, param);
}

}  // namespace tessera
