#include "kernels/cpu/gloo_communicator.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <cstring>
#include <filesystem>

#include "kernels/backend.h"
#include "kernels/cpu/gloo_rendezvous_store.h"

namespace tessera::cpu {

namespace {

// The host name other ranks reach this one at: the leader's interface for
// a TCP store, the loopback for ranks on one machine.
std::string transport_host(const CommunicatorOptions& options) {
  if (options.rendezvous.rfind("tcp:", 0) == 0) {
    const std::string address = options.rendezvous.substr(4);
    const std::string host = address.substr(0, address.rfind(':'));
    if (host == "127.0.0.1" || host == "localhost") return "127.0.0.1";
    return "";  // gloo resolves this machine's own name
  }
  return "127.0.0.1";
}

}  // namespace

GlooCommunicator::GlooCommunicator(const CommunicatorOptions& options) : Communicator(options) {
  try {
    const auto join_timeout = options.join_timeout.count() > 0 ? options.join_timeout : options.timeout;
    store_ = options.store ? options.store
                           : open_rendezvous_store(options.rendezvous, options.rank == 0, join_timeout);
    auto* gloo_store = dynamic_cast<GlooRendezvousStore*>(store_.get());
    if (!gloo_store) throw CollectiveError("the rendezvous store is not one gloo can use");
    gloo::transport::tcp::attr attr;
    const std::string host = transport_host(options);
    if (!host.empty()) attr.hostname = host;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.world);
    context->setTimeout(join_timeout);
    gloo::rendezvous::PrefixStore prefixed(options.group, gloo_store->gloo_store());
    context->connectFullMesh(prefixed, device);
    context->setTimeout(options.timeout);
    context_ = std::move(context);
    sent_.assign(size_t(options.world), 0);
    received_.assign(size_t(options.world), 0);
  } catch (const CollectiveError&) {
    throw;
  } catch (const std::exception& e) {
    throw CollectiveError("rank " + std::to_string(options.rank) + " of " + std::to_string(options.world) +
                          " could not join through '" + options.rendezvous + "': " + e.what());
  }
}

GlooCommunicator::~GlooCommunicator() = default;

void GlooCommunicator::run_all_reduce_sum(float* data, size_t count, Stream& stream) {
  stream.synchronize();
  if (world() == 1) return;
  gloo::AllreduceOptions opts(context_);
  opts.setOutput(data, count);
  opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
  opts.setTag(next_tag_++);
  opts.setTimeout(timeout());
  gloo::allreduce(opts);
}

void GlooCommunicator::run_all_gather(const void* in, size_t bytes, void* out, Stream& stream) {
  stream.synchronize();
  if (world() == 1) {
    if (out != in) std::memcpy(out, in, bytes);
    return;
  }
  gloo::AllgatherOptions opts(context_);
  opts.setInput(const_cast<uint8_t*>(static_cast<const uint8_t*>(in)), bytes);
  opts.setOutput(static_cast<uint8_t*>(out), bytes * size_t(world()));
  opts.setTag(next_tag_++);
  opts.setTimeout(timeout());
  gloo::allgather(opts);
}

// gloo's packaged reduce-scatter is an algorithm class over fixed buffers;
// an all-reduce of a staging copy gives the same sums.
void GlooCommunicator::run_reduce_scatter_sum(const float* in, float* out, size_t count, Stream& stream) {
  reduce_scratch_.assign(in, in + count * size_t(world()));
  run_all_reduce_sum(reduce_scratch_.data(), reduce_scratch_.size(), stream);
  std::memcpy(out, reduce_scratch_.data() + count * size_t(rank()), count * sizeof(float));
}

void GlooCommunicator::run_broadcast(void* data, size_t bytes, int root, Stream& stream) {
  stream.synchronize();
  if (root < 0 || root >= world()) throw CollectiveError("broadcast root " + std::to_string(root) + " outside the world");
  if (world() == 1) return;
  gloo::BroadcastOptions opts(context_);
  opts.setOutput(static_cast<uint8_t*>(data), bytes);
  opts.setRoot(root);
  opts.setTag(next_tag_++);
  opts.setTimeout(timeout());
  gloo::broadcast(opts);
}

void GlooCommunicator::run_send(const void* data, size_t bytes, int peer, Stream& stream) {
  stream.synchronize();
  if (peer < 0 || peer >= world() || peer == rank()) throw CollectiveError("send to rank " + std::to_string(peer));
  auto buffer = context_->createUnboundBuffer(const_cast<void*>(data), bytes);
  buffer->send(peer, p2p_slot(rank(), peer, sent_[size_t(peer)]++));
  if (!buffer->waitSend(nullptr, timeout())) throw CollectiveError("send to rank " + std::to_string(peer) + " timed out");
}

void GlooCommunicator::run_recv(void* data, size_t bytes, int peer, Stream& stream) {
  stream.synchronize();
  if (peer < 0 || peer >= world() || peer == rank()) throw CollectiveError("recv from rank " + std::to_string(peer));
  auto buffer = context_->createUnboundBuffer(data, bytes);
  buffer->recv(peer, p2p_slot(peer, rank(), received_[size_t(peer)]++));
  if (!buffer->waitRecv(nullptr, timeout())) throw CollectiveError("recv from rank " + std::to_string(peer) + " timed out");
}

uint64_t GlooCommunicator::p2p_slot(int from, int to, uint64_t count) const {
  const uint64_t w = uint64_t(world());
  return (uint64_t(1) << 62) | ((count * w + uint64_t(from)) * w + uint64_t(to));
}

void GlooCommunicator::run_barrier() {
  if (world() == 1) return;
  gloo::BarrierOptions opts(context_);
  opts.setTag(next_tag_++);
  opts.setTimeout(timeout());
  gloo::barrier(opts);
}

}  // namespace tessera::cpu
