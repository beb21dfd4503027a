#pragma once
// HttpSession's member templates, compiled once per stream type: plain TCP
// in http_session.cc, TLS in http_session_tls.cc (each the size of a
// Beast instantiation, so the two build side by side).
#include "server/http/http_session.h"

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <future>
#include <spdlog/spdlog.h>
#include <thread>

#include "server/http/request_thread.h"

namespace tessera {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace session_detail {

constexpr size_t kFirstReadBytes = 4096;
constexpr size_t kMaxDrainBytes = 64u << 20;
constexpr auto kRefusalWriteTimeout = std::chrono::seconds(2);
constexpr auto kDrainTimeout = std::chrono::seconds(1);
// A connection on the reserve must send its (light) request at once.
constexpr auto kReservedDeadline = std::chrono::milliseconds(1000);

inline std::string error_body(const std::string& message, const char* type) {
  return R"({"error":{"message":")" + message + R"(","type":")" + type + R"(","param":null,"code":null}})";
}

inline bool quiet_close_error(beast::error_code ec) {
  return ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
         ec == net::error::operation_aborted || ec == net::error::bad_descriptor || ec == net::error::broken_pipe ||
         ec == net::error::not_connected;
}

}  // namespace session_detail

using namespace session_detail;

// The handler's side of a request. Every write is started on the session's
// strand under the write deadline, and the handler thread waits for it.
template <class Stream>
class SessionExchange : public HttpExchange {
 public:
  SessionExchange(std::shared_ptr<HttpSession<Stream>> session, const HttpRequest& request)
      : session_(std::move(session)), request_(request) {}

  const HttpRequest& request() const override { return request_; }
  bool responded() const { return responded_; }
  bool keep_alive() const { return keep_alive_ && !broken_; }

  void respond(int status, const std::string& content_type, std::string body,
               const std::vector<std::pair<std::string, std::string>>& headers) override {
    http::response<http::string_body> res{http::int_to_status(unsigned(status)), request_.version()};
    res.set(http::field::server, "tessera");
    res.set(http::field::content_type, content_type);
    for (const auto& [k, v] : headers) res.set(k, v);
    res.keep_alive(request_.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    responded_ = true;
    keep_alive_ = res.keep_alive();
    if (request_.method() == http::verb::head) {
      // The GET answer's headers, Content-Length included, and no body (RFC 9110 9.3.2).
      http::response_serializer<http::string_body> serializer{res};
      write([&](auto& stream, auto done) { http::async_write_header(stream, serializer, std::move(done)); });
      return;
    }
    write([&](auto& stream, auto done) { http::async_write(stream, res, std::move(done)); });
  }

  bool begin_stream(const std::string& content_type,
                    const std::vector<std::pair<std::string, std::string>>& headers = {}) override {
    http::response<http::empty_body> res{http::status::ok, request_.version()};
    res.set(http::field::server, "tessera");
    res.set(http::field::content_type, content_type);
    for (const auto& [k, v] : headers) res.set(k, v);
    res.set(http::field::cache_control, "no-cache");
    res.keep_alive(request_.keep_alive());
    res.chunked(true);
    http::response_serializer<http::empty_body> serializer{res};
    responded_ = true;
    keep_alive_ = res.keep_alive();
    return write([&](auto& stream, auto done) { http::async_write_header(stream, serializer, std::move(done)); });
  }

  bool write_chunk(const std::string& data) override {
    if (broken_) return false;
    return write([&](auto& stream, auto done) { net::async_write(stream, http::make_chunk(net::buffer(data)), std::move(done)); });
  }

  void end_stream() override {
    if (broken_) return;
    write([&](auto& stream, auto done) { net::async_write(stream, http::make_chunk_last(), std::move(done)); });
  }

  bool client_gone() override {
    if (broken_) return true;
    // A reset or broken connection; a peer that only shut down its sending
    // side (POLLRDHUP alone) still reads the answer.
    pollfd p{session_->tcp().socket().native_handle(), POLLIN | POLLRDHUP, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLNVAL)) broken_ = true;
    if (p.revents & POLLRDHUP) done_sending_ = true;
    return broken_;
  }

  bool peer_done_sending() const override { return done_sending_; }

