#pragma once
// PositionTable as bytes, for the artifact cache (engine/io/artifact_cache.h):
// a vocabulary's tables are walked once and read back on later starts. Any
// change to this encoding, or to how tables are built, changes the build's
// kernel ABI (engine/CMakeLists.txt), so older entries are ignored.
#include <string>

#include "engine/grammar/token_tables.h"

namespace tessera::grammar {

std::string encode_position_table(const PositionTable& table);
// Throws GrammarError when `bytes` is not a whole, consistent table over a
// vocabulary of `vocab_size` tokens (ids in range, the mask's size, the
// front-coded arrays' lengths and offsets).
PositionTable decode_position_table(const std::string& bytes, size_t vocab_size);

}  // namespace tessera::grammar
