#include "server/http/request_thread.h"

#include <pthread.h>

#include <memory>
#include <system_error>

namespace tessera {
namespace {

void* run_work(void* arg) {
  std::unique_ptr<std::function<void()>> work(static_cast<std::function<void()>*>(arg));
  (*work)();
  return nullptr;
}

}  // namespace

void start_request_thread(std::function<void()> work, size_t stack_bytes) {
  pthread_attr_t attr;
  if (int rc = pthread_attr_init(&attr); rc != 0) throw std::system_error(rc, std::generic_category(), "pthread_attr_init");
  auto owned = std::make_unique<std::function<void()>>(std::move(work));
  int rc = pthread_attr_setstacksize(&attr, stack_bytes);
  if (rc == 0) rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  if (rc == 0) rc = pthread_create(&thread, &attr, run_work, owned.get());
  pthread_attr_destroy(&attr);
  if (rc != 0) throw std::system_error(rc, std::generic_category(), "cannot start a request thread");
  owned.release();  // the thread owns it now
}

}  // namespace tessera
