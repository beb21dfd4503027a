#pragma once
// A small HTTP/1.1 server over Boost.Beast: one thread per connection
// (requests on a connection are sequential, and a streaming response holds
// its connection anyway), keep-alive, limits on header size, header count
// and body size, a read timeout, and a cap on concurrent connections.
#include <boost/beast/http.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace tessera {

struct HttpLimits {
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 16u << 10;
  int max_headers = 100;
  int max_connections = 1024;
  int read_timeout_s = 60;
};

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;

// The response side of one request: either one whole response, or a
// chunked stream (server-sent events) written piece by piece.
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  virtual const HttpRequest& request() const = 0;
  virtual void respond(int status, const std::string& content_type, std::string body,
                       const std::vector<std::pair<std::string, std::string>>& headers = {}) = 0;
  // Sends the status and headers of a chunked response; false if the client is gone.
  virtual bool begin_stream(const std::string& content_type) = 0;
  // False when the client is gone (the write failed).
  virtual bool write_chunk(const std::string& data) = 0;
  virtual void end_stream() = 0;
  // True when the peer has closed its side; cheap enough to call per token.
  virtual bool client_gone() = 0;
};

using HttpHandler = std::function<void(HttpExchange&)>;

class HttpServer {
 public:
  HttpServer(const HttpLimits& limits, HttpHandler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting; returns the bound port (useful with port 0).
  // Throws tessera::Error when the address cannot be bound.
  uint16_t start(const std::string& host, uint16_t port);
  // Stops accepting. Connections in progress finish on their own threads;
  // the destructor closes any still open and waits briefly for them.
  void stop();
  int active_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
