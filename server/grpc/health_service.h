#pragma once
// grpc.health.v1.Health from the generated protocol (so reflection can
// resolve it): Check and Watch answer for the whole server ("") and for each
// service it serves, SERVING while the model registry is healthy. Watch
// streams each change; each holds a thread, so at most kMaxWatchesPerClient
// run at once from one client address and kMaxWatches in all, further ones
// getting RESOURCE_EXHAUSTED: no one client can take every place.
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"

namespace tessera {

class HealthService final : public grpc::health::v1::Health::Service {
 public:
  static constexpr int kMaxWatches = 64;
  static constexpr int kMaxWatchesPerClient = 8;

  explicit HealthService(std::set<std::string> services) : services_(std::move(services)) {}

  // Called by whoever watches the engine; wakes the watches on a change.
  void set_serving(bool serving);
  // Ends every watch (the server is stopping).
  void shut_down();

  grpc::Status Check(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override;
  grpc::Status Watch(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override;

 private:
  grpc::health::v1::HealthCheckResponse::ServingStatus status_of(const std::string& service) const;

  const std::set<std::string> services_;  // names besides "", e.g. "tessera.v1.Generation"
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool serving_ = false;
  bool shut_down_ = false;
  int watches_ = 0;
  std::map<std::string, int> watches_by_client_;  // client address (no port) -> its watches
};

}  // namespace tessera
