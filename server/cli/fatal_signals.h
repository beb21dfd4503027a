#pragma once
// Weights are read through memory maps: if a model file is truncated or
// replaced while mapped, touching the lost pages raises SIGBUS. Without a
// handler the process would vanish with no word in its log.
namespace tessera::cli {

// SIGBUS writes one clear line to stderr and exits with status 70.
void install_fatal_signal_handlers();

}  // namespace tessera::cli
