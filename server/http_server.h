// A minimal HTTP/1.1 server for the daemon's operational endpoints
// (/metrics, /healthz): GET and HEAD on exact paths, one request per
// connection (every response says Connection: close), no request bodies.
//
// One thread runs a poll() loop over the listening socket and every
// connection, so a slow or stalled client holds only its own connection:
// the request head must arrive within request_timeout and fit in
// max_request_bytes (else 408 / 431, then close), the response must be taken
// within write_timeout, and at most max_connections are open. At the limit a
// new connection displaces the oldest one that has not completed a request
// (one that sent nothing first, then a finished one still draining, then one
// with a partial request, which gets 503), so idle sockets cannot starve
// /healthz probes; only when every slot is writing a response is the new one
// answered 503 and closed. Malformed requests get 400, unknown paths 404, methods
// other than GET and HEAD 405 (with Allow), HTTP versions other than 1.0 and
// 1.1 505. Handlers run on the server thread, one at a time, and must be
// quick; an exception from one is a 500.
//
// Thread-safety: Start, port, address and Stop may be called from any thread.
// Stop wakes the loop at once and returns after the thread has exited and
// every socket is closed; the destructor calls it.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace kiln::server {

class MetricRegistry;

struct HttpRequest {
  std::string method;  // "GET" or "HEAD" (others never reach a handler)
  std::string path;    // "/metrics"
  std::string query;   // after '?', undecoded; empty without one
  std::string version; // "HTTP/1.1"
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  // HOST:PORT (util::ParseHostPort); port 0 picks a free port (see port()).
  // An empty host listens on every IPv4 address.
  std::string listen_address = "127.0.0.1:0";
  // Exact path -> handler, for GET and HEAD.
  std::map<std::string, HttpHandler> routes;
  std::chrono::milliseconds request_timeout{5000};
  std::chrono::milliseconds write_timeout{10000};
  size_t max_request_bytes = 8192;
  int max_connections = 64;
};

class HttpServer {
 public:
  // Binds, listens and starts the server thread. InvalidArgument for a bad
  // address or option; Unavailable (naming the address and the reason) when
  // the address cannot be resolved or bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options);

  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the kernel's choice when port 0 was asked for).
  int port() const { return port_; }
  // HOST:PORT as bound, with the requested host ("127.0.0.1:39123").
  const std::string& address() const { return address_; }

  // Stops accepting, closes every connection and joins the thread.
  // Idempotent.
  void Stop();

 private:
  HttpServer(HttpServerOptions options, int listen_fd, int wake_fd, int port, std::string address);
  void Run();

  const HttpServerOptions options_;
  int listen_fd_;     // closed by Stop(), after the thread has exited
  const int wake_fd_; // eventfd that Stop() signals
  const int port_;
  const std::string address_;
  std::atomic<bool> stopping_{false};
  std::mutex stop_mu_; // serializes Stop()
  std::thread thread_;
};

// The daemon's operational routes: GET /metrics (the registry's exposition,
// Content-Type text/plain; version=0.0.4) and GET /healthz (200 "ok" while
// is_serving() is true, else 503 "not serving"). `registry` must outlive the
// server that uses the routes.
std::map<std::string, HttpHandler> OpsHttpRoutes(const MetricRegistry& registry,
                                                 std::function<bool()> is_serving);

} // namespace kiln::server
