#pragma once
// The rendezvous store as gloo sees it: gloo's own file store, or the TCP
// store for ranks on several machines.
#include <gloo/rendezvous/store.h>

#include <memory>

#include "kernels/comm/rendezvous_store.h"

namespace tessera::cpu {

class GlooRendezvousStore final : public RendezvousStore {
 public:
  explicit GlooRendezvousStore(std::unique_ptr<gloo::rendezvous::Store> store) : store_(std::move(store)) {}

  void set(const std::string& key, const std::vector<char>& value) override;
  std::vector<char> get(const std::string& key, std::chrono::milliseconds timeout) override;
  gloo::rendezvous::Store& gloo_store() { return *store_; }

 private:
  std::unique_ptr<gloo::rendezvous::Store> store_;
};

}  // namespace tessera::cpu
