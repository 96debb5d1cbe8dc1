// HOST:PORT network addresses as written on command lines and in config
// files: "127.0.0.1:7070", "localhost:0", "[::1]:9090", ":8080" (any
// address). Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kiln::util {

struct HostPort {
  std::string host; // without brackets; empty means every local address
  int port = 0;     // 0..65535; 0 asks the kernel for a free port
};

// Splits HOST:PORT. An IPv6 host is written in brackets. The port must be a
// decimal number in 0..65535; the host may be a name, an IPv4 or an IPv6
// address (only its characters are checked here, not that it resolves).
// InvalidArgument with the reason otherwise.
absl::StatusOr<HostPort> ParseHostPort(std::string_view address);

// HOST:PORT again, with brackets around an IPv6 host.
std::string FormatHostPort(std::string_view host, int port);

// True for "localhost", 127.0.0.0/8 and ::1: addresses other machines
// cannot reach.
bool IsLoopbackHost(std::string_view host);

} // namespace kiln::util
