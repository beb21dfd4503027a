#pragma once
// Bearer-token authentication shared by the HTTP and gRPC front ends.
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// True when no keys are configured, or `authorization` is "Bearer KEY" for
// one of them. Compares in time independent of where the strings differ.
bool api_key_accepted(std::string_view authorization, const std::vector<std::string>& keys);

}  // namespace tessera
