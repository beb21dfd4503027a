#pragma once
// The row-wise and element-wise ops of the table on the GPU: embedding
// lookup, RMSNorm, RoPE, gated activations, residual add, scaling, softcap,
// row gathering and the KV-cache write.
#include "kernels/backend.h"
#include "kernels/cuda/gpu_runtime.h"

namespace tessera::gpu {

void launch_embedding(const EmbeddingArgs& args, cudaStream_t stream);
void launch_rms_norm(const RmsNormArgs& args, cudaStream_t stream);
void launch_rope(const RopeArgs& args, cudaStream_t stream);
void launch_gated_activation(const GatedActivationArgs& args, cudaStream_t stream);
void launch_add(const AddArgs& args, cudaStream_t stream);
void launch_scale(const ScaleArgs& args, cudaStream_t stream);
void launch_softcap(const SoftcapArgs& args, cudaStream_t stream);
void launch_gather_rows(const GatherRowsArgs& args, cudaStream_t stream);
void launch_scatter_add_rows(const ScatterAddRowsArgs& args, cudaStream_t stream);
// f32 and f16 caches.
void launch_kv_write(const KvWriteArgs& args, cudaStream_t stream);

}  // namespace tessera::gpu
