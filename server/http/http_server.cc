#include "server/http/http_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <spdlog/spdlog.h>

#include "engine/error.h"

namespace tessera {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

class Exchange : public HttpExchange {
 public:
  Exchange(tcp::socket& socket, const HttpRequest& request) : socket_(socket), request_(request) {}

  const HttpRequest& request() const override { return request_; }
  bool responded() const { return responded_; }
  bool keep_alive() const { return keep_alive_; }

  void respond(int status, const std::string& content_type, std::string body,
               const std::vector<std::pair<std::string, std::string>>& headers) override {
    http::response<http::string_body> res{http::int_to_status(unsigned(status)), request_.version()};
    res.set(http::field::server, "tessera");
    res.set(http::field::content_type, content_type);
    for (const auto& [k, v] : headers) res.set(k, v);
    res.keep_alive(request_.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    beast::error_code ec;
    http::write(socket_, res, ec);
    responded_ = true;
    keep_alive_ = !ec && res.keep_alive();
  }

  bool begin_stream(const std::string& content_type) override {
    http::response<http::empty_body> res{http::status::ok, request_.version()};
    res.set(http::field::server, "tessera");
    res.set(http::field::content_type, content_type);
    res.set(http::field::cache_control, "no-cache");
    res.keep_alive(request_.keep_alive());
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    beast::error_code ec;
    http::write_header(socket_, sr, ec);
    responded_ = true;
    streaming_ok_ = !ec;
    keep_alive_ = streaming_ok_ && res.keep_alive();
    return streaming_ok_;
  }

  bool write_chunk(const std::string& data) override {
    if (!streaming_ok_) return false;
    beast::error_code ec;
    net::write(socket_, http::make_chunk(net::buffer(data)), ec);
    if (ec) streaming_ok_ = keep_alive_ = false;
    return streaming_ok_;
  }

  void end_stream() override {
    if (!streaming_ok_) return;
    beast::error_code ec;
    net::write(socket_, http::make_chunk_last(), ec);
    if (ec) keep_alive_ = false;
  }

  bool client_gone() override {
    pollfd p{socket_.native_handle(), POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
    // Readable: either pipelined bytes (client still there) or EOF.
    char byte;
    return ::recv(socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }

 private:
  tcp::socket& socket_;
  const HttpRequest& request_;
  bool responded_ = false;
  bool keep_alive_ = false;
  bool streaming_ok_ = false;
};

void send_plain_error(tcp::socket& socket, http::status status, const std::string& message) {
  http::response<http::string_body> res{status, 11};
  res.set(http::field::server, "tessera");
  res.set(http::field::content_type, "application/json");
  res.keep_alive(false);
  res.body() = R"({"error":{"message":")" + message + R"(","type":"invalid_request_error","param":null,"code":null}})";
  res.prepare_payload();
  beast::error_code ec;
  http::write(socket, res, ec);
}

// After an early error response, reads (and drops) what the client is still
// sending for a moment, so that it sees the response instead of a reset.
void linger_close(tcp::socket& socket) {
  beast::error_code ec;
  socket.shutdown(tcp::socket::shutdown_send, ec);
  timeval tv{1, 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char sink[65536];
  for (size_t total = 0; total < (64u << 20);) {
    const ssize_t n = ::recv(socket.native_handle(), sink, sizeof sink, 0);
    if (n <= 0) break;
    total += size_t(n);
  }
}

}  // namespace

struct HttpServer::Impl {
  HttpLimits limits;
  HttpHandler handler;
  net::io_context io;
  tcp::acceptor acceptor{io};
  std::thread accept_thread;
  std::atomic<bool> stopping{false};
  std::mutex sockets_mutex;
  std::set<int> open_sockets;  // connection file descriptors, closed at destruction
  std::atomic<int> active{0};
};

int HttpServer::active_connections() const { return impl_ ? impl_->active.load() : 0; }

HttpServer::HttpServer(const HttpLimits& limits, HttpHandler handler) : impl_(std::make_unique<Impl>()) {
  impl_->limits = limits;
  impl_->handler = std::move(handler);
}

HttpServer::~HttpServer() {
  stop();
  {
    std::lock_guard lock(impl_->sockets_mutex);
    for (int fd : impl_->open_sockets) ::shutdown(fd, SHUT_RDWR);
  }
  for (int i = 0; i < 200 && impl_->active.load() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // Connection threads still running hold references into impl_; keep it.
  if (impl_->active.load() > 0) impl_.release();
}

namespace {

void serve_connection(tcp::socket& socket, const HttpLimits& limits, const HttpHandler& handler) {
  timeval tv{limits.read_timeout_s, 0};
  ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  beast::flat_buffer buffer;
  while (true) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(uint32_t(limits.max_header_bytes));
    parser.body_limit(limits.max_body_bytes);
    beast::error_code ec;
    http::read_header(socket, buffer, parser, ec);
    if (!ec && boost::beast::iequals(parser.get()[http::field::expect], "100-continue")) {
      // Clients such as curl wait for this before sending a large body.
      net::write(socket, net::buffer(std::string_view("HTTP/1.1 100 Continue\r\n\r\n")), ec);
    }
    if (!ec && !parser.is_done()) http::read(socket, buffer, parser, ec);
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset) return;
    if (ec == http::error::body_limit) {
      send_plain_error(socket, http::status::payload_too_large, "request body too large");
      return linger_close(socket);
    }
    if (ec == http::error::header_limit) {
      send_plain_error(socket, http::status::request_header_fields_too_large, "request headers too large");
      return linger_close(socket);
    }
    if (ec) {
      if (ec != net::error::would_block && ec != net::error::timed_out) {
        send_plain_error(socket, http::status::bad_request, "malformed HTTP request");
      }
      return;
    }
    const HttpRequest& req = parser.get();
    if (std::distance(req.begin(), req.end()) > limits.max_headers) {
      return send_plain_error(socket, http::status::request_header_fields_too_large, "too many request headers");
    }
    Exchange exchange(socket, req);
    try {
      handler(exchange);
    } catch (const std::exception& e) {
      spdlog::error("http handler failed: {}", e.what());
      if (!exchange.responded()) {
        exchange.respond(500, "application/json",
                         R"({"error":{"message":"internal error","type":"server_error","param":null,"code":null}})", {});
      }
    }
    if (!exchange.responded() || !exchange.keep_alive()) return;
  }
}

}  // namespace

uint16_t HttpServer::start(const std::string& host, uint16_t port) {
  beast::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  if (ec) throw Error("HTTP host '" + host + "' is not an IP address");
  const tcp::endpoint endpoint{address, port};
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw Error("cannot listen for HTTP on " + host + ":" + std::to_string(port) + ": " + ec.message());
  const uint16_t bound = impl_->acceptor.local_endpoint().port();
  impl_->accept_thread = std::thread([this] {
    while (!impl_->stopping.load()) {
      beast::error_code aec;
      tcp::socket socket{impl_->io};
      impl_->acceptor.accept(socket, aec);
      if (aec) {
        if (impl_->stopping.load()) return;
        continue;
      }
      if (impl_->active.load() >= impl_->limits.max_connections) {
        send_plain_error(socket, http::status::service_unavailable, "too many connections");
        continue;
      }
      ++impl_->active;
      const int fd = socket.native_handle();
      {
        std::lock_guard lock(impl_->sockets_mutex);
        impl_->open_sockets.insert(fd);
      }
      std::thread([fd, impl = impl_.get(), s = std::move(socket)]() mutable {
        serve_connection(s, impl->limits, impl->handler);
        {
          std::lock_guard lock(impl->sockets_mutex);
          impl->open_sockets.erase(fd);
        }
        beast::error_code ignored;
        s.close(ignored);
        --impl->active;
      }).detach();
    }
  });
  return bound;
}

void HttpServer::stop() {
  if (!impl_ || impl_->stopping.exchange(true)) return;
  beast::error_code ec;
  ::shutdown(impl_->acceptor.native_handle(), SHUT_RDWR);
  impl_->acceptor.close(ec);
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
}

}  // namespace tessera
