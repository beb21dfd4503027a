#pragma once
// A loopback TCP port free at the moment of the call, for tests that start a
// server whose address must be known before it listens. The kernel picks it
// (bind to port 0), so tests run in parallel neither collide with each other
// nor with a port another process holds, as a port derived from the pid can.

namespace tessera {

// Throws std::runtime_error when no socket can be bound.
int free_loopback_port();

}  // namespace tessera
