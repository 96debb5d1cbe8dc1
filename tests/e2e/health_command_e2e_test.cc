// End-to-end: `kiln health` against the real kilnd process (plaintext, TLS,
// mutual TLS, tokens) — the check the container image's HEALTHCHECK and the
// bundle's H200 script run.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "gtest/gtest.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"
#include "util/subprocess.h"

namespace kiln {
namespace {

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";
const std::string kKiln = std::string(KILN_BINARY_DIR) + "/kiln";

util::SubprocessResult Kiln(std::vector<std::string> args) {
  args.insert(args.begin(), {kKiln, "health"});
  util::SubprocessOptions o;
  o.timeout = std::chrono::seconds(60);
  absl::StatusOr<util::SubprocessResult> r = util::RunSubprocess(args, o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : util::SubprocessResult{};
}

class HealthCommandTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::FreshTestDir("health_e2e_"); }
  void TearDown() override {
    daemon_.Stop();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  bool Start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--listen=127.0.0.1:0", "--cache-dir=" + dir_ + "/cache"};
    args.insert(args.end(), extra.begin(), extra.end());
    return daemon_.Start(kKilnd, args);
  }
  // A CA, and a server and a client certificate it signed for 127.0.0.1 and
  // localhost, made with the openssl command line (a README dependency).
  void MakeCertificates() {
    const std::string cmd =
        "cd " + dir_ +
        " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 "
        "-subj /CN=kiln-health-ca 2>/dev/null"
        " && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext"
        " && for n in server client; do"
        "   openssl req -newkey rsa:2048 -nodes -keyout $n.key -out $n.csr -subj /CN=$n"
        "     2>/dev/null &&"
        "   openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1"
        "     -extfile san.ext -out $n.pem 2>/dev/null || exit 1; done";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl could not make certificates in " << dir_;
  }

  std::string dir_;
  testing::DaemonProcess daemon_;
};

TEST_F(HealthCommandTest, ServingServerIsExitZero) {
  ASSERT_TRUE(Start()) << daemon_.output();
  util::SubprocessResult r = Kiln({"--server", daemon_.address()});
  EXPECT_TRUE(r.success()) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "SERVING\n");
  util::SubprocessResult json = Kiln({"--server=" + daemon_.address(), "--json"});
  EXPECT_TRUE(json.success()) << json.stderr_data;
  EXPECT_EQ(json.stdout_data, "{\"server\": \"" + daemon_.address() +
                                  "\", \"service\": \"\", \"status\": \"SERVING\"}\n");
}

TEST_F(HealthCommandTest, UnknownServiceIsExitOne) {
  ASSERT_TRUE(Start()) << daemon_.output();
  util::SubprocessResult r = Kiln({"--server", daemon_.address(), "--service", "no.such.Service"});
  EXPECT_EQ(r.exit_code, 1) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "SERVICE_UNKNOWN\n");
}

TEST_F(HealthCommandTest, StoppedServerIsExitFive) {
  ASSERT_TRUE(Start()) << daemon_.output();
  const std::string address = daemon_.address();
  ASSERT_EQ(daemon_.Stop(), 0) << daemon_.output();
  util::SubprocessResult r = Kiln({"--server", address, "--timeout", "2"});
  EXPECT_EQ(r.exit_code, 5) << r.stdout_data << r.stderr_data;
  EXPECT_NE(r.stderr_data.find("cannot get an answer from kilnd at " + address), std::string::npos)
      << r.stderr_data;
}

TEST_F(HealthCommandTest, TokensDoNotGuardTheHealthService) {
  const std::string tokens = dir_ + "/tokens";
  ASSERT_EQ(std::system(("printf 'kiln-health-token-0123456789 probe\\n' > " + tokens).c_str()), 0);
  ASSERT_TRUE(Start({"--auth-tokens-file=" + tokens})) << daemon_.output();
  util::SubprocessResult r = Kiln({"--server", daemon_.address()});
  EXPECT_TRUE(r.success()) << r.stderr_data;
  EXPECT_EQ(r.stdout_data, "SERVING\n");
}

TEST_F(HealthCommandTest, TlsNeedsTheCaAndMutualTlsTheClientCertificate) {
  ASSERT_NO_FATAL_FAILURE(MakeCertificates());
  ASSERT_TRUE(
      Start({"--tls-cert-file=" + dir_ + "/server.pem", "--tls-key-file=" + dir_ + "/server.key",
             "--tls-client-ca-file=" + dir_ + "/ca.pem"}))
      << daemon_.output();
  const std::string server = daemon_.address();
  util::SubprocessResult plain = Kiln({"--server", server, "--timeout", "3"});
  EXPECT_EQ(plain.exit_code, 5) << plain.stdout_data;
  util::SubprocessResult no_client_cert =
      Kiln({"--server", server, "--timeout", "3", "--tls-ca-file", dir_ + "/ca.pem"});
  EXPECT_NE(no_client_cert.exit_code, 0) << no_client_cert.stdout_data;
  util::SubprocessResult ok = Kiln({"--server", server, "--tls-ca-file", dir_ + "/ca.pem",
                                    "--tls-cert-file", dir_ + "/client.pem", "--tls-key-file",
                                    dir_ + "/client.key", "--tls-server-name", "localhost"});
  EXPECT_TRUE(ok.success()) << ok.stderr_data;
  EXPECT_EQ(ok.stdout_data, "SERVING\n");
  // The connection flags' names of the other commands work as well.
  util::SubprocessResult same_names =
      Kiln({"--server", server, "--tls-ca", dir_ + "/ca.pem", "--tls-cert", dir_ + "/client.pem",
            "--tls-key", dir_ + "/client.key", "--tls-server-name", "localhost"});
  EXPECT_TRUE(same_names.success()) << same_names.stderr_data;
  EXPECT_EQ(same_names.stdout_data, "SERVING\n");
}

TEST_F(HealthCommandTest, BadArgumentsAreUsageErrors) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--bogus"},
                                             {"--timeout", "0"},
                                             {"--tls-cert-file", "c.pem"},
                                             {"--tls-server-name", "x"},
                                             {"--tls-ca-file", dir_ + "/missing.pem"}}) {
    SCOPED_TRACE(args[0]);
    util::SubprocessResult r = Kiln(args);
    EXPECT_EQ(r.exit_code, 2) << r.stdout_data << r.stderr_data;
    EXPECT_NE(r.stderr_data.find("kiln health: "), std::string::npos) << r.stderr_data;
  }
}

} // namespace
} // namespace kiln
