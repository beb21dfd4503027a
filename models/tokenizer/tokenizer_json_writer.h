#pragma once
// Writes a byte-pair vocabulary (models/tokenizer/vocab.h) as the Hugging
// Face files that describe it: tokenizer.json (a BPE model, each
// pre-tokenizer pattern as an isolating Split, byte-level alphabet) and
// tokenizer_config.json (special tokens, BOS/EOS policy, chat template).
// Reading them back (tokenizer_hf.cc) gives the same encoder.
#include <nlohmann/json.hpp>
#include <string>

#include "models/tokenizer/vocab.h"

namespace tessera {

// Throws tessera::Error for what tokenizer.json cannot state the same way:
// SentencePiece vocabularies (score-driven merges), non-byte-level BPE and
// two tokens with one text.
nlohmann::json tokenizer_json_from_vocab(const Vocab& vocab);
nlohmann::json tokenizer_config_from_vocab(const Vocab& vocab, const std::string& chat_template);

}  // namespace tessera
