#include "server/serving/low_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <thread>

namespace tessera {

void run_at_low_priority(const std::function<void()>& work) {
  std::exception_ptr failure;
  std::thread worker([&] {
    // Per thread on Linux; raising the nice value needs no privilege.
    const id_t self = id_t(syscall(SYS_gettid));
    errno = 0;
    const int nice_now = getpriority(PRIO_PROCESS, self);
    if (errno == 0) setpriority(PRIO_PROCESS, self, std::min(19, nice_now + kLowPriorityNice));
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  worker.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace tessera
