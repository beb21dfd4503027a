#pragma once
// tessera.v1.Generation over the served models. Requests are validated by
// the same code as the HTTP API (each is read as the equivalent JSON body),
// so parameters, limits and error messages match; errors map to gRPC codes.
#include <atomic>
#include <string>
#include <vector>

#include "server/serving/api_context.h"
#include "tessera/v1/generation.grpc.pb.h"

namespace tessera {

class GenerationService final : public tessera::v1::Generation::Service {
 public:
  GenerationService(ModelRegistry& registry, const ApiLimits& limits, std::vector<std::string> api_keys = {})
      : api_{registry, limits}, api_keys_(std::move(api_keys)) {}

  grpc::Status Generate(grpc::ServerContext* context, const v1::GenerateRequest* request,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override;
  grpc::Status Tokenize(grpc::ServerContext* context, const v1::TokenizeRequest* request,
                        v1::TokenizeResponse* response) override;
  grpc::Status ListModels(grpc::ServerContext* context, const v1::ListModelsRequest* request,
                          v1::ListModelsResponse* response) override;

  int in_flight() const { return in_flight_.load(); }

 private:
  // OK, or UNAUTHENTICATED when keys are set and the call's
  // "authorization: Bearer KEY" metadata carries none of them.
  grpc::Status authenticate(const grpc::ServerContext& context) const;

  ApiContext api_;
  std::vector<std::string> api_keys_;
  std::atomic<int> in_flight_{0};
};

}  // namespace tessera
