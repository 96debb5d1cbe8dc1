#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/host_port.h"

namespace kiln::util {
namespace {

using ::testing::HasSubstr;

TEST(HostPortTest, ParsesTheForms) {
  struct Case {
    std::string address;
    std::string host;
    int port;
  };
  const Case cases[] = {
      {"127.0.0.1:7070", "127.0.0.1", 7070},
      {"localhost:0", "localhost", 0},
      {"[::1]:9090", "::1", 9090},
      {":8080", "", 8080},
      {"0.0.0.0:65535", "0.0.0.0", 65535},
      {"kiln-0.kiln.svc:7070", "kiln-0.kiln.svc", 7070},
      {"[::]:1", "::", 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.address);
    absl::StatusOr<HostPort> parsed = ParseHostPort(c.address);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->host, c.host);
    EXPECT_EQ(parsed->port, c.port);
    EXPECT_EQ(FormatHostPort(parsed->host, parsed->port), c.address);
  }
}

TEST(HostPortTest, RejectsWithAReason) {
  struct Case {
    std::string address;
    std::string reason;
  };
  const Case cases[] = {
      {"", "expected HOST:PORT"},
      {"127.0.0.1", "expected HOST:PORT"},
      {"127.0.0.1:", "missing port"},
      {"127.0.0.1:notaport", "not a number"},
      {"127.0.0.1:-1", "not a number"},
      {"127.0.0.1:65536", "not in 0..65535"},
      {"127.0.0.1:1234567", "not in 0..65535"},
      {"::1:7070", "in brackets"},
      {"[::1]7070", "expected HOST:PORT"},
      {"[::1:7070", "missing ']'"},
      {"[not-v6]:7070", "not an IPv6 address"},
      {"bad host:7070", "character"},
      {"a/b:7070", "character"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.address);
    absl::StatusOr<HostPort> parsed = ParseHostPort(c.address);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.reason));
    EXPECT_THAT(parsed.status().message(), HasSubstr("'" + c.address + "'"));
  }
}

TEST(HostPortTest, KnowsLoopback) {
  for (const char* host :
       {"localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"", "0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "kiln.example.com"}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

} // namespace
} // namespace kiln::util
