// End-to-end: kilnd's operational surface as a real process: the metrics
// endpoint on a port of its own, --help, --print-config, configuration
// errors and structured logs.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "server/config_options.h"
#include "tests/e2e/daemon_process.h"
#include "tests/support/example_loader.h"
#include "tests/support/gemm_request.h"
#include "util/subprocess.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";

// "metrics on HOST:PORT" from the first log line: the port, or 0.
int MetricsPort(const std::string& output) {
  const size_t at = output.find("metrics on ");
  if (at == std::string::npos) return 0;
  const size_t colon = output.find(':', at + 11);
  return colon == std::string::npos ? 0 : std::atoi(output.c_str() + colon + 1);
}

// One HTTP/1.1 GET on 127.0.0.1:port; the whole response.
std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
    if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
        static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) response.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return response;
}

// Runs kilnd to completion with `args`; its exit status and output.
std::pair<int, std::string> RunKilnd(const std::vector<std::string>& args) {
  testing::DaemonProcess process;
  process.Start(kKilnd, args, std::chrono::seconds(10));
  const int status = process.Wait();
  return {status, process.output()};
}

std::string CacheDir() { return ::testing::TempDir() + "kilnd_ops_test_cache"; }

TEST(KilndOpsTest, ServesMetricsAndHealthOnTheMetricsPort) {
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(kKilnd, {"--listen=127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                                    "--cache-dir", CacheDir()}))
      << daemon.output();
  EXPECT_THAT(daemon.output(),
              HasSubstr(" listening on " + daemon.address() + " metrics on 127.0.0.1:"));
  EXPECT_THAT(daemon.output(), HasSubstr("(cache " + CacheDir() + ")"));
  const int port = MetricsPort(daemon.output());
  ASSERT_GT(port, 0) << daemon.output();

  const std::string metrics = HttpGet(port, "/metrics");
  EXPECT_THAT(metrics, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(metrics, HasSubstr("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  EXPECT_THAT(metrics, HasSubstr("\nkiln_build_info{version=\""));
  EXPECT_THAT(metrics, HasSubstr("\n# TYPE kiln_rpc_duration_seconds histogram\n"));
  EXPECT_THAT(metrics, HasSubstr("\nkiln_queue_depth{priority=\"interactive\"} 0\n"));
  EXPECT_THAT(HttpGet(port, "/healthz"), StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(HttpGet(port, "/nope"), StartsWith("HTTP/1.1 404 Not Found\r\n"));

  EXPECT_EQ(daemon.Stop(), 0) << daemon.output();
  EXPECT_THAT(daemon.output(), HasSubstr("shutting down"));
  EXPECT_EQ(HttpGet(port, "/healthz"), ""); // the port is closed with the daemon
}

// A CUDA build goes to an NVRTC helper process (kiln-worker --compile), and
// the helper families on /metrics count it. NVRTC is there without a GPU.
TEST(KilndOpsTest, CudaBuildsRunInAHelperAndShowOnTheMetrics) {
  const std::string dir = CacheDir() + "_helpers";
  std::filesystem::remove_all(dir);
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(
      kKilnd, {"--listen=127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--cache-dir", dir}))
      << daemon.output();
  const int port = MetricsPort(daemon.output());
  ASSERT_GT(port, 0) << daemon.output();
  EXPECT_THAT(HttpGet(port, "/metrics"), HasSubstr("\nkiln_compile_helper_builds_total 0\n"));

  util::SubprocessOptions o;
  o.timeout = std::chrono::seconds(120);
  absl::StatusOr<util::SubprocessResult> r = util::RunSubprocess(
      {std::string(KILN_BINARY_DIR) + "/kiln", "compile",
       std::string(KILN_SOURCE_DIR) + "/examples/elementwise/add.py", "--bind", "M=77", "--bind",
       "N=130", "--bind", "block_M=16", "--bind", "block_N=64", "--target", "cuda:sm_80", "--emit",
       "cubin", "-o", dir + "/add.cubin", "--server=" + daemon.address()},
      o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->exit_code, 0) << r->stdout_data << r->stderr_data;
  EXPECT_GT(std::filesystem::file_size(dir + "/add.cubin"), 0u);

  const std::string metrics = HttpGet(port, "/metrics");
  EXPECT_THAT(metrics, HasSubstr("\nkiln_compile_helper_builds_total 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\nkiln_compile_helper_starts_total 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\nkiln_compile_helpers{state=\"idle\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\nkiln_compile_helper_lost_total 0\n"));
  EXPECT_THAT(metrics, HasSubstr("\nkiln_compile_builds_in_process_total 0\n"));
  EXPECT_EQ(daemon.Stop(), 0) << daemon.output();
  // Read after Stop, which drains the output: the line follows "listening
  // on", and Start returns as soon as that one is in.
  EXPECT_THAT(daemon.output(), HasSubstr("CUDA builds run in NVRTC helper processes"));
  std::filesystem::remove_all(dir);
}

TEST(KilndOpsTest, JsonLogs) {
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(
      kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + CacheDir(), "--log-format=json"}))
      << daemon.output();
  EXPECT_THAT(daemon.output(), StartsWith("{\"ts\":\""));
  EXPECT_THAT(daemon.output(), HasSubstr("\"level\":\"info\",\"msg\":\"kilnd "));
  EXPECT_EQ(daemon.Stop(), 0);
}

TEST(KilndOpsTest, HelpDocumentsEveryOption) {
  const auto [status, output] = RunKilnd({"--help"});
  EXPECT_EQ(status, 0);
  for (const server::ConfigOption& option : server::ServerConfigOptions()) {
    EXPECT_THAT(output, HasSubstr(option.flag())) << option.key;
    EXPECT_THAT(output, HasSubstr(option.env())) << option.key;
  }
}

TEST(KilndOpsTest, PrintConfigShowsTheSources) {
  const std::string example = std::string(KILN_SOURCE_DIR) + "/docs/kilnd.example.yaml";
  const auto [status, output] =
      RunKilnd({"--config", example, "--print-config", "--cache-dir=/elsewhere"});
  EXPECT_EQ(status, 0) << output;
  EXPECT_THAT(output, HasSubstr("listen: \"0.0.0.0:7070\"  # " + example + ":"));
  EXPECT_THAT(output, HasSubstr("  dir: \"/elsewhere\"  # flag --cache-dir\n"));
}

TEST(KilndOpsTest, ConfigurationErrorsAreClear) {
  const std::string bad = ::testing::TempDir() + "kilnd_ops_bad.yaml";
  std::ofstream(bad) << "cache:\n  max_sise: 1GiB\n";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--config", bad}, bad + ":2: unknown key 'cache.max_sise' (did you mean cache.max_size?)"},
      {{"--cache_dirr=/x"}, "unknown flag --cache-dirr (did you mean --cache-dir?)"},
      {{"--metrics-listen=127.0.0.1"}, "--metrics-listen: cannot listen"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    const auto [status, output] = RunKilnd(c.args);
    EXPECT_EQ(status, 1);
    EXPECT_THAT(output, HasSubstr("kilnd: " + c.message));
  }
}

TEST(KilndOpsTest, MetricsPortInUseIsAClearError) {
  testing::DaemonProcess first;
  ASSERT_TRUE(first.Start(kKilnd, {"--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                                   "--cache-dir=" + CacheDir()}))
      << first.output();
  const std::string taken = "127.0.0.1:" + std::to_string(MetricsPort(first.output()));
  const auto [status, output] =
      RunKilnd({"--listen=127.0.0.1:0", "--metrics-listen=" + taken, "--cache-dir=" + CacheDir()});
  EXPECT_EQ(status, 1);
  EXPECT_THAT(output, HasSubstr("cannot listen on " + taken));
}

// Issue 27, item 6: 64 idle sockets on the metrics port made /healthz answer
// 503 until they timed out; a probe must still get 200, at once.
TEST(KilndOpsTest, IdleSocketsOnTheMetricsPortDoNotStarveHealthz) {
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(kKilnd, {"--listen=127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                                    "--cache-dir", CacheDir()}))
      << daemon.output();
  const int port = MetricsPort(daemon.output());
  ASSERT_GT(port, 0) << daemon.output();
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    idle.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300)); // all accepted
  for (int probe = 0; probe < 3; ++probe) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THAT(HttpGet(port, "/healthz"), StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  }
  for (int fd : idle) close(fd);
  EXPECT_EQ(daemon.Stop(), 0);
}

// The gemm example for the CPU target at its test size, with M = m (each M
// is another program: about a second of host compiler each).
kiln::v1::CompileRequest GemmRequest(int64_t m, bool async) {
  kiln::v1::CompileRequest req = testing::GemmCpuRequest(m);
  req.set_async(async);
  return req;
}

std::unique_ptr<kiln::v1::Kiln::Stub> StubFor(const testing::DaemonProcess& daemon) {
  return kiln::v1::Kiln::NewStub(
      grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
}

grpc::Status Compile(kiln::v1::Kiln::Stub& stub, const kiln::v1::CompileRequest& req,
                     kiln::v1::CompileResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  return stub.Compile(&ctx, req, resp);
}

// Starts async compiles of `n` programs on a daemon with one compile thread
// (so all but one wait in the queue); their job ids.
std::vector<std::string> QueueAsyncCompiles(kiln::v1::Kiln::Stub& stub, int n, int64_t first_m) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) {
    kiln::v1::CompileResponse resp;
    grpc::Status s = Compile(stub, GemmRequest(first_m + i, /*async=*/true), &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_FALSE(resp.job_id().empty());
    ids.push_back(resp.job_id());
  }
  return ids;
}

kiln::v1::Job GetJob(kiln::v1::Kiln::Stub& stub, const std::string& id) {
  grpc::ClientContext ctx;
  kiln::v1::GetJobRequest get;
  get.set_job_id(id);
  kiln::v1::Job job;
  grpc::Status s = stub.GetJob(&ctx, get, &job);
  EXPECT_TRUE(s.ok()) << id << ": " << s.error_message();
  return job;
}

// Issue 27, item 6: on SIGTERM, queued async jobs were cancelled at once
// ("cancelled before it started"). They now run within the grace period,
// and a client asking after a restart finds them done.
TEST(KilndOpsTest, QueuedAsyncJobsRunWithinTheGracePeriod) {
  const std::string dir = CacheDir() + "_drain";
  std::filesystem::remove_all(dir);
  const std::vector<std::string> args = {"--listen=127.0.0.1:0", "--cache-dir=" + dir,
                                         "--compile-threads=1", "--grace-period=90s"};
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(kKilnd, args)) << daemon.output();
  const std::vector<std::string> ids = QueueAsyncCompiles(*StubFor(daemon), 3, 301);
  EXPECT_EQ(daemon.Stop(), 0) << daemon.output();

  testing::DaemonProcess after;
  ASSERT_TRUE(after.Start(kKilnd, args)) << after.output();
  auto stub = StubFor(after);
  for (const std::string& id : ids) {
    const kiln::v1::Job job = GetJob(*stub, id);
    EXPECT_EQ(job.state(), kiln::v1::JOB_STATE_SUCCEEDED) << id << ": " << job.message();
  }
  kiln::v1::CompileResponse hit;
  ASSERT_TRUE(Compile(*stub, GemmRequest(303, /*async=*/false), &hit).ok());
  EXPECT_EQ(hit.outcome(), kiln::v1::CACHE_OUTCOME_HIT);
  EXPECT_EQ(after.Stop(), 0);
  std::filesystem::remove_all(dir);
}

// What cannot finish within the grace period fails with a status that says
// so, kept in the job's record for a client that asks after the restart;
// the daemon exits soon after the grace period.
TEST(KilndOpsTest, JobsPastTheGracePeriodFailWithAPersistedShutdownStatus) {
  const std::string dir = CacheDir() + "_grace";
  std::filesystem::remove_all(dir);
  std::vector<std::string> args = {"--listen=127.0.0.1:0", "--cache-dir=" + dir,
                                   "--compile-threads=1", "--grace-period=1s"};
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(kKilnd, args)) << daemon.output();
  const std::vector<std::string> ids = QueueAsyncCompiles(*StubFor(daemon), 8, 401);
  const auto stop_start = std::chrono::steady_clock::now();
  EXPECT_EQ(daemon.Stop(), 0) << daemon.output();
  // The grace period, then at most the compile that was running.
  EXPECT_LT(std::chrono::steady_clock::now() - stop_start, std::chrono::seconds(20));

  testing::DaemonProcess after;
  ASSERT_TRUE(after.Start(kKilnd, args)) << after.output();
  auto stub = StubFor(after);
  int failed = 0;
  for (const std::string& id : ids) {
    const kiln::v1::Job job = GetJob(*stub, id);
    SCOPED_TRACE(id + ": " + job.message());
    if (job.state() == kiln::v1::JOB_STATE_SUCCEEDED) continue;
    EXPECT_EQ(job.state(), kiln::v1::JOB_STATE_FAILED);
    EXPECT_THAT(job.message(), HasSubstr("daemon shutting down"));
    EXPECT_THAT(job.message(), HasSubstr("grace period"));
    ++failed;
  }
  EXPECT_GT(failed, 0) << "eight compiles on one thread do not fit in one second";
  EXPECT_EQ(after.Stop(), 0);
  std::filesystem::remove_all(dir);
}

// Issue 27, item 6: a full disk was found only after a whole compile, and
// the error named the server's paths. Below --cache-min-free, a compile is
// refused before it builds, hits are still served, and the client's message
// names no path (the daemon's log does).
TEST(KilndOpsTest, AFullCacheDiskRefusesCompilesBeforeBuilding) {
  const std::string dir = CacheDir() + "_full";
  std::filesystem::remove_all(dir);
  {
    testing::DaemonProcess daemon;
    ASSERT_TRUE(daemon.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir}))
        << daemon.output();
    kiln::v1::CompileResponse resp;
    ASSERT_TRUE(Compile(*StubFor(daemon), GemmRequest(100, false), &resp).ok());
    EXPECT_EQ(daemon.Stop(), 0);
  }
  testing::DaemonProcess daemon;
  // More free space than any disk has: this one counts as full.
  ASSERT_TRUE(daemon.Start(
      kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir, "--cache-min-free=1000000TiB"}))
      << daemon.output();
  auto stub = StubFor(daemon);
  kiln::v1::CompileResponse hit;
  ASSERT_TRUE(Compile(*stub, GemmRequest(100, false), &hit).ok());
  EXPECT_EQ(hit.outcome(), kiln::v1::CACHE_OUTCOME_HIT);

  const auto start = std::chrono::steady_clock::now();
  kiln::v1::CompileResponse refused;
  grpc::Status s = Compile(*stub, GemmRequest(101, false), &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("cache.min_free"));
  EXPECT_THAT(s.error_message(), Not(HasSubstr(dir)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(daemon.Stop(), 0);
  // Refused before the build (no "compiled" record), and the log names the
  // directory.
  EXPECT_THAT(daemon.output(), HasSubstr("compile refused: no room to store its artifact"));
  EXPECT_THAT(daemon.output(), Not(HasSubstr(" compiled ")));
  EXPECT_THAT(daemon.output(), HasSubstr(dir));
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace kiln