 private:
  // Runs `start(stream, done)` on the strand and waits for `done`; the
  // objects the operation reads live on this thread's stack until then.
  // The write deadline is a budget for the whole response, not for each
  // write: a client that reads just fast enough to finish every write in
  // time would otherwise hold the connection (and the handler, and its
  // buffered events) for a deadline per event. A client that keeps up is
  // never blocked, so it never spends any of it.
  template <typename Start>
  bool write(Start&& start) {
    if (broken_) return false;
    HttpSession<Stream>& s = *session_;
    const auto budget = std::chrono::duration_cast<std::chrono::steady_clock::duration>(s.context_->limits.write_timeout);
    if (blocked_ >= budget) {
      broken_ = true;
      return false;
    }
    std::promise<beast::error_code> finished;
    const auto begun = std::chrono::steady_clock::now();
    net::post(s.stream_.get_executor(), [&] {
      s.tcp().expires_after(budget - blocked_);
      start(s.stream_, [&](beast::error_code ec, size_t) { finished.set_value(ec); });
    });
    const beast::error_code ec = finished.get_future().get();
    blocked_ += std::chrono::steady_clock::now() - begun;
    if (ec) broken_ = true;
    return !broken_;
  }

  std::shared_ptr<HttpSession<Stream>> session_;
  const HttpRequest& request_;
  bool responded_ = false;
  bool keep_alive_ = false;
  bool broken_ = false;
  bool done_sending_ = false;
  std::chrono::steady_clock::duration blocked_{0};  // spent waiting on the client's reads so far
};

template <class Stream>
HttpSession<Stream>::HttpSession(Stream stream, std::shared_ptr<SessionContext> context, ConnectionAdmission::Ticket ticket)
    : stream_(std::move(stream)), context_(std::move(context)), ticket_(std::move(ticket)) {}

template <class Stream>
void HttpSession<Stream>::start() {
  net::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
    if (self->ticket_.admission() == AdmissionClass::kRefused) {
      return self->refuse(http::status::service_unavailable, "too many connections", false);
    }
    if constexpr (std::is_same_v<Stream, TlsStream>) {
      self->tcp().expires_after(self->context_->limits.header_timeout);
      self->stream_.async_handshake(boost::asio::ssl::stream_base::server, [self](beast::error_code ec) {
        if (ec) return self->tcp().close();
        self->wait_for_request();
      });
    } else {
      self->wait_for_request();
    }
  });
}

template <class Stream>
void HttpSession<Stream>::close() {
  net::post(stream_.get_executor(), [self = this->shared_from_this()] {
    beast::error_code ec;
    self->tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
    self->tcp().close();
  });
}

template <class Stream>
bool HttpSession<Stream>::read_failed(beast::error_code ec) {
  if (!ec) return false;
  if (ec == http::error::header_limit) {
    refuse(http::status::request_header_fields_too_large, "request headers too large", true);
  } else if (ec == http::error::body_limit) {
    refuse(http::status::payload_too_large, "request body too large", true);
  } else if (!quiet_close_error(ec) && ec != beast::error::timeout) {
    refuse(http::status::bad_request, "malformed HTTP request", false);
  } else {
    // A missed deadline has already closed the socket (tcp_stream does), so
    // there is no one left to tell; the peer leaving ends the connection too.
    tcp().close();
  }
  return true;
}

template <class Stream>
std::chrono::milliseconds HttpSession<Stream>::read_deadline(std::chrono::milliseconds full) const {
  return ticket_.admission() == AdmissionClass::kFull ? full : std::min(full, kReservedDeadline);
}

template <class Stream>
void HttpSession<Stream>::wait_for_request() {
  parser_.emplace();
  parser_->header_limit(uint32_t(std::min<size_t>(context_->limits.max_header_bytes, UINT32_MAX)));
  parser_->body_limit(context_->limits.max_body_bytes);
  if (buffer_.size() > 0) return read_header();  // the next request is already here
  tcp().expires_after(read_deadline(context_->limits.idle_timeout));
  stream_.async_read_some(buffer_.prepare(kFirstReadBytes), [self = this->shared_from_this()](beast::error_code ec, size_t n) {
    self->buffer_.commit(n);
    if (n == 0 && self->read_failed(ec ? ec : net::error::eof)) return;
    self->read_header();
  });
}

