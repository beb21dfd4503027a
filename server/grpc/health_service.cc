#include "server/grpc/health_service.h"

#include <chrono>

namespace tessera {

using grpc::health::v1::HealthCheckResponse;

namespace {

// "ipv4:127.0.0.1:5432" -> "ipv4:127.0.0.1": one client, whatever its ports.
std::string client_address(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  return colon == std::string::npos ? peer : peer.substr(0, colon);
}

}  // namespace

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
  const std::string client = client_address(context->peer());
  std::unique_lock lock(mutex_);
  const auto held = watches_by_client_.find(client);
  if (held != watches_by_client_.end() && held->second >= kMaxWatchesPerClient) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "too many health watches from this client (at most " + std::to_string(kMaxWatchesPerClient) + ")");
  }
  if (watches_ >= kMaxWatches) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "too many health watches (at most " + std::to_string(kMaxWatches) + ")");
  }
  ++watches_;
  ++watches_by_client_[client];
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
  if (--watches_by_client_[client] == 0) watches_by_client_.erase(client);
  return shut_down_ ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down") : grpc::Status::OK;
}

}  // namespace tessera
