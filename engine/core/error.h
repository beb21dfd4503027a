#pragma once
// One exception type for every failure a user can cause (bad file, bad
// request, bad flag). The message names the thing that was wrong.
#include <stdexcept>
#include <string>

namespace tessera {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace tessera
