#pragma once
// The gRPC front end: tessera.v1.Generation, the standard grpc.health.v1
// health service (serving exactly when /health is 200) and server
// reflection, with message size, stream and connection limits set
// explicitly, optional TLS and API keys (health and reflection exempt).
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "server/serving/generation_request.h"
#include "server/serving/model_registry.h"

namespace tessera {

struct GrpcOptions {
  int64_t max_message_bytes = 8 << 20;
  int max_concurrent_streams = 128;              // per connection
  std::chrono::milliseconds max_connection_idle{300'000};
  std::chrono::milliseconds keepalive_time{60'000};  // server pings an idle connection this often
  std::chrono::milliseconds keepalive_timeout{20'000};
  std::vector<std::string> api_keys;
  std::string tls_cert_pem, tls_key_pem;  // empty: plain TCP
};

class GrpcServer {
 public:
  GrpcServer(ModelRegistry& registry, const ApiLimits& limits, const GrpcOptions& options = {});
  ~GrpcServer();

  // Returns the bound port; throws tessera::Error when it cannot listen.
  uint16_t start(const std::string& host, int port);
  void stop();
  int in_flight() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
