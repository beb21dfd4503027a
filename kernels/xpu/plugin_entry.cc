// The XPU backend as a plugin: libtessera-backend-xpu.so.
#include "kernels/backend_plugin.h"
#include "kernels/xpu/xpu_backend.h"

TESSERA_BACKEND_PLUGIN(tessera::xpu_backend_factory, tessera::xpu_unusable_devices)
