#include "server/http/http_server.h"

#include <fcntl.h>
#include <sys/resource.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <list>
#include <mutex>
#include <spdlog/spdlog.h>
#include <thread>

#include "engine/core/error.h"
#include "server/http/http_session.h"

namespace tessera {

namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// How long the accept loop rests when the process is out of descriptors:
// retrying at once would spin a core while nothing can be accepted.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);
// A fixed send buffer per connection (no autotuning up to megabytes): a
// client that stops reading holds at most this much kernel memory, and its
// writes stall soon enough for the write deadline to find it.
constexpr int kSendBufferBytes = 256 << 10;

bool out_of_descriptors(const boost::system::error_code& ec) {
  return ec == net::error::no_descriptors || ec.value() == ENFILE || ec == net::error::no_buffer_space ||
         ec == net::error::no_memory;
}

}  // namespace

struct HttpServer::Impl {
  net::io_context io;
  net::executor_work_guard<net::io_context::executor_type> work{io.get_executor()};
  tcp::acceptor acceptor{io};
  net::steady_timer backoff{io};
  std::vector<std::thread> io_threads;
  std::shared_ptr<SessionContext> context = std::make_shared<SessionContext>();
  std::shared_ptr<ConnectionAdmission> admission;
  std::mutex sessions_mutex;
  std::list<std::weak_ptr<Connection>> sessions;  // pruned as they end; closed at shutdown
  std::unique_ptr<net::ssl::context> tls;         // set: every connection speaks TLS
  size_t accepted = 0;
  std::atomic<bool> stopping{false};
  std::chrono::steady_clock::time_point last_exhaustion_log{};

  void accept_next();
  void on_accept(boost::system::error_code ec, tcp::socket socket);
  void track(const std::shared_ptr<Connection>& session);
  std::shared_ptr<Connection> connection(tcp::socket socket, ConnectionAdmission::Ticket ticket);
};

void HttpServer::Impl::accept_next() {
  acceptor.async_accept(net::make_strand(io), [this](boost::system::error_code ec, tcp::socket socket) {
    on_accept(ec, std::move(socket));
  });
}

void HttpServer::Impl::on_accept(boost::system::error_code ec, tcp::socket socket) {
  if (stopping.load() || ec == net::error::operation_aborted) return;
  if (out_of_descriptors(ec)) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_exhaustion_log > std::chrono::seconds(10)) {
      spdlog::warn("accept: {} (open connections: {}); backing off", ec.message(), admission->open());
      last_exhaustion_log = now;
    }
    backoff.expires_after(kAcceptBackoff);
    backoff.async_wait([this](boost::system::error_code wec) {
      if (!wec && !stopping.load()) accept_next();
    });
    return;
  }
  if (!ec) {
    boost::system::error_code ignored;
    fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);  // no child process keeps a client's connection
    socket.set_option(tcp::no_delay(true), ignored);
    socket.set_option(net::socket_base::send_buffer_size(kSendBufferBytes), ignored);
    const auto peer = socket.remote_endpoint(ignored);
    auto evict = std::make_shared<std::function<void()>>();
    auto session = connection(std::move(socket), admission->admit(peer.address().to_string(), evict));
    *evict = [weak = std::weak_ptr<Connection>(session)] {
      if (auto s = weak.lock()) s->close();
    };
    track(session);
    session->start();
  }
  accept_next();
}

std::shared_ptr<Connection> HttpServer::Impl::connection(tcp::socket socket, ConnectionAdmission::Ticket ticket) {
  boost::beast::tcp_stream stream(std::move(socket));
  if (tls) return std::make_shared<HttpSession<TlsStream>>(TlsStream(std::move(stream), *tls), context, std::move(ticket));
  return std::make_shared<HttpSession<PlainStream>>(std::move(stream), context, std::move(ticket));
}

void HttpServer::Impl::track(const std::shared_ptr<Connection>& session) {
  std::lock_guard lock(sessions_mutex);
  if (++accepted % 256 == 0) sessions.remove_if([](const std::weak_ptr<Connection>& s) { return s.expired(); });
  sessions.push_back(session);
}

HttpServer::HttpServer(const HttpLimits& limits, HttpHandler handler, std::vector<std::string> light_paths)
    : impl_(std::make_shared<Impl>()) {
  impl_->context->limits = limits;
  impl_->context->handler = std::move(handler);
  impl_->context->light_paths = std::move(light_paths);
  impl_->admission = std::make_shared<ConnectionAdmission>(
      AdmissionCaps{limits.max_connections, limits.max_connections_per_client, limits.reserved_connections});
}

HttpServer::~HttpServer() {
  stop();
  {
    std::lock_guard lock(impl_->sessions_mutex);
    for (const auto& weak : impl_->sessions) {
      if (auto s = weak.lock()) s->close();
    }
  }
  // Handler threads write through the I/O threads: let them finish first.
  for (int i = 0; i < 300 && impl_->context->handlers_running.load() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (impl_->context->handlers_running.load() > 0) {
    spdlog::warn("http: {} request thread(s) still running at shutdown", impl_->context->handlers_running.load());
    new std::shared_ptr<Impl>(impl_);  // they hold the I/O context: keep it for the rest of the process
    return;
  }
  impl_->work.reset();
  impl_->io.stop();
  for (auto& t : impl_->io_threads) t.join();
}

int HttpServer::open_connections() const { return impl_->admission->open(); }

void HttpServer::use_tls(const std::string& cert_pem, const std::string& key_pem) {
  auto ctx = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
  ctx->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 | net::ssl::context::no_sslv3 |
                   net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  ctx->use_certificate_chain(net::buffer(cert_pem), ec);
  if (!ec) ctx->use_private_key(net::buffer(key_pem), net::ssl::context::pem, ec);
  if (ec) throw Error("HTTP TLS: cannot load the certificate or key: " + ec.message());
  impl_->tls = std::move(ctx);
}

uint16_t HttpServer::start(const std::string& host, uint16_t port) {
  boost::system::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  if (ec) throw Error("HTTP host '" + host + "' is not an IP address");
  const tcp::endpoint endpoint{address, port};
  impl_->acceptor.open(endpoint.protocol(), ec);
  // Worker processes started later must not inherit the listening socket.
  if (!ec && fcntl(impl_->acceptor.native_handle(), F_SETFD, FD_CLOEXEC) != 0) {
    ec = boost::system::error_code(errno, boost::system::system_category());
  }
  if (!ec) impl_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw Error("cannot listen for HTTP on " + host + ":" + std::to_string(port) + ": " + ec.message());
  const uint16_t bound = impl_->acceptor.local_endpoint().port();
  impl_->accept_next();
  for (int i = 0; i < std::max(1, impl_->context->limits.io_threads); ++i) {
    impl_->io_threads.emplace_back([impl = impl_.get()] { impl->io.run(); });
  }
  return bound;
}

void HttpServer::stop() {
  if (impl_->stopping.exchange(true)) return;
  net::post(impl_->io, [impl = impl_.get()] {
    boost::system::error_code ec;
    impl->acceptor.close(ec);
    impl->backoff.cancel();
  });
}

uint64_t raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? (uint64_t(1) << 20) : uint64_t(limit.rlim_cur);
}

}  // namespace tessera
