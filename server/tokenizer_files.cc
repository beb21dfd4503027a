#include "server/tokenizer_files.h"

#include "engine/core/error.h"
#include "models/tokenizer/tokenizer_json_writer.h"

namespace tessera {
namespace {

std::string build(const ServedModel& model, const std::string& file) {
  const Vocab& vocab = model.tokenizer().vocab();
  if (file == "tokenizer.json") {
    try {
      return tokenizer_json_from_vocab(vocab).dump();
    } catch (const Error& e) {
      throw ApiError::invalid("the tokenizer of model '" + model.name() + "' has no tokenizer.json form: " + e.what(), "model");
    }
  }
  nlohmann::json info = tokenizer_config_from_vocab(vocab, model.chat_template ? model.chat_template->source() : "");
  info["tokenizer_class"] = "PreTrainedTokenizerFast";
  info["model_max_length"] = model.max_model_len;
  return info.dump();
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

const std::string& TokenizerFiles::text(const ServedModel& model, const std::string& file) {
  const std::string key = model.name() + '\n' + model.fingerprint + '\n' + file;
  std::lock_guard lock(mutex_);
  auto found = texts_.find(key);
  if (found == texts_.end()) found = texts_.emplace(key, build(model, file)).first;
  return found->second;
}

std::string query_parameter(std::string_view target, std::string_view key) {
  const size_t question = target.find('?');
  if (question == std::string_view::npos) return "";
  std::string_view query = target.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) != key || eq == std::string_view::npos) continue;
    std::string value;
    const std::string_view raw = pair.substr(eq + 1);
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '+') {
        value += ' ';
      } else if (raw[i] != '%') {
        value += raw[i];
      } else {
        const int hi = i + 2 < raw.size() ? hex_value(raw[i + 1]) : -1, lo = hi >= 0 ? hex_value(raw[i + 2]) : -1;
        if (lo < 0) return "";
        value += char(hi * 16 + lo);
        i += 2;
      }
    }
    return value;
  }
  return "";
}

}  // namespace tessera
