#pragma once
// Collectives over NCCL (RCCL in a ROCm build) for ranks whose buffers live
// in GPU memory, one device per rank. The ranks meet through the same
// rendezvous store as gloo's: rank 0 creates the NCCL id and publishes it
// under the group's name.
#include <memory>

#include "kernels/comm/communicator.h"

namespace tessera::gpu {

// Joins the group on GPU `device`, blocking until every rank has (throws
// CollectiveError past options.join_timeout). Collectives run on the
// backend stream they are given.
std::unique_ptr<Communicator> create_nccl_communicator(const CommunicatorOptions& options, int device);

}  // namespace tessera::gpu
