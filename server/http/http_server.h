#pragma once
// The HTTP/1.1 server over Boost.Beast. Connections live on a few I/O
// threads with asynchronous reads and writes, so an idle or slow connection
// costs a socket and a buffer, not a thread; every phase has a deadline
// (idle keep-alive, headers, body, each response write). A request runs its
// handler on a thread of its own, which writes through the I/O threads and
// waits for each write, so a client that stops reading is dropped when the
// write deadline passes and its handler learns of it at the next write.
//
// Admission: a cap on connections, a cap per client address, and a reserve
// beyond the cap that serves only the light paths (/health, /metrics), so
// that filling the cap cannot make an orchestrator believe the server died.
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tessera {

struct HttpLimits {
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 16u << 10;
  int max_headers = 100;
  int max_connections = 1024;
  int max_connections_per_client = 256;
  int reserved_connections = 32;
  std::chrono::milliseconds header_timeout{10'000};  // from the first byte of a request to its last header
  std::chrono::milliseconds body_timeout{60'000};
  std::chrono::milliseconds idle_timeout{30'000};    // keep-alive, waiting for the next request
  std::chrono::milliseconds write_timeout{30'000};   // waiting on the client's reads, over one whole response
  int io_threads = 2;
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
  virtual bool begin_stream(const std::string& content_type,
                            const std::vector<std::pair<std::string, std::string>>& headers = {}) = 0;
  // False when the client is gone (the write failed or missed its deadline).
  virtual bool write_chunk(const std::string& data) = 0;
  virtual void end_stream() = 0;
  // True once the connection is reset or broken; a client that only shut
  // down its sending side is still there to read the answer.
  virtual bool client_gone() = 0;
  // True once client_gone() has seen the peer shut down its sending side
  // (it may still be reading).
  virtual bool peer_done_sending() const = 0;
};

using HttpHandler = std::function<void(HttpExchange&)>;

class HttpServer {
 public:
  // `light_paths` are served on reserved connections too.
  HttpServer(const HttpLimits& limits, HttpHandler handler, std::vector<std::string> light_paths = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Serves HTTPS with this PEM certificate chain and private key; call
  // before start(). Throws tessera::Error when they do not load.
  void use_tls(const std::string& cert_pem, const std::string& key_pem);
  // Binds and starts accepting; returns the bound port (useful with port 0).
  // Throws tessera::Error when the address cannot be bound.
  uint16_t start(const std::string& host, uint16_t port);
  // Stops accepting. Requests in progress finish on their own threads; the
  // destructor closes every connection and waits briefly for them.
  void stop();
  int open_connections() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// Raises the soft open-file limit to the hard one; returns the new soft limit.
uint64_t raise_open_file_limit();

}  // namespace tessera
