// The CUDA backend as a plugin: libtessera-backend-cuda.so (libtessera-backend-hip.so
// when the same sources are compiled by hipcc).
#include "kernels/backend_plugin.h"
#include "kernels/cuda/cuda_backend.h"

TESSERA_BACKEND_PLUGIN(tessera::cuda_backend_factory, tessera::cuda_unusable_devices)
