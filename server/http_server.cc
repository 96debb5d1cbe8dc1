#include "server/http_server.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <exception>
#include <string_view>
#include <utility>
#include <vector>

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/metrics.h"
#include "util/host_port.h"
#include "util/log.h"

namespace kiln::server {
namespace {

using Clock = std::chrono::steady_clock;

// After the response, the connection's read side is drained (so that unread
// request bytes do not turn the close into a reset that discards the
// response) for at most this long.
constexpr std::chrono::milliseconds kLingerTime{1000};
// Accepting pauses this long when the process is out of file descriptors.
constexpr std::chrono::milliseconds kAcceptBackoff{100};

std::string ErrnoText(int err) {
  char buf[256];
  return std::string(strerror_r(err, buf, sizeof(buf)));
}

std::string_view ReasonPhrase(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 414:
    return "URI Too Long";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  case 505:
    return "HTTP Version Not Supported";
  default:
    return "Unknown";
  }
}

// RFC 9110 tchar.
bool IsTokenChar(char c) {
  if (absl::ascii_isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar);
}

// RFC 9110's IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
std::string HttpDate() {
  const time_t now = time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  const size_t n = strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return std::string(buf, n);
}

// A HEAD response carries the headers GET would, without the body.
std::string Serialize(const HttpResponse& response, bool head_only, bool allow_header) {
  std::string out = absl::StrCat("HTTP/1.1 ", response.status, " ",
                                 std::string(ReasonPhrase(response.status)), "\r\n");
  absl::StrAppend(&out, "Date: ", HttpDate(), "\r\n");
  absl::StrAppend(&out, "Content-Type: ", response.content_type, "\r\n");
  absl::StrAppend(&out, "Content-Length: ", response.body.size(), "\r\n");
  if (allow_header) out += "Allow: GET, HEAD\r\n";
  out += "Cache-Control: no-store\r\nConnection: close\r\n\r\n";
  if (!head_only) out += response.body;
  return out;
}

std::string ErrorResponse(int status, std::string_view message, bool head_only = false,
                          bool allow_header = false) {
  HttpResponse response;
  response.status = status;
  response.body = absl::StrCat(std::string(message), "\n");
  return Serialize(response, head_only, allow_header);
}

// Where the request head ends (the index just past the empty line), or npos.
// Bare LF line ends are accepted, as RFC 9112 allows.
size_t HeadEnd(std::string_view data) {
  for (size_t at = data.find('\n'); at != std::string_view::npos; at = data.find('\n', at + 1)) {
    if (at + 1 < data.size() && data[at + 1] == '\n') return at + 2;
    if (at + 2 < data.size() && data[at + 1] == '\r' && data[at + 2] == '\n') return at + 3;
  }
  return std::string_view::npos;
}

struct Connection {
  enum class Phase { kReading, kWriting, kDraining };
  int fd = -1;
  Phase phase = Phase::kReading;
  std::string in;
  std::string out;
  size_t out_pos = 0;
  Clock::time_point deadline;
};

} // namespace

