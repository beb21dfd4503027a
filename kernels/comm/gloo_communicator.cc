#include "kernels/comm/gloo_communicator.h"

#include <gloo/allgather_ring.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/buffer.h>
#include <gloo/transport/pair.h>

#include <cstring>
#include <limits>
#include <filesystem>

#include "engine/core/stream.h"
#include "kernels/comm/gloo_rendezvous_store.h"

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

// Ranks may start minutes apart (pods scheduled one by one); the join
// timeout covers that, so that the collective timeout can stay short.
void wait_for_every_rank(gloo::rendezvous::Store& store, int rank, int world, std::chrono::milliseconds timeout) {
  store.set("joined/" + std::to_string(rank), {'1'});
  std::vector<std::string> keys;
  for (int r = 0; r < world; ++r) keys.push_back("joined/" + std::to_string(r));
  store.wait(keys, timeout);
}

// Well under the smallest default socket buffers (~200 KB).
constexpr size_t kChunkBytes = size_t(64) << 10;

int checked_int(size_t n, const char* what) {
  if (n > size_t(std::numeric_limits<int>::max())) throw CollectiveError(std::string(what) + " of " + std::to_string(n) + " is too large");
  return int(n);
}

}  // namespace

GlooCommunicator::GlooCommunicator(const CommunicatorOptions& options) : Communicator(options) {
  try {
    const auto join_timeout = options.join_timeout.count() > 0 ? options.join_timeout : options.timeout;
    store_ = options.store ? options.store
                           : open_rendezvous_store(options.rendezvous, options.rank == 0, join_timeout, options.rendezvous_secret);
    auto* gloo_store = dynamic_cast<GlooRendezvousStore*>(store_.get());
    if (!gloo_store) throw CollectiveError("the rendezvous store is not one gloo can use");
    gloo::transport::tcp::attr attr;
    const std::string host = transport_host(options);
    if (!host.empty()) attr.hostname = host;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::PrefixStore prefixed(options.group, gloo_store->gloo_store());
    wait_for_every_rank(prefixed, options.rank, options.world, join_timeout);
    // The pairs take the collective timeout as their socket deadlines.
    auto context = std::make_shared<gloo::rendezvous::Context>(options.rank, options.world);
    context->setTimeout(options.timeout);
    context->connectFullMesh(prefixed, device);
    for (int peer = 0; peer < options.world; ++peer) {
      if (peer != options.rank) context->getPair(peer)->setSync(true, true);
    }
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

// The pairs run in gloo's synchronous mode: the calling thread reads its
// peers' sockets itself (no hand-off through gloo's event-loop thread),
// which takes a collective between two processes from ~150 µs to ~15 µs.
// The algorithms of that mode bind their buffers when built; each call
// builds its own, with the same slot sequence on every rank. In this mode
// a rank writes before it reads, so ranks sending to each other at once
// must each fit in the socket buffers: all-gathers and all-reduces go in
// chunks of kChunkBytes. (Slot numbers are gloo's int counter; it wraps
// after hours of decoding, harmlessly, as no two live buffers share one.)

void GlooCommunicator::run_all_reduce_sum(float* data, size_t count, Stream& stream) {
  stream.synchronize();
  if (world() == 1) return;
  for (size_t first = 0; first < count; first += kChunkBytes / sizeof(float)) {
    const size_t n = std::min(count - first, kChunkBytes / sizeof(float));
    gloo::AllreduceRing<float>(context_, {data + first}, int(n)).run();
  }
}

// The all-gather is one exchange: every rank sends its block to each
// peer, then reads each peer's block straight into place. gloo's
// AllgatherRing follows each round with a buffer-ready notification, which
// its asynchronous mode needs (the event loop writes into registered
// buffers as data arrives) and which doubles the latency between two ranks
// (~15 µs to ~7 µs here). In the synchronous mode a message waits in the
// socket until its receiver reads it into the buffer it registered for
// that slot, so no notification is needed.
void GlooCommunicator::run_all_gather(const void* in, size_t bytes, void* out, Stream& stream) {
  stream.synchronize();
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  uint8_t* own = dst + size_t(rank()) * bytes;
  if (own != src) std::memcpy(own, src, bytes);
  if (world() == 1) return;
  for (size_t first = 0; first < bytes; first += kChunkBytes) {
    exchange_chunk(src + first, std::min(bytes - first, kChunkBytes), dst + first, bytes);
  }
}

// Sends (n) bytes at `chunk` to every peer and receives each peer's (n)
// bytes at dst + peer * stride, under one slot of the collective sequence.
void GlooCommunicator::exchange_chunk(const uint8_t* chunk, size_t n, uint8_t* dst, size_t stride) {
  const int slot = context_->nextSlot();
  std::vector<std::unique_ptr<gloo::transport::Buffer>> receives, sends;
  for (int peer = 0; peer < world(); ++peer) {
    if (peer == rank()) continue;
    receives.push_back(context_->getPair(peer)->createRecvBuffer(slot, dst + size_t(peer) * stride, n));
  }
  for (int peer = 0; peer < world(); ++peer) {
    if (peer == rank()) continue;
    sends.push_back(context_->getPair(peer)->createSendBuffer(slot, const_cast<uint8_t*>(chunk), n));
    sends.back()->send();
  }
  for (auto& r : receives) r->waitRecv();
  for (auto& s : sends) s->waitSend();
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
  gloo::BroadcastOneToAll<uint8_t>(context_, {static_cast<uint8_t*>(data)}, checked_int(bytes, "broadcast"), root).run();
}

void GlooCommunicator::run_send(const void* data, size_t bytes, int peer, Stream& stream) {
  stream.synchronize();
  if (peer < 0 || peer >= world() || peer == rank()) throw CollectiveError("send to rank " + std::to_string(peer));
  auto buffer = context_->getPair(peer)->createSendBuffer(p2p_slot(rank(), peer, sent_[size_t(peer)]++),
                                                         const_cast<void*>(data), bytes);
  buffer->send();
  buffer->waitSend();
}

void GlooCommunicator::run_recv(void* data, size_t bytes, int peer, Stream& stream) {
  stream.synchronize();
  if (peer < 0 || peer >= world() || peer == rank()) throw CollectiveError("recv from rank " + std::to_string(peer));
  auto buffer = context_->getPair(peer)->createRecvBuffer(p2p_slot(peer, rank(), received_[size_t(peer)]++), data, bytes);
  buffer->waitRecv();
}

// Bound buffers take an int slot: point-to-point messages use the upper
// half of its range, which collectives (numbered from 0) never reach.
int GlooCommunicator::p2p_slot(int from, int to, uint64_t count) const {
  const uint64_t w = uint64_t(world());
  const uint64_t slot = (count * w + uint64_t(from)) * w + uint64_t(to);
  return int((uint64_t(1) << 30) | (slot & ((uint64_t(1) << 30) - 1)));
}

void GlooCommunicator::run_barrier() {
  if (world() == 1) return;
  gloo::BarrierAllToAll(context_).run();
}

void GlooCommunicator::apply_busy_wait(bool on) {
  for (int peer = 0; peer < world(); ++peer) {
    if (peer != rank()) context_->getPair(peer)->setSync(true, on);
  }
}

}  // namespace tessera::cpu
