#include "server/grpc/grpc_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <thread>

#include "engine/core/error.h"
#include "server/grpc/generation_service.h"
#include "server/grpc/health_service.h"
#include "server/grpc/reflection_service.h"

namespace tessera {

namespace {

// Every service this server registers, as reflection lists them.
std::vector<std::string> served_services() {
  return {tessera::v1::Generation::service_full_name(), grpc::health::v1::Health::service_full_name(),
          grpc::reflection::v1::ServerReflection::service_full_name(), "grpc.reflection.v1alpha.ServerReflection"};
}

}  // namespace

struct GrpcServer::Impl {
  ModelRegistry& registry;
  GenerationService service;
  GrpcOptions options;
  std::unique_ptr<grpc::Server> server;
  // Mirrors the registry's health into grpc.health.v1 until stopped.
  std::thread health_watch;
  std::mutex mutex;
  std::condition_variable stop_cv;
  bool stopping = false;
  HealthService health{{tessera::v1::Generation::service_full_name()}};
  ReflectionService reflection{served_services()};
};

GrpcServer::GrpcServer(ModelRegistry& registry, const ApiLimits& limits, const GrpcOptions& options)
    : impl_(new Impl{registry, GenerationService(registry, limits, options.api_keys), options, nullptr, {}, {}, {}, false}) {}

namespace {

std::shared_ptr<grpc::ServerCredentials> credentials_of(const GrpcOptions& o) {
  if (o.tls_cert_pem.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({o.tls_key_pem, o.tls_cert_pem});
  return grpc::SslServerCredentials(ssl);
}

void set_limits(grpc::ServerBuilder& builder, const GrpcOptions& o) {
  const int message_bytes = int(std::min<int64_t>(o.max_message_bytes, INT32_MAX));
  builder.SetMaxReceiveMessageSize(message_bytes);
  builder.SetMaxSendMessageSize(message_bytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, o.max_concurrent_streams);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, int(o.max_connection_idle.count()));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, int(o.keepalive_time.count()));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, int(o.keepalive_timeout.count()));
  // Clients may ping to keep streams alive, but not flood the server with pings.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, 16 << 10);
}

}  // namespace

GrpcServer::~GrpcServer() { stop(); }

int GrpcServer::in_flight() const { return impl_->service.in_flight(); }

uint16_t GrpcServer::start(const std::string& host, int port) {
  // Health is ours (generated, so reflection resolves it), not gRPC's default.
  grpc::EnableDefaultHealthCheckService(false);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int bound = 0;
  const std::string address = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  builder.AddListeningPort(address, credentials_of(impl_->options), &bound);
  set_limits(builder, impl_->options);
  builder.RegisterService(&impl_->service);
  builder.RegisterService(&impl_->health);
  builder.RegisterService(&impl_->reflection);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || bound == 0) throw Error("cannot listen for gRPC on " + address);
  impl_->registry.set_health_listener([health = &impl_->health](bool healthy) { health->set_serving(healthy); });
  // Registry transitions publish at once; engine faults are picked up here.
  impl_->health_watch = std::thread([impl = impl_.get()] {
    std::unique_lock lock(impl->mutex);
    while (!impl->stopping) {
      impl->registry.publish_health();
      impl->stop_cv.wait_for(lock, std::chrono::milliseconds(50));
    }
  });
  return uint16_t(bound);
}

void GrpcServer::stop() {
  if (!impl_->server) return;
  {
    std::lock_guard lock(impl_->mutex);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->stop_cv.notify_all();
  if (impl_->health_watch.joinable()) impl_->health_watch.join();
  impl_->registry.set_health_listener(nullptr);
  impl_->health.shut_down();
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

}  // namespace tessera