HttpServer::HttpServer(HttpServerOptions options, int listen_fd, int wake_fd, int port,
                       std::string address)
    : options_(std::move(options)), listen_fd_(listen_fd), wake_fd_(wake_fd), port_(port),
      address_(std::move(address)) {}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options) {
  absl::StatusOr<util::HostPort> parsed = util::ParseHostPort(options.listen_address);
  if (!parsed.ok()) return parsed.status();
  if (options.max_request_bytes < 16 || options.max_connections < 1 ||
      options.request_timeout.count() <= 0 || options.write_timeout.count() <= 0) {
    return absl::InvalidArgumentError("http server: limits and timeouts must be positive");
  }
  const std::string host = parsed->host.empty() ? "0.0.0.0" : parsed->host;
  const std::string port_text = std::to_string(parsed->port);

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* results = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port_text.c_str(), &hints, &results); rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen_address, ": ", gai_strerror(rc)));
  }
  int listen_fd = -1;
  int last_error = 0;
  for (addrinfo* ai = results; ai != nullptr && listen_fd < 0; ai = ai->ai_next) {
    const int fd =
        socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last_error = errno;
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 128) != 0) {
      last_error = errno;
      close(fd);
      continue;
    }
    listen_fd = fd;
  }
  freeaddrinfo(results);
  if (listen_fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen_address, ": ", ErrnoText(last_error)));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  int port = parsed->port;
  if (getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) == 0) {
    if (bound.ss_family == AF_INET) {
      port = ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    } else if (bound.ss_family == AF_INET6) {
      port = ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
    }
  }
  const int wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    const int err = errno;
    close(listen_fd);
    return absl::InternalError(absl::StrCat("http server: eventfd: ", ErrnoText(err)));
  }
  std::string address = util::FormatHostPort(parsed->host, port);
  std::unique_ptr<HttpServer> server(
      new HttpServer(std::move(options), listen_fd, wake_fd, port, std::move(address)));
  server->thread_ = std::thread([s = server.get()] { s->Run(); });
  return server;
}

HttpServer::~HttpServer() {
  Stop();
  close(wake_fd_);
}

void HttpServer::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (thread_.joinable()) {
    stopping_.store(true);
    const uint64_t one = 1;
    while (write(wake_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  listen_fd_ = -1;
}

namespace {

// Parses a complete request head and answers it. `routes` are exact paths.
std::string Answer(std::string_view head, const std::map<std::string, HttpHandler>& routes) {
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < head.size();) {
    size_t end = head.find('\n', start);
    if (end == std::string_view::npos) end = head.size();
    std::string_view line = head.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty()) return ErrorResponse(400, "empty request");

  // request-line = method SP request-target SP HTTP-version
  const std::string_view request_line = lines[0];
  const size_t sp1 = request_line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : request_line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || request_line.find(' ', sp2 + 1) != std::string_view::npos) {
    return ErrorResponse(400, "malformed request line");
  }
  HttpRequest request;
  request.method = std::string(request_line.substr(0, sp1));
  std::string_view target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  request.version = std::string(request_line.substr(sp2 + 1));
  if (!IsToken(request.method)) return ErrorResponse(400, "malformed method");
  const bool head_only = request.method == "HEAD";
  auto fail = [head_only](int status, std::string_view message, bool allow_header = false) {
    return ErrorResponse(status, message, head_only, allow_header);
  };
  const std::string_view version = request.version;
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' ||
      !absl::ascii_isdigit(static_cast<unsigned char>(version[5])) ||
      !absl::ascii_isdigit(static_cast<unsigned char>(version[7]))) {
    return fail(400, "malformed HTTP version");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
  }

  bool has_host = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    if (line.empty()) return fail(400, "malformed header section");
    if (line.front() == ' ' || line.front() == '\t') {
      return fail(400, "obsolete line folding in a header");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return fail(400, "malformed header field");
    }
    if (absl::AsciiStrToLower(std::string(line.substr(0, colon))) == "host") has_host = true;
  }
  if (version == "HTTP/1.1" && !has_host) return fail(400, "missing Host header");

  // origin-form (/path?query) or absolute-form (http://host/path?query).
  if (absl::StartsWithIgnoreCase(std::string(target), "http://") ||
      absl::StartsWithIgnoreCase(std::string(target), "https://")) {
    const size_t authority = target.find("//") + 2;
    const size_t path = target.find('/', authority);
    target = path == std::string_view::npos ? std::string_view("/") : target.substr(path);
  }
  if (target.empty() || target.front() != '/') return fail(400, "malformed request target");
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7F) {
      return fail(400, "malformed request target");
    }
  }
  const size_t question = target.find('?');
  request.path = std::string(target.substr(0, question));
  if (question != std::string_view::npos) request.query = std::string(target.substr(question + 1));

  auto route = routes.find(request.path);
  if (route == routes.end()) return fail(404, "not found");
  if (request.method != "GET" && !head_only) {
    return fail(405, "only GET and HEAD are served", /*allow_header=*/true);
  }
  HttpResponse response;
  try {
    response = route->second(request);
  } catch (const std::exception& e) {
    util::LogError("http handler failed", {{"path", request.path}, {"error", e.what()}});
    return fail(500, "internal error");
  } catch (...) {
    util::LogError("http handler failed", {{"path", request.path}});
    return fail(500, "internal error");
  }
  return Serialize(response, head_only, /*allow_header=*/false);
}

