#pragma once
// grpc.reflection.v1.ServerReflection over the generated descriptor pool:
// the services served, and any file, symbol or extension they reach (a file
// comes with the files it imports that this stream has not been sent yet).
// v1alpha stays with gRPC's own plugin, which reads the same pool.
#include <set>
#include <string>
#include <vector>

#include "grpc/reflection/v1/reflection.grpc.pb.h"

namespace google::protobuf {
class FileDescriptor;
}

namespace tessera {

class ReflectionService final : public grpc::reflection::v1::ServerReflection::Service {
 public:
  explicit ReflectionService(std::vector<std::string> services) : services_(std::move(services)) {}

  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::reflection::v1::ServerReflectionResponse, grpc::reflection::v1::ServerReflectionRequest>*
          stream) override;

 private:
  // Fills `response` for one request; `sent` holds the files this stream has had.
  grpc::Status answer(const grpc::reflection::v1::ServerReflectionRequest& request,
                      grpc::reflection::v1::ServerReflectionResponse& response, std::set<std::string>& sent) const;

  const std::vector<std::string> services_;  // full names, e.g. "tessera.v1.Generation"
};

}  // namespace tessera
