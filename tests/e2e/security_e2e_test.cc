// End-to-end: kilnd with TLS (server certificate, then client certificates
// too) and with bearer tokens. Certificates are made for the test with the
// openssl command line (a self-signed CA signing a server and a client
// certificate for 127.0.0.1).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/credentials.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"

namespace kiln {
namespace {

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class SecurityE2ETest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Per process: ctest runs this suite's tests as concurrent processes.
    dir_ = new std::string(::testing::TempDir() + "kiln_security_" + std::to_string(getpid()));
    std::filesystem::remove_all(*dir_);
    std::filesystem::create_directories(*dir_);
    const std::string d = *dir_;
    const std::string cmd =
        "cd " + d +
        " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 "
        "-subj /CN=kiln-test-ca 2>/dev/null"
        " && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext"
        " && for n in server client; do"
        "   openssl req -newkey rsa:2048 -nodes -keyout $n.key -out $n.csr -subj /CN=$n"
        "     2>/dev/null &&"
        "   openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1"
        "     -extfile san.ext -out $n.pem 2>/dev/null || exit 1; done"
        " && printf 'kiln-test-token-0123456789abcdef ci\\n' > tokens";
    ok_ = std::system(cmd.c_str()) == 0;
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(*dir_, ignored);
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    // openssl is one of the README's dependencies: its absence is a failure.
    if (!ok_) FAIL() << "openssl could not make test certificates in " << *dir_;
  }
  bool Start(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--listen=127.0.0.1:0", "--cache-dir=" + *dir_ + "/cache"};
    args.insert(args.end(), extra.begin(), extra.end());
    return daemon_.Start(kKilnd, args);
  }
  grpc::Status Version(const std::shared_ptr<grpc::ChannelCredentials>& creds,
                       const std::string& token = "") {
    grpc::ChannelArguments ch;
    ch.SetSslTargetNameOverride("localhost");
    auto stub = kiln::v1::Kiln::NewStub(grpc::CreateCustomChannel(daemon_.address(), creds, ch));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    kiln::v1::GetVersionResponse resp;
    return stub->GetVersion(&ctx, {}, &resp);
  }
  std::shared_ptr<grpc::ChannelCredentials> Tls(bool with_client_cert) {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = Read(*dir_ + "/ca.pem");
    if (with_client_cert) {
      o.pem_private_key = Read(*dir_ + "/client.key");
      o.pem_cert_chain = Read(*dir_ + "/client.pem");
    }
    return grpc::SslCredentials(o);
  }

  static std::string* dir_;
  static bool ok_;
  testing::DaemonProcess daemon_;
};
std::string* SecurityE2ETest::dir_ = nullptr;
bool SecurityE2ETest::ok_ = false;

TEST_F(SecurityE2ETest, TlsServesOnlyTls) {
  ASSERT_TRUE(Start(
      {"--tls-cert-file=" + *dir_ + "/server.pem", "--tls-key-file=" + *dir_ + "/server.key"}))
      << daemon_.output();
  grpc::Status s = Version(Tls(false));
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(Version(grpc::InsecureChannelCredentials()).ok());
}

TEST_F(SecurityE2ETest, MutualTlsNeedsAClientCertificate) {
  ASSERT_TRUE(
      Start({"--tls-cert-file=" + *dir_ + "/server.pem", "--tls-key-file=" + *dir_ + "/server.key",
             "--tls-client-ca-file=" + *dir_ + "/ca.pem"}))
      << daemon_.output();
  grpc::Status s = Version(Tls(true));
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(Version(Tls(false)).ok());
}

TEST_F(SecurityE2ETest, TokensAreRequiredAndChecked) {
  ASSERT_TRUE(Start({"--auth-tokens-file=" + *dir_ + "/tokens"})) << daemon_.output();
  auto insecure = grpc::InsecureChannelCredentials();
  grpc::Status none = Version(insecure);
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(none.error_message().find("bearer token"), std::string::npos);
  grpc::Status wrong = Version(insecure, "kiln-test-token-ffffffffffffffff");
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(wrong.error_message().find("ffffffff"), std::string::npos); // never echoed
  grpc::Status right = Version(insecure, "kiln-test-token-0123456789abcdef");
  EXPECT_TRUE(right.ok()) << right.error_message();
}

TEST_F(SecurityE2ETest, AMissingCertificateIsAClearStartupError) {
  EXPECT_FALSE(
      Start({"--tls-cert-file=" + *dir_ + "/nope.pem", "--tls-key-file=" + *dir_ + "/server.key"}));
  EXPECT_EQ(daemon_.Wait(), 1);
  EXPECT_NE(daemon_.output().find("nope.pem"), std::string::npos) << daemon_.output();
}

} // namespace
} // namespace kiln
