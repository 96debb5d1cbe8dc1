#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/http_server.h"
#include "server/metrics.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A raw TCP client, so tests can send anything (half requests, garbage).
class Client {
 public:
  explicit Client(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Client() {
    if (fd_ >= 0) close(fd_);
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  bool Send(std::string_view bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Everything until the server closes (or `timeout`).
  std::string ReadAll(milliseconds timeout = milliseconds(5000)) {
    std::string out;
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      const int left = static_cast<int>(
          std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count());
      if (poll(&p, 1, std::max(left, 1)) <= 0) continue;
      char buf[4096];
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool closed_ = false;
};

std::string Body(const std::string& response) {
  const size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

// The response without its Date header (which changes every second).
std::string WithoutDate(const std::string& response) {
  const size_t at = response.find("\r\nDate: ");
  if (at == std::string::npos) return response;
  return response.substr(0, at) + response.substr(response.find("\r\n", at + 2));
}

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions options = {}) {
    if (options.routes.empty()) {
      options.routes = OpsHttpRoutes(registry_, [this] { return serving_.load(); });
      options.routes["/echo"] = [](const HttpRequest& r) {
        HttpResponse response;
        response.body = r.method + " " + r.path + " ?" + r.query + " " + r.version;
        return response;
      };
      options.routes["/throws"] = [](const HttpRequest&) -> HttpResponse {
        throw std::runtime_error("boom");
      };
    }
    absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  std::string Exchange(std::string_view request) {
    Client client(server_->port());
    EXPECT_TRUE(client.connected());
    EXPECT_TRUE(client.Send(request));
    return client.ReadAll();
  }

  MetricRegistry registry_;
  std::atomic<bool> serving_{true};
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, AnswersEachKindOfRequest) {
  (*registry_.AddCounter("up_total", "Up."))->Get().Increment(3);
  StartServer();
  struct Case {
    std::string name;
    std::string request;
    std::string status_line;
    std::string must_contain;
  };
  const Case cases[] = {
      {"metrics", "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK",
       "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"},
      {"metrics body", "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK",
       "\r\n\r\n# HELP up_total Up.\n# TYPE up_total counter\nup_total 3\n"},
      {"healthz", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK", "\r\n\r\nok\n"},
      {"query string", "GET /echo?a=1&b HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 OK",
       "GET /echo ?a=1&b HTTP/1.1"},
      {"HTTP/1.0 needs no Host", "GET /echo HTTP/1.0\r\n\r\n", "HTTP/1.1 200 OK",
       "GET /echo ? HTTP/1.0"},
      {"absolute form", "GET http://kiln:9090/echo?x HTTP/1.1\r\nHost: kiln\r\n\r\n",
       "HTTP/1.1 200 OK", "GET /echo ?x HTTP/1.1"},
      {"bare LF line ends", "GET /healthz HTTP/1.1\nHost: x\n\n", "HTTP/1.1 200 OK", "ok\n"},
      {"headers are ignored", "GET /healthz HTTP/1.1\r\nHost: x\r\nAccept: */*\r\nX-Y: z\r\n\r\n",
       "HTTP/1.1 200 OK", "Connection: close\r\n"},
      {"unknown path", "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 Not Found", ""},
      {"paths are exact", "GET /metrics/ HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 Not Found",
       ""},
      {"POST", "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc",
       "HTTP/1.1 405 Method Not Allowed", "Allow: GET, HEAD\r\n"},
      {"DELETE", "DELETE /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 Method Not Allowed",
       "Allow: GET, HEAD\r\n"},
      {"missing Host", "GET /healthz HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request", "Host"},
      {"garbage", "\x01\x02\x03 hello\r\n\r\n", "HTTP/1.1 400 Bad Request", ""},
      {"two spaces", "GET  /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 Bad Request", ""},
      {"no version", "GET /healthz\r\n\r\n", "HTTP/1.1 400 Bad Request", ""},
      {"bad version", "GET /healthz HTTX/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 Bad Request", ""},
      {"HTTP/2", "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n",
       "HTTP/1.1 505 HTTP Version Not Supported", ""},
      {"header without colon", "GET /healthz HTTP/1.1\r\nHost: x\r\nbogus\r\n\r\n",
       "HTTP/1.1 400 Bad Request", ""},
      {"space before colon", "GET /healthz HTTP/1.1\r\nHost : x\r\n\r\n",
       "HTTP/1.1 400 Bad Request", ""},
      {"folded header", "GET /healthz HTTP/1.1\r\nHost: x\r\n continued\r\n\r\n",
       "HTTP/1.1 400 Bad Request", ""},
      {"relative target", "GET healthz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 Bad Request",
       ""},
      {"handler throws", "GET /throws HTTP/1.1\r\nHost: x\r\n\r\n",
       "HTTP/1.1 500 Internal Server Error", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string response = Exchange(c.request);
    EXPECT_THAT(response, StartsWith(c.status_line + "\r\n")) << response;
    EXPECT_THAT(response, HasSubstr(c.must_contain)) << response;
    EXPECT_THAT(response, HasSubstr("Connection: close\r\n"));
    EXPECT_THAT(response,
                ::testing::MatchesRegex("(.|\r|\n)*\r\nDate: [A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} "
                                        "[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT\r\n(.|\r|\n)*"));
    // Content-Length is exact.
    const size_t at = response.find("Content-Length: ");
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(std::stoul(response.substr(at + 16)), Body(response).size()) << response;
  }
}

TEST_F(HttpServerTest, HeadHasTheHeadersButNoBody) {
  StartServer();
  const std::string get = Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string head = Exchange("HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(head, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(head, HasSubstr("Content-Length: 3\r\n"));
  EXPECT_EQ(Body(head), "");
  EXPECT_EQ(WithoutDate(head) + "ok\n", WithoutDate(get));
  const std::string missing = Exchange("HEAD /nope HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(missing, StartsWith("HTTP/1.1 404 Not Found\r\n"));
  EXPECT_THAT(missing, HasSubstr("Content-Length: 10\r\n"));
  EXPECT_EQ(Body(missing), "");
}

TEST_F(HttpServerTest, HealthzFollowsTheServingState) {
  StartServer();
  EXPECT_THAT(Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), StartsWith("HTTP/1.1 200"));
  serving_ = false;
  const std::string response = Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(response, StartsWith("HTTP/1.1 503 Service Unavailable\r\n"));
  EXPECT_EQ(Body(response), "not serving\n");
}

TEST_F(HttpServerTest, PortZeroPicksAFreePortAndAnotherServerCannotTakeIt) {
  StartServer();
  EXPECT_GT(server_->port(), 0);
  EXPECT_EQ(server_->address(), "127.0.0.1:" + std::to_string(server_->port()));
  HttpServerOptions same;
  same.listen_address = server_->address();
  absl::StatusOr<std::unique_ptr<HttpServer>> second = HttpServer::Start(same);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("cannot listen on " + server_->address()));
  EXPECT_THAT(second.status().message(), HasSubstr("in use"));
}

TEST(HttpServerStartTest, RefusesBadAddressesAndOptions) {
  struct Case {
    std::string address;
    absl::StatusCode code;
  };
  const Case cases[] = {
      {"127.0.0.1", absl::StatusCode::kInvalidArgument},
      {"127.0.0.1:99999", absl::StatusCode::kInvalidArgument},
      {"no-such-host.invalid:0", absl::StatusCode::kUnavailable},
      {"192.0.2.1:0", absl::StatusCode::kUnavailable}, // not an address of this host
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.address);
    HttpServerOptions options;
    options.listen_address = c.address;
    absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(options);
    ASSERT_FALSE(server.ok());
    EXPECT_EQ(server.status().code(), c.code) << server.status();
  }
  HttpServerOptions zero;
  zero.max_connections = 0;
  EXPECT_EQ(HttpServer::Start(zero).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(HttpServerTest, OversizedRequestsAreRefused) {
  HttpServerOptions options;
  options.max_request_bytes = 256;
  options.routes["/x"] = [](const HttpRequest&) { return HttpResponse{}; };
  StartServer(options);
  const std::string long_line = "GET /" + std::string(1000, 'a') + " HTTP/1.1\r\n\r\n";
  EXPECT_THAT(Exchange(long_line), StartsWith("HTTP/1.1 414 URI Too Long\r\n"));
  std::string many_headers = "GET /x HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 50; ++i) many_headers += "X-Header-" + std::to_string(i) + ": value\r\n";
  many_headers += "\r\n";
  EXPECT_THAT(Exchange(many_headers), StartsWith("HTTP/1.1 431 Request Header Fields Too Large"));
  // Just under the limit is fine.
  std::string fits = "GET /x HTTP/1.1\r\nHost: x\r\nX: " + std::string(200, 'v') + "\r\n\r\n";
  ASSERT_LE(fits.size(), 256u);
  EXPECT_THAT(Exchange(fits), StartsWith("HTTP/1.1 200 OK"));
}

// A client that sends half a request and stalls gets 408 after the timeout,
// one that sends nothing is dropped, and neither delays anyone else.
TEST_F(HttpServerTest, SlowClientsTimeOutWithoutBlockingOthers) {
  HttpServerOptions options;
  options.request_timeout = milliseconds(1000);
  options.routes = OpsHttpRoutes(registry_, nullptr);
  StartServer(options);
  Client stalled(server_->port());
  ASSERT_TRUE(stalled.Send("GET /healthz HTTP/1.1\r\nHo"));
  Client silent(server_->port());
  ASSERT_TRUE(silent.connected());

  const auto start = Clock::now();
  EXPECT_THAT(Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), StartsWith("HTTP/1.1 200"));
  EXPECT_LT(Clock::now() - start, milliseconds(700)); // not held up by the stalled ones

  EXPECT_THAT(stalled.ReadAll(), StartsWith("HTTP/1.1 408 Request Timeout\r\n"));
  EXPECT_TRUE(stalled.closed());
  EXPECT_EQ(silent.ReadAll(), "");
  EXPECT_TRUE(silent.closed());
  EXPECT_GE(Clock::now() - start, milliseconds(800));
}

// A request that arrives byte by byte, within the timeout, is served.
TEST_F(HttpServerTest, ByteByByteRequestIsServed) {
  StartServer();
  Client client(server_->port());
  for (char c : std::string("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")) {
    ASSERT_TRUE(client.Send(std::string(1, c)));
    std::this_thread::sleep_for(milliseconds(2));
  }
  EXPECT_THAT(client.ReadAll(), StartsWith("HTTP/1.1 200 OK"));
}

// At the limit, a new connection displaces the oldest unfinished one: the
// oldest partial request is told 503, the younger one is still answered.
TEST_F(HttpServerTest, ConnectionsPastTheLimitDisplaceTheOldestUnfinished) {
  HttpServerOptions options;
  options.max_connections = 2;
  options.routes = OpsHttpRoutes(registry_, nullptr);
  StartServer(options);
  Client a(server_->port());
  ASSERT_TRUE(a.Send("GET"));
  std::this_thread::sleep_for(milliseconds(100)); // a is accepted first
  Client b(server_->port());
  ASSERT_TRUE(b.Send("GET"));
  std::this_thread::sleep_for(milliseconds(300)); // both accepted
  EXPECT_THAT(Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), StartsWith("HTTP/1.1 200 OK"));
  EXPECT_THAT(a.ReadAll(), StartsWith("HTTP/1.1 503 Service Unavailable"));
  ASSERT_TRUE(b.Send(" /healthz HTTP/1.0\r\n\r\n"));
  EXPECT_THAT(b.ReadAll(), StartsWith("HTTP/1.1 200 OK"));
}

// A connection that has sent nothing goes before an older one that is
// mid-request.
TEST_F(HttpServerTest, SilentConnectionsAreDisplacedFirst) {
  HttpServerOptions options;
  options.max_connections = 2;
  options.routes = OpsHttpRoutes(registry_, nullptr);
  StartServer(options);
  Client partial(server_->port());
  ASSERT_TRUE(partial.Send("GET"));
  std::this_thread::sleep_for(milliseconds(100)); // accepted first
  Client silent(server_->port());
  ASSERT_TRUE(silent.connected());
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_THAT(Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), StartsWith("HTTP/1.1 200 OK"));
  EXPECT_EQ(silent.ReadAll(milliseconds(2000)), ""); // closed without a word
  EXPECT_TRUE(silent.closed());
  ASSERT_TRUE(partial.Send(" /healthz HTTP/1.0\r\n\r\n"));
  EXPECT_THAT(partial.ReadAll(), StartsWith("HTTP/1.1 200 OK"));
}

// Issue 27, item 6: 64 idle sockets (the default limit) made /healthz answer
// 503 "too many connections" until they timed out. Idle sockets, and more of
// them than the limit, must not starve a probe.
TEST_F(HttpServerTest, IdleSocketsDoNotStarveHealthProbes) {
  StartServer(); // default limits: 64 connections, 5 s request timeout
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 150; ++i) {
    idle.push_back(std::make_unique<Client>(server_->port()));
    ASSERT_TRUE(idle.back()->connected());
  }
  std::this_thread::sleep_for(milliseconds(300)); // all accepted (or displaced)
  for (int probe = 0; probe < 3; ++probe) {
    const auto start = Clock::now();
    EXPECT_THAT(Exchange("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"),
                StartsWith("HTTP/1.1 200 OK"));
    EXPECT_LT(Clock::now() - start, milliseconds(1000));
  }
}

// Connections whose responses are being written keep their slots: with every
// slot writing to a client that does not read, a new one is turned away.
TEST_F(HttpServerTest, ConnectionsWritingResponsesAreNotDisplaced) {
  const std::string big(4 << 20, 'z');
  HttpServerOptions options;
  options.max_connections = 1;
  options.routes["/big"] = [&big](const HttpRequest&) {
    HttpResponse response;
    response.body = big;
    return response;
  };
  StartServer(options);
  Client reader(server_->port());
  ASSERT_TRUE(reader.Send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::this_thread::sleep_for(milliseconds(300)); // its 4 MiB response is stuck
  Client late(server_->port());
  EXPECT_THAT(late.ReadAll(milliseconds(2000)), StartsWith("HTTP/1.1 503 Service Unavailable"));
  EXPECT_GT(reader.ReadAll().size(), size_t{4} << 20);
}

TEST_F(HttpServerTest, ManyConcurrentScrapes) {
  (*registry_.AddGauge("g", "x"))->Get().Set(1);
  StartServer();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        Client client(server_->port());
        client.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        if (Body(client.ReadAll()) == "# HELP g x\n# TYPE g gauge\ng 1\n") ++ok;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok, 200);
}

// A large response reaches a client that reads slowly.
TEST_F(HttpServerTest, LargeResponseToASlowReader) {
  const std::string big(4 << 20, 'z');
  HttpServerOptions options;
  options.routes["/big"] = [&big](const HttpRequest&) {
    HttpResponse r;
    r.body = big;
    return r;
  };
  StartServer(options);
  Client client(server_->port());
  ASSERT_TRUE(client.Send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::this_thread::sleep_for(milliseconds(300)); // let the socket buffers fill
  EXPECT_EQ(Body(client.ReadAll(milliseconds(10000))), big);
}

TEST_F(HttpServerTest, StopIsPromptWithClientsConnected) {
  StartServer();
  const int port = server_->port();
  Client idle(port);
  Client half(port);
  ASSERT_TRUE(half.Send("GET /healthz HTTP/1.1\r\n"));
  std::this_thread::sleep_for(milliseconds(50));
  const auto start = Clock::now();
  server_->Stop();
  EXPECT_LT(Clock::now() - start, milliseconds(500));
  // Every socket is closed: the clients see EOF, new connections fail.
  EXPECT_EQ(idle.ReadAll(milliseconds(1000)), "");
  EXPECT_TRUE(idle.closed());
  Client late(port);
  EXPECT_FALSE(late.connected());
  server_->Stop(); // idempotent
  server_.reset();
}

TEST_F(HttpServerTest, StopFromManyThreadsAtOnce) {
  StartServer();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([this] { server_->Stop(); });
  for (std::thread& t : threads) t.join();
}

} // namespace
} // namespace kiln::server