template <class Stream>
void HttpSession<Stream>::read_header() {
  tcp().expires_after(read_deadline(context_->limits.header_timeout));
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = this->shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
}

template <class Stream>
void HttpSession<Stream>::on_header(beast::error_code ec) {
  if (read_failed(ec)) return;
  if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
    // Clients such as curl wait for this before sending a large body.
    static const std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    tcp().expires_after(context_->limits.write_timeout);
    return net::async_write(stream_, net::buffer(kContinue), [self = this->shared_from_this()](beast::error_code wec, size_t) {
      if (wec) return self->tcp().close();
      self->read_body();
    });
  }
  read_body();
}

template <class Stream>
void HttpSession<Stream>::read_body() {
  if (parser_->is_done()) return on_request({});
  tcp().expires_after(context_->limits.body_timeout);
  http::async_read(stream_, buffer_, *parser_, [self = this->shared_from_this()](beast::error_code ec, size_t) { self->on_request(ec); });
}

template <class Stream>
void HttpSession<Stream>::on_request(beast::error_code ec) {
  if (read_failed(ec)) return;
  const HttpRequest& req = parser_->get();
  if (std::distance(req.begin(), req.end()) > context_->limits.max_headers) {
    return refuse(http::status::request_header_fields_too_large, "too many request headers", false);
  }
  if (ticket_.admission() != AdmissionClass::kFull && !context_->is_light(req)) {
    return refuse(http::status::service_unavailable, "too many connections", false);
  }
  ticket_.mark_busy();
  tcp().expires_never();
  run_handler();
}

template <class Stream>
void HttpSession<Stream>::run_handler() {
  ++context_->handlers_running;
  try {
    start_request_thread([self = this->shared_from_this()] {
      SessionExchange<Stream> exchange(self, self->parser_->get());
      try {
        self->context_->handler(exchange);
      } catch (const std::exception& e) {
        spdlog::error("http handler failed: {}", e.what());
      }
      if (!exchange.responded()) {
        exchange.respond(500, "application/json", error_body("internal error", "server_error"), {});
      }
      // A reserved connection serves one request, then frees its place.
      const bool keep_alive = exchange.keep_alive() && self->ticket_.admission() == AdmissionClass::kFull;
      net::post(self->stream_.get_executor(), [self, keep_alive] { self->after_handler(keep_alive); });
      --self->context_->handlers_running;
    });
  } catch (const std::system_error& e) {
    --context_->handlers_running;
    spdlog::warn("cannot start a request thread: {}", e.what());
    refuse(http::status::service_unavailable, "the server is out of threads", false);
  }
}

template <class Stream>
void HttpSession<Stream>::after_handler(bool keep_alive) {
  if (keep_alive && tcp().socket().is_open()) return wait_for_request();
  beast::error_code ec;
  tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
  tcp().close();
}

template <class Stream>
void HttpSession<Stream>::refuse(http::status status, const std::string& message, bool drain) {
  auto res = std::make_shared<http::response<http::string_body>>(status, 11);
  res->set(http::field::server, "tessera");
  res->set(http::field::content_type, "application/json");
  if (status == http::status::service_unavailable) res->set(http::field::retry_after, "1");
  res->keep_alive(false);
  res->body() = error_body(message, status == http::status::service_unavailable ? "server_error" : "invalid_request_error");
  res->prepare_payload();
  tcp().expires_after(std::min<std::chrono::milliseconds>(context_->limits.write_timeout, kRefusalWriteTimeout));
  http::async_write(stream_, *res, [self = this->shared_from_this(), res, drain](beast::error_code ec, size_t) {
    if (!ec && drain) return self->drain_then_close();
    self->tcp().close();
  });
}

template <class Stream>
void HttpSession<Stream>::drain_then_close() {
  if (drained_ == 0) {
    beast::error_code ec;
    tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
    tcp().expires_after(kDrainTimeout);
  }
  buffer_.consume(buffer_.size());
  stream_.async_read_some(buffer_.prepare(65536), [self = this->shared_from_this()](beast::error_code ec, size_t n) {
    self->drained_ += n;
    if (ec || n == 0 || self->drained_ >= kMaxDrainBytes) return self->tcp().close();
    self->buffer_.consume(self->buffer_.size());
    self->drain_then_close();
  });
}

}  // namespace tessera
