// libFuzzer target: the artifact cache's inputs from other machines. Any
// bytes read as an exported archive, as an entry file, or as a cached int
// matrix or grammar table either give their contents or a tessera::Error;
// nothing else.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "engine/core/error.h"
#include "engine/io/artifact_cache.h"
#include "engine/grammar/grammar.h"
#include "engine/grammar/position_table_codec.h"
#include "engine/io/tar_archive.h"
#include "quant/int_matrix_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::istringstream in(bytes);
  try {
    tessera::read_tar(in, "fuzz", 1 << 20, [](const std::string&, std::string&&) {});
  } catch (const tessera::Error&) {
  }
  try {
    (void)tessera::quant::decode_int_matrix(bytes);
  } catch (const tessera::Error&) {
  }
  try {
    (void)tessera::grammar::decode_position_table(bytes, 1000);
  } catch (const tessera::Error&) {
  }
  const tessera::ArtifactCache cache("/nonexistent", 0, std::string(64, 'a'));
  bool this_build = false;
  (void)cache.check(bytes, std::string(64, 'b'), &this_build);
  return 0;
}
