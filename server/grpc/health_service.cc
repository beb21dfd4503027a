#include "server/grpc/health_service.h"

#include <chrono>

namespace tessera {

using grpc::health::v1::HealthCheckResponse;

void HealthService::set_serving(bool serving) {
  {
    std::lock_guard lock(mutex_);
    if (serving_ == serving) return;
    serving_ = serving;
  }
  changed_.notify_all();
}

void HealthService::shut_down() {
  {
    std::lock_guard lock(mutex_);
    shut_down_ = true;
    serving_ = false;
  }
  changed_.notify_all();
}

HealthCheckResponse::ServingStatus HealthService::status_of(const std::string& service) const {
  if (!service.empty() && !services_.contains(service)) return HealthCheckResponse::SERVICE_UNKNOWN;
  return serving_ ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
}

grpc::Status HealthService::Check(grpc::ServerContext*, const grpc::health::v1::HealthCheckRequest* request,
                                  HealthCheckResponse* response) {
  std::lock_guard lock(mutex_);
  const auto status = status_of(request->service());
  if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service: " + request->service());
  }
  response->set_status(status);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* context, const grpc::health::v1::HealthCheckRequest* request,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  std::unique_lock lock(mutex_);
  if (watches_ >= kMaxWatches) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "too many health watches (at most " + std::to_string(kMaxWatches) + ")");
  }
  ++watches_;
  bool first = true;
  auto last = HealthCheckResponse::UNKNOWN;
  // A cancelled call is noticed within one wait: the client leaving wakes no one.
  while (!shut_down_ && !context->IsCancelled()) {
    const auto now = status_of(request->service());
    if (first || now != last) {
      HealthCheckResponse response;
      response.set_status(now);
      lock.unlock();
      const bool written = writer->Write(response);
      lock.lock();
      if (!written) break;
      first = false;
      last = now;
    }
    changed_.wait_for(lock, std::chrono::milliseconds(200));
  }
  --watches_;
  return shut_down_ ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down") : grpc::Status::OK;
}

}  // namespace tessera
