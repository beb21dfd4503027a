#include "models/tokenizer/vocab.h"

#include "engine/core/error.h"
#include "engine/core/token_ids.h"

namespace tessera {

void Vocab::index_texts() {
  ids.clear();
  ids.reserve(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) ids.emplace(texts[i], TokenId(i));  // first id wins on duplicates
}

void Vocab::finalize(const std::string& source) {
  if (texts.empty()) throw Error(source + ": the vocabulary is empty");
  if (kinds.size() != texts.size()) throw Error(source + ": token kinds and token texts differ in length");
  if (!scores.empty() && scores.size() != texts.size()) throw Error(source + ": token scores and token texts differ in length");
  if (ids.empty()) index_texts();
  auto check = [&](TokenId id, const char* what) {
    if (id != kNoToken && !token_in_vocabulary(id, int64_t(texts.size()))) {
      throw Error(source + ": " + what + " token id " + std::to_string(id) + " is outside the vocabulary of " +
                  std::to_string(texts.size()));
    }
  };
  check(bos, "BOS");
  check(eos, "EOS");
  check(unk, "unknown");
  check(pad, "padding");
  for (TokenId id : end_of_generation) check(id, "end-of-generation");
  if (add_bos && bos == kNoToken) throw Error(source + ": add_bos is set but there is no BOS token");
  if (add_eos && eos == kNoToken) throw Error(source + ": add_eos is set but there is no EOS token");
}

}  // namespace tessera
