#include "kernels/comm/gloo_rendezvous_store.h"

#include <gloo/rendezvous/file_store.h>

#include <filesystem>

#include "kernels/comm/communicator.h"
#include "kernels/comm/tcp_store.h"

namespace tessera {

std::shared_ptr<RendezvousStore> open_rendezvous_store(const std::string& address, bool serve,
                                                       std::chrono::milliseconds timeout, const std::string& secret) {
  try {
    if (address.rfind("file:", 0) == 0) {
      const std::string dir = address.substr(5);
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (ec) throw CollectiveError("rendezvous directory '" + dir + "': " + ec.message());
      return std::make_shared<cpu::GlooRendezvousStore>(std::make_unique<gloo::rendezvous::FileStore>(dir));
    }
    if (address.rfind("tcp:", 0) == 0) {
      return std::make_shared<cpu::GlooRendezvousStore>(std::make_unique<cpu::TcpStore>(address.substr(4), serve, timeout, secret));
    }
  } catch (const CollectiveError&) {
    throw;
  } catch (const std::exception& e) {
    throw CollectiveError("rendezvous '" + address + "': " + e.what());
  }
  throw CollectiveError("rendezvous '" + address + "': expected file:DIR or tcp:HOST:PORT");
}

namespace cpu {

void GlooRendezvousStore::set(const std::string& key, const std::vector<char>& value) {
  try {
    store_->set(key, value);
  } catch (const std::exception& e) {
    throw CollectiveError("rendezvous store: setting '" + key + "' failed: " + e.what());
  }
}

std::vector<char> GlooRendezvousStore::get(const std::string& key, std::chrono::milliseconds timeout) {
  try {
    store_->wait({key}, timeout);
    return store_->get(key);
  } catch (const std::exception& e) {
    throw CollectiveError("rendezvous store: '" + key + "' did not arrive: " + e.what());
  }
}

}  // namespace cpu
}  // namespace tessera
