#pragma once
// The gRPC front end: tessera.v1.Generation, the standard grpc.health.v1
// health service (serving exactly when /health is 200) and server
// reflection, with message size limits set explicitly.
#include <atomic>
#include <memory>
#include <string>

#include "server/openai/generation_fields.h"
#include "server/serving/model_registry.h"

namespace tessera {

class GrpcServer {
 public:
  GrpcServer(ModelRegistry& registry, const ApiLimits& limits, int64_t max_message_bytes = 8 << 20);
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
