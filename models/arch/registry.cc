// The architecture table, built from architectures.def.
#include "models/architecture.h"

namespace tessera {

#define TESSERA_ARCHITECTURE(name) Architecture name##_architecture();
#include "models/arch/architectures.def"
#undef TESSERA_ARCHITECTURE

const std::vector<Architecture>& architectures() {
  static const std::vector<Architecture> table = {
#define TESSERA_ARCHITECTURE(name) name##_architecture(),
#include "models/arch/architectures.def"
#undef TESSERA_ARCHITECTURE
  };
  return table;
}

}  // namespace tessera
