#include "server/openai/embeddings_handler.h"

#include <openssl/evp.h>

#include <cstring>

#include "server/openai/generation_fields.h"
#include "server/serving/embedding_job.h"
#include "server/serving/generation_driver.h"
#include "server/serving/request_fields.h"
#include "server/serving/route_bodies.h"

namespace tessera {
namespace {


std::vector<std::vector<int32_t>> read_inputs(RequestFields& f, const ServedModel& m) {
  const Json* input = f.raw("input");
  if (!input) throw ApiError::invalid("'input' is required", "input");
  std::vector<std::vector<int32_t>> out;
  auto add_text = [&](const std::string& text) {
    check_prompt_bytes(m, text.size(), "input");
    out.push_back(m.tokenizer().encode(text, {.add_special = true, .parse_special = false}));
  };
  if (input->is_string()) {
    add_text(input->get<std::string>());
  } else if (input->is_array() && !input->empty() && (*input)[0].is_number()) {
    out.push_back(read_token_ids(*input, m, "input"));
  } else if (input->is_array() && !input->empty()) {
    if (input->size() > kMaxEmbeddingInputs) throw ApiError::invalid("at most " + std::to_string(kMaxEmbeddingInputs) + " inputs per request", "input");
    for (const Json& e : *input) {
      if (e.is_string()) add_text(e.get<std::string>());
      else if (e.is_array()) out.push_back(read_token_ids(e, m, "input"));
      else throw ApiError::invalid("'input' must be a string, an array of strings or an array of token ids", "input");
    }
  } else {
    throw ApiError::invalid("'input' must be a non-empty string, array of strings or array of token ids", "input");
  }
  for (const auto& tokens : out) {
    if (tokens.empty()) throw ApiError::invalid("an input has no tokens", "input");
  }
  return out;
}

std::string base64_of(const std::vector<float>& v) {
  // float32 in the machine's order: little-endian on every target here.
  std::string bytes(v.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), v.data(), bytes.size());
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(bytes.data()),
                                int(bytes.size()));
  out.resize(size_t(n));
  return out;
}

}  // namespace

void handle_embeddings(const ApiContext& api, const Json& body, HttpExchange& ex) {
  RequestFields f(body, api.bodies.embeddings);
  const ModelHandle held_model = api.model(f.string("model").value_or(""));
  ServedModel& model = *held_model;
  const std::vector<std::vector<int32_t>> inputs = read_inputs(f, model);
  const std::string format = f.string("encoding_format").value_or("float");
  const int width = model.hidden_size;
  if (const std::optional<int64_t> dimensions = f.integer("dimensions"); dimensions && *dimensions != width) {
    throw ApiError::invalid("'dimensions' other than the model's " + std::to_string(width) + " is not supported", "dimensions");
  }
  f.string("user");  // accepted, changes nothing
  f.finish();
  const std::optional<EmbeddingResult> result = run_embeddings(model, inputs, api.limits.max_n, [&] { return ex.client_gone(); });
  if (!result) return;
  Json data = Json::array();
  for (size_t i = 0; i < result->vectors.size(); ++i) {
    Json vector = format == "base64" ? Json(base64_of(result->vectors[i])) : Json(result->vectors[i]);
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(vector)}});
  }
  const Json response = {{"object", "list"}, {"data", std::move(data)}, {"model", model.name()},
                         {"usage", {{"prompt_tokens", result->prompt_tokens}, {"total_tokens", result->prompt_tokens}}}};
  ex.respond(200, "application/json", json_text(response));
}

}  // namespace tessera
