#include "server/cli/fatal_signals.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace tessera::cli {
namespace {

void on_bus_error(int) {
  // Only async-signal-safe calls here: write(2) and _exit(2).
  static const char kMessage[] =
      "tessera: fatal: SIGBUS reading mapped memory; a model file was truncated or replaced while the server had it "
      "loaded. Exiting; restart to load the file as it is now.\n";
  ssize_t ignored = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  (void)ignored;
  ::_exit(70);
}

}  // namespace

void install_fatal_signal_handlers() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = on_bus_error;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, nullptr);
}

}  // namespace tessera::cli