// Writes what it can without blocking. False when the connection is dead.
bool Flush(Connection& c) {
  while (c.out_pos < c.out.size()) {
    const ssize_t n = send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    c.out_pos += static_cast<size_t>(n);
  }
  return true;
}

void StartResponse(Connection& c, std::string response, std::chrono::milliseconds write_timeout) {
  c.out = std::move(response);
  c.out_pos = 0;
  c.phase = Connection::Phase::kWriting;
  c.deadline = Clock::now() + write_timeout;
}

// Reads what a connection in the reading or draining phase has sent.
// False when the peer is gone (EOF or an error).
bool Receive(Connection& c, size_t max_request_bytes) {
  char buf[4096];
  for (;;) {
    size_t room = sizeof(buf);
    if (c.phase == Connection::Phase::kReading) {
      room = std::min(room, max_request_bytes + 1 - c.in.size());
    }
    const ssize_t n = recv(c.fd, buf, room, 0);
    if (n > 0) {
      if (c.phase != Connection::Phase::kReading) continue; // draining: discard
      c.in.append(buf, static_cast<size_t>(n));
      if (c.in.size() > max_request_bytes) return true; // answered with 414/431
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

// Advances one connection after poll() reported `revents` for it. False
// when it is to be closed.
bool Service(Connection& c, short revents, Clock::time_point now,
             const HttpServerOptions& options) {
  bool alive = true;
  if (revents != 0) {
    if (c.phase == Connection::Phase::kWriting) {
      alive = (revents & (POLLERR | POLLNVAL)) == 0 && Flush(c);
    } else {
      alive = Receive(c, options.max_request_bytes);
      if (c.phase == Connection::Phase::kReading) {
        // A complete head is answered even after the client's EOF (it may
        // have shut down only its sending side).
        const size_t end = HeadEnd(c.in);
        if (end != std::string::npos) {
          StartResponse(c, Answer(std::string_view{c.in}.substr(0, end), options.routes),
                        options.write_timeout);
          alive = Flush(c);
        } else if (c.in.size() > options.max_request_bytes) {
          const bool has_line = c.in.find('\n') != std::string::npos;
          StartResponse(c,
                        has_line ? ErrorResponse(431, "request header section too large")
                                 : ErrorResponse(414, "request line too long"),
                        options.write_timeout);
          alive = Flush(c);
        }
      }
    }
  }
  if (!alive) return false;
  if (now >= c.deadline) {
    // A partial request gets 408; an idle connection, a client that does
    // not read its response and a finished one still draining are closed.
    if (c.phase != Connection::Phase::kReading || c.in.empty()) return false;
    StartResponse(c, ErrorResponse(408, "request timeout"), options.write_timeout);
    if (!Flush(c)) return false;
  }
  if (c.phase == Connection::Phase::kWriting && c.out_pos == c.out.size()) {
    // Sent: stop writing, and drain what the client still sends so that
    // closing does not reset the connection before it has read everything.
    shutdown(c.fd, SHUT_WR);
    c.phase = Connection::Phase::kDraining;
    c.deadline = Clock::now() + kLingerTime;
  }
  return true;
}

// At the connection limit, a new connection takes the slot of the oldest one
// that has not completed a request: one that has sent nothing, else one that
// was answered and is only draining (closing it early risks a reset only for
// a client that is slow to read), else one with a partial request (told
// 503). So idle or trickling sockets cannot starve a health probe, which
// sends its whole request at once; only responses being written hold their
// slot. Returns false when every slot is writing.
bool DisplaceOne(std::vector<Connection>& connections) {
  auto rank = [](const Connection& c) {
    if (c.phase == Connection::Phase::kReading && c.in.empty()) return 0;
    if (c.phase == Connection::Phase::kDraining) return 1;
    if (c.phase == Connection::Phase::kReading) return 2;
    return 3;
  };
  auto victim = connections.end();
  for (auto it = connections.begin(); it != connections.end(); ++it) {
    // Earlier entries were accepted earlier: the first of the best rank is
    // the oldest.
    if (rank(*it) < 3 && (victim == connections.end() || rank(*it) < rank(*victim))) victim = it;
  }
  if (victim == connections.end()) return false;
  if (rank(*victim) == 2) {
    const std::string busy = ErrorResponse(503, "too many connections");
    (void)send(victim->fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  close(victim->fd);
  connections.erase(victim);
  return true;
}

} // namespace

void HttpServer::Run() {
  std::vector<Connection> connections;
  Clock::time_point accept_paused_until{};
  std::vector<pollfd> fds;
  while (!stopping_.load()) {
    const Clock::time_point now = Clock::now();
    const bool accepting = now >= accept_paused_until;
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
    Clock::time_point next = accepting ? Clock::time_point::max() : accept_paused_until;
    for (const Connection& c : connections) {
      const short events = c.phase == Connection::Phase::kWriting ? POLLOUT : POLLIN;
      fds.push_back({c.fd, events, 0});
      next = std::min(next, c.deadline);
    }
    int timeout_ms = -1;
    if (next != Clock::time_point::max()) {
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(wait, 0, 60000));
    }
    const int ready = poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) {
      util::LogError("http server: poll failed", {{"error", ErrnoText(errno)}});
      break;
    }
    if (stopping_.load()) break;

    // Existing connections first (their pollfds follow the two fixed ones).
    const Clock::time_point after = Clock::now();
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& c = connections[i];
      if (!Service(c, ready > 0 ? fds[i + 2].revents : 0, after, options_)) {
        close(c.fd);
        c.fd = -1;
      }
    }
    std::erase_if(connections, [](const Connection& c) { return c.fd < 0; });

    if (ready > 0 && (fds[1].revents & POLLIN) != 0) {
      for (;;) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
          if (errno == EINTR || errno == ECONNABORTED) continue;
          if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            util::LogWarning("http server: cannot accept, backing off",
                             {{"error", ErrnoText(errno)}});
            accept_paused_until = Clock::now() + kAcceptBackoff;
          }
          break; // EAGAIN: no more pending connections
        }
        if (static_cast<int>(connections.size()) >= options_.max_connections &&
            !DisplaceOne(connections)) {
          const std::string busy = ErrorResponse(503, "too many connections");
          (void)send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          close(fd);
          continue;
        }
        Connection c;
        c.fd = fd;
        c.deadline = Clock::now() + options_.request_timeout;
        connections.push_back(std::move(c));
      }
    }
  }
  for (Connection& c : connections) close(c.fd);
}

std::map<std::string, HttpHandler> OpsHttpRoutes(const MetricRegistry& registry,
                                                 std::function<bool()> is_serving) {
  std::map<std::string, HttpHandler> routes;
  routes["/metrics"] = [&registry](const HttpRequest&) {
    HttpResponse response;
    response.content_type = std::string(MetricRegistry::kContentType);
    response.body = registry.Expose();
    return response;
  };
  routes["/healthz"] = [serving = std::move(is_serving)](const HttpRequest&) {
    HttpResponse response;
    const bool ok = !serving || serving();
    response.status = ok ? 200 : 503;
    response.body = ok ? "ok\n" : "not serving\n";
    return response;
  };
  return routes;
}

} // namespace kiln::server
