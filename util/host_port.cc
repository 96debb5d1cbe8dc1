#include "util/host_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kiln::util {
namespace {

bool IsHostChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

absl::Status Invalid(std::string_view address, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid address '", std::string(address), "': ", std::string(why)));
}

} // namespace

absl::StatusOr<HostPort> ParseHostPort(std::string_view address) {
  HostPort result;
  std::string_view port_text;
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close == std::string_view::npos) return Invalid(address, "missing ']' after IPv6 host");
    result.host = std::string(address.substr(1, close - 1));
    if (close + 1 >= address.size() || address[close + 1] != ':') {
      return Invalid(address, "expected HOST:PORT ([IPv6]:PORT)");
    }
    port_text = address.substr(close + 2);
    in6_addr v6{};
    if (inet_pton(AF_INET6, result.host.c_str(), &v6) != 1) {
      return Invalid(address, "not an IPv6 address between the brackets");
    }
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return Invalid(address, "expected HOST:PORT");
    result.host = std::string(address.substr(0, colon));
    port_text = address.substr(colon + 1);
    if (result.host.find(':') != std::string::npos) {
      return Invalid(address, "an IPv6 host must be written in brackets, like [::1]:7070");
    }
    for (char c : result.host) {
      if (!IsHostChar(c)) return Invalid(address, "the host has a character that no name has");
    }
  }
  if (port_text.empty()) return Invalid(address, "missing port");
  for (char c : port_text) {
    if (c < '0' || c > '9') return Invalid(address, "the port is not a number");
  }
  if (port_text.size() > 5) return Invalid(address, "the port is not in 0..65535");
  int port = 0;
  for (char c : port_text) port = port * 10 + (c - '0');
  if (port > 65535) return Invalid(address, "the port is not in 0..65535");
  result.port = port;
  return result;
}

std::string FormatHostPort(std::string_view host, int port) {
  if (host.find(':') != std::string_view::npos) {
    return absl::StrCat("[", std::string(host), "]:", port);
  }
  return absl::StrCat(std::string(host), ":", port);
}

bool IsLoopbackHost(std::string_view host) {
  if (absl::AsciiStrToLower(std::string(host)) == "localhost") return true;
  const std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) return v6.s6_addr[12] == 127;
  }
  return false;
}

} // namespace kiln::util
