#pragma once
// One HTTP connection: an asynchronous read loop on its strand (wait for a
// request under the idle deadline, its headers under the header deadline,
// its body under the body deadline), then the handler on a thread of its
// own, then the next request while keep-alive holds. The same code serves
// plain TCP and TLS (Beast's ssl_stream over the TCP stream).
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <atomic>
#include <memory>
#include <optional>

#include "server/http/connection_admission.h"
#include "server/http/http_server.h"

namespace tessera {

// What every connection of one server shares.
struct SessionContext {
  HttpLimits limits;
  HttpHandler handler;
  std::vector<std::string> light_paths;
  std::atomic<int> handlers_running{0};
  bool is_light(const HttpRequest& req) const;
};

// What the server needs of a connection of either kind.
class Connection {
 public:
  virtual ~Connection() = default;
  virtual void start() = 0;
  // Closes the connection from any thread (server shutdown, eviction).
  virtual void close() = 0;
};

using PlainStream = boost::beast::tcp_stream;
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

template <class Stream>
class HttpSession : public Connection, public std::enable_shared_from_this<HttpSession<Stream>> {
 public:
  HttpSession(Stream stream, std::shared_ptr<SessionContext> context, ConnectionAdmission::Ticket ticket);
  void start() override;
  void close() override;

 private:
  template <class>
  friend class SessionExchange;
  using Parser = boost::beast::http::request_parser<boost::beast::http::string_body>;

  boost::beast::tcp_stream& tcp() { return boost::beast::get_lowest_layer(stream_); }
  void wait_for_request();
  void read_header();
  void on_header(boost::beast::error_code ec);
  void read_body();
  void on_request(boost::beast::error_code ec);
  void run_handler();
  void after_handler(bool keep_alive);
  // Sends a short error response, then drains what the client still sends
  // for a moment so that it reads the response rather than a reset.
  void refuse(boost::beast::http::status status, const std::string& message, bool drain);
  void drain_then_close();
  // Ends the connection after a failed read, with the error response the
  // failure calls for (413, 431, 400) or none; false when there was none.
  bool read_failed(boost::beast::error_code ec);
  // A read deadline; connections on the reserve get at most a second.
  std::chrono::milliseconds read_deadline(std::chrono::milliseconds full) const;

  Stream stream_;
  std::shared_ptr<SessionContext> context_;
  ConnectionAdmission::Ticket ticket_;
  boost::beast::flat_buffer buffer_;
  std::optional<Parser> parser_;
  size_t drained_ = 0;
};

extern template class HttpSession<PlainStream>;
extern template class HttpSession<TlsStream>;

}  // namespace tessera
