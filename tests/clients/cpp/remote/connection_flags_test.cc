// The connection flags of the kiln daemon commands
// (clients/cpp/remote/connection_flags.h): the server address checked before
// any call, and the hint for a daemon that does not answer.
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "clients/cpp/remote/connection_flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::cli {
namespace {

using ::testing::HasSubstr;

TEST(ValidateServerAddressTest, AcceptsWhatTheClientCanDial) {
  for (const char* ok :
       {"127.0.0.1:7070", "localhost:7070", "kiln.internal:1", "[::1]:9090", "[2001:db8::1]:65535",
        "unix:/run/kilnd.sock", "unix:///run/kilnd.sock", "unix:relative.sock"}) {
    SCOPED_TRACE(ok);
    EXPECT_TRUE(ValidateServerAddress(ok).ok()) << ValidateServerAddress(ok);
  }
}

TEST(ValidateServerAddressTest, SaysWhatIsWrongAndWhatIsExpected) {
  struct Case {
    const char* address;
    const char* why;
  };
  for (const Case& c : std::vector<Case>{
           {"localhost", "'localhost' has no port (kilnd listens on 7070 unless told otherwise: "
                         "localhost:7070)"},
           {"http://host:7070", "has a URL scheme ('http://'); kiln speaks gRPC to the address "
                                "itself, e.g. --server host:7070"},
           {"grpc://host:7070/", "has a URL scheme ('grpc://')"},
           {"https://kiln.example.com", "e.g. --server kiln.example.com:PORT"},
           {":7070", "has no host"},
           {"localhost:0", "has port 0"},
           {"localhost:65536", "the port is not in 0..65535"},
           {"localhost:http", "the port is not a number"},
           {"localhost:", "missing port"},
           {"::1:7070", "an IPv6 host must be written in brackets"},
           {"unix:", "names no socket path"},
           {"", "the server address is empty"}}) {
    SCOPED_TRACE(c.address);
    absl::Status s = ValidateServerAddress(c.address);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.why));
    // Every message ends with the forms that work.
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("expected HOST:PORT (e.g. 127.0.0.1:7070), [IPv6]:PORT or unix:PATH"));
  }
}

TEST(ConnectTest, ABadServerIsAUsageErrorBeforeAnyCall) {
  std::ostringstream out, err;
  CommandIo io{out, err};
  std::optional<Connection> c =
      ParseConnection({"--server", "localhost", "gemm.py"}, io, "compile");
  ASSERT_TRUE(c.has_value()) << err.str();
  EXPECT_TRUE(c->server_flag);
  EXPECT_EQ(Connect(*c, io, "compile"), nullptr);
  EXPECT_THAT(err.str(),
              HasSubstr("kiln compile: --server: server address 'localhost' has no port"));
}

TEST(ConnectTest, ABadKilnServerVariableIsNamed) {
  ASSERT_EQ(setenv("KILN_SERVER", "http://kiln:7070", 1), 0);
  std::ostringstream out, err;
  CommandIo io{out, err};
  std::optional<Connection> c = ParseConnection({}, io, "jobs");
  unsetenv("KILN_SERVER");
  ASSERT_TRUE(c.has_value()) << err.str();
  EXPECT_FALSE(c->server_flag);
  EXPECT_EQ(Connect(*c, io, "jobs"), nullptr);
  EXPECT_THAT(err.str(), HasSubstr("kiln jobs: $KILN_SERVER: server address 'http://kiln:7070' "
                                   "has a URL scheme"));
}

TEST(ReportFailureTest, AnUnreachableDaemonGetsAHint) {
  std::ostringstream out, err;
  CommandIo io{out, err};
  Connection c;
  c.options.address = "127.0.0.1:7070";
  EXPECT_EQ(ReportFailure(absl::UnavailableError("failed to connect to all addresses"), c, io),
            kExitUnavailable);
  EXPECT_EQ(err.str(), "kiln: cannot get an answer from kilnd at 127.0.0.1:7070: failed to connect "
                       "to all addresses\n"
                       "hint: is kilnd running at 127.0.0.1:7070? start it with scripts/serve.sh, "
                       "or point KILN_SERVER / --server at it\n");
  std::ostringstream err2;
  EXPECT_EQ(ReportFailure(absl::InvalidArgumentError("gemm.py:3:1: bad"), c, {out, err2}),
            kExitFailure);
  EXPECT_EQ(err2.str(), "gemm.py:3:1: bad\n"); // no hint for a daemon that answered
}

} // namespace
} // namespace kiln::cli
