// libkiln_client without a daemon: option checks, which calls are retried
// on UNAVAILABLE (a closed loopback port), the deadline bounding retries,
// bindings and program files.
#include <chrono>
#include <fstream>
#include <string>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clients/cpp/client/client.h"
#include "gtest/gtest.h"

namespace kiln::client {
namespace {

// A loopback port nothing listens on (bound, then closed).
int ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return 1;
  }
  close(fd);
  return ntohs(a.sin_port);
}

ClientOptions Fast(int attempts) {
  ClientOptions o;
  o.address = "127.0.0.1:" + std::to_string(ClosedPort());
  o.retry.max_attempts = attempts;
  o.retry.initial_backoff = std::chrono::milliseconds(20);
  o.retry.max_backoff = std::chrono::milliseconds(40);
  o.deadline = std::chrono::seconds(20);
  return o;
}

TEST(Client, RejectsInconsistentOptions) {
  ClientOptions o;
  o.address = "";
  EXPECT_EQ(Client::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = ClientOptions();
  o.tls = true;
  o.tls_cert_file = "/nonexistent/client.pem"; // without its key
  EXPECT_EQ(Client::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.tls_key_file = "/nonexistent/client.key";
  absl::StatusOr<std::unique_ptr<Client>> c = Client::Create(o);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(c.status().message().find("/nonexistent/client.pem"), std::string::npos);
  o = ClientOptions();
  o.tls_root_certs_file = "/etc/ssl/certs/ca-certificates.crt"; // but tls is off
  EXPECT_EQ(Client::Create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Client, RetriesIdempotentCallsOnUnavailable) {
  absl::StatusOr<std::unique_ptr<Client>> c = Client::Create(Fast(3));
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<std::vector<kiln::v1::Device>> d = (*c)->ListDevices();
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable) << d.status();
  EXPECT_EQ((*c)->stats().attempts, 3);
  EXPECT_EQ((*c)->stats().retries, 2);
  kiln::v1::CompileRequest req;
  req.mutable_program()->set_tilelang_source("x");
  EXPECT_EQ((*c)->Compile(req).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ((*c)->stats().attempts, 6); // Compile is idempotent by key
}

TEST(Client, NeverRepeatsABenchmark) {
  absl::StatusOr<std::unique_ptr<Client>> c = Client::Create(Fast(5));
  ASSERT_TRUE(c.ok()) << c.status();
  kiln::v1::BenchmarkRequest req;
  req.set_artifact_key(std::string(64, 'a'));
  EXPECT_EQ((*c)->Benchmark(req).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ((*c)->stats().attempts, 1); // each call records a run: not repeated
  EXPECT_EQ((*c)->stats().retries, 0);
}

TEST(Client, TheDeadlineBoundsTheRetries) {
  ClientOptions o = Fast(1000);
  o.retry.initial_backoff = std::chrono::milliseconds(100);
  o.retry.max_backoff = std::chrono::milliseconds(100);
  o.retry.jitter = 0;
  o.deadline = std::chrono::milliseconds(700);
  absl::StatusOr<std::unique_ptr<Client>> c = Client::Create(o);
  ASSERT_TRUE(c.ok());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE((*c)->GetVersion().ok());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 3.0);
  EXPECT_GE((*c)->stats().attempts, 3);
  EXPECT_LT((*c)->stats().attempts, 1000);
}

TEST(Client, RejectsABadArtifactKeyWithoutACall) {
  absl::StatusOr<std::unique_ptr<Client>> c = Client::Create(Fast(3));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)->FetchArtifact("../etc/passwd").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*c)->stats().attempts, 0);
}

TEST(ParseBinding, TypesAsOnTheCommandLine) {
  EXPECT_EQ(ParseBinding("128").int_value(), 128);
  EXPECT_EQ(ParseBinding("-3").int_value(), -3);
  EXPECT_DOUBLE_EQ(ParseBinding("1e-5").float_value(), 1e-5);
  EXPECT_TRUE(ParseBinding("True").bool_value());
  EXPECT_EQ(ParseBinding("false").value_case(), kiln::v1::BindingValue::kBoolValue);
  EXPECT_EQ(ParseBinding("float16").string_value(), "float16");
  EXPECT_EQ(ParseBinding("inf").string_value(), "inf"); // no digits: a name
}

TEST(ParseBinding, ListsAndTuplesOfInts) {
  kiln::v1::BindingValue l = ParseBinding("[37, 64, 5]");
  ASSERT_EQ(l.value_case(), kiln::v1::BindingValue::kIntList);
  EXPECT_THAT(l.int_list().values(), ::testing::ElementsAre(37, 64, 5));
  EXPECT_FALSE(l.int_list().tuple());
  kiln::v1::BindingValue t = ParseBinding("(3,)");
  ASSERT_EQ(t.value_case(), kiln::v1::BindingValue::kIntList);
  EXPECT_THAT(t.int_list().values(), ::testing::ElementsAre(3));
  EXPECT_TRUE(t.int_list().tuple());
  EXPECT_EQ(ParseBinding("[]").int_list().values_size(), 0);
  // Not lists of ints: strings, as before.
  EXPECT_EQ(ParseBinding("(3)").string_value(), "(3)");
  EXPECT_EQ(ParseBinding("[1.5]").string_value(), "[1.5]");
}

TEST(LoadProgram, TileLangOrTextualIr) {
  const std::string py = ::testing::TempDir() + "client_test_prog.py";
  const std::string kir = ::testing::TempDir() + "client_test_prog.kir";
  std::ofstream(py) << "import tilelang\n";
  std::ofstream(kir) << "\n  program @k {\n}\n";
  absl::StatusOr<kiln::v1::ProgramSource> a = LoadProgram(py);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->source_case(), kiln::v1::ProgramSource::kTilelangSource);
  EXPECT_EQ(a->file_name(), py);
  absl::StatusOr<kiln::v1::ProgramSource> b = LoadProgram(kir);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->source_case(), kiln::v1::ProgramSource::kIrText);
  EXPECT_EQ(LoadProgram("/nonexistent.py").status().code(), absl::StatusCode::kNotFound);
}

TEST(OptionsFromEnvironment, ReadsTheVariables) {
  setenv("KILN_SERVER", "kiln.example:7171", 1);
  setenv("KILN_TOKEN", "secret-token", 1);
  setenv("KILN_TLS_CA", "/etc/kiln/ca.pem", 1);
  ClientOptions o = OptionsFromEnvironment();
  EXPECT_EQ(o.address, "kiln.example:7171");
  EXPECT_EQ(o.token, "secret-token");
  EXPECT_TRUE(o.tls);
  EXPECT_EQ(o.tls_root_certs_file, "/etc/kiln/ca.pem");
  unsetenv("KILN_SERVER");
  unsetenv("KILN_TOKEN");
  unsetenv("KILN_TLS_CA");
  EXPECT_EQ(OptionsFromEnvironment().address, "127.0.0.1:7070");
}

} // namespace
} // namespace kiln::client
