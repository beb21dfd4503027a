#pragma once
// The secret a parallel group's ranks share: it admits them to the leader's
// rendezvous store and seals what they write there (kernels/comm/store_wire.h).
// It travels by environment (TESSERA_RENDEZVOUS_SECRET) or by file, never
// on a command line, where any local user could read it.
#include <string>

#include "config/config.h"

namespace tessera {

// 32 random bytes as 64 hex digits.
std::string generate_group_secret();

// TESSERA_RENDEZVOUS_SECRET when set, else the first line of `secret_file`
// (a file readable by others gets a warning); empty when neither is given.
// Throws tessera::Error naming the file when it cannot be read or is empty.
std::string read_group_secret(const std::string& secret_file);

// The leader's secret: as read_group_secret, or a fresh one when it spawns
// its workers itself; ranks on other machines without one are refused.
std::string leader_group_secret(const ParallelConfig& parallel);

}  // namespace tessera
