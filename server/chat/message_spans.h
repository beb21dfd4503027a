#pragma once
// Where the clients' message text sits in a rendered chat prompt, so that
// control-token text written inside a message stays text while the
// template's own markers become control tokens.
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "models/tokenizer/tokenizer.h"

namespace tessera {

// Each message text (string content, or each text part) for which
// `must_protect` holds, looked for in order in `rendered` without the
// whitespace at its edges (which templates often trim). Returns the spans
// (sorted, disjoint), or nullopt when one such text is not there (the
// template rewrote it) and cannot be protected. Linear in the sizes.
std::optional<std::vector<ByteRange>> protected_message_spans(std::string_view rendered,
                                                              const nlohmann::ordered_json& messages,
                                                              const std::function<bool(std::string_view)>& must_protect);

}  // namespace tessera
