// End-to-end (issue 27, the rpc_fuzz observation): what kilnd keeps per
// request is bounded. Under rpc_fuzz the daemon slowed from 574 to 213
// calls a second and grew to 2.2 GB: job records kept megabyte-long request
// fields whole (a Benchmark's 1 MB history name as its key, a Tune's 1 MB
// toolchain echoed by every candidate's compile error in its progress, 1 MB
// failure messages), in memory, in the cache's job table and in every
// ListJobs answer, and the job table was never pruned. Here a real kilnd
// gets such requests and its job records stay small, and with
// --jobs-keep-records it keeps only the newest finished records.
//
// KILN_E2E_KILND names another kilnd binary to run these against (to show
// that they fail on a build without the fix).
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"

namespace kiln {
namespace {

// A small CPU kernel: each `factor` is another program.
std::string ScaleProgram(int factor) {
  return "import tilelang\n"
         "import tilelang.language as T\n"
         "\n"
         "\n"
         "@tilelang.jit\n"
         "def scale(A, block_M=32, dtype=T.float32):\n"
         "    M = T.const(\"M\")\n"
         "    A: T.Tensor((M,), dtype)\n"
         "    B = T.empty((M,), dtype)\n"
         "    with T.Kernel(T.ceildiv(M, block_M), threads=block_M) as bx:\n"
         "        for i in T.Parallel(block_M):\n"
         "            if bx * block_M + i < M:\n"
         "                B[bx * block_M + i] = A[bx * block_M + i] * " +
         std::to_string(factor) +
         ".0\n"
         "    return B\n";
}

kiln::v1::ProgramSource Scale(int factor) {
  kiln::v1::ProgramSource p;
  p.set_tilelang_source(ScaleProgram(factor));
  p.set_file_name("scale.py");
  (*p.mutable_bindings())["M"].set_int_value(64);
  return p;
}

class DaemonGrowthE2ETest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::FreshTestDir("kiln_growth_"); }
  void TearDown() override {
    daemon_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  bool Start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--listen=127.0.0.1:0", "--cache-dir=" + dir_ + "/cache",
                                     "--devices=none", "--worker-request-timeout=20s"};
    args.insert(args.end(), extra.begin(), extra.end());
    daemon_ = std::make_unique<testing::DaemonProcess>();
    if (!daemon_->Start(testing::KilndUnderTest(), args)) return false;
    grpc::ChannelArguments ch;
    ch.SetMaxSendMessageSize(64 << 20);
    ch.SetMaxReceiveMessageSize(64 << 20);
    stub_ = kiln::v1::Kiln::NewStub(
        grpc::CreateCustomChannel(daemon_->address(), grpc::InsecureChannelCredentials(), ch));
    return true;
  }
  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    return ctx;
  }
  grpc::Status Benchmark(const kiln::v1::BenchmarkRequest& req) {
    kiln::v1::BenchmarkResponse resp;
    return stub_->Benchmark(Ctx().get(), req, &resp);
  }
  std::vector<kiln::v1::Job> ListJobs(int limit) {
    kiln::v1::ListJobsRequest req;
    req.set_limit(limit);
    kiln::v1::ListJobsResponse resp;
    grpc::Status s = stub_->ListJobs(Ctx().get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.jobs().begin(), resp.jobs().end()};
  }

  std::string dir_;
  std::unique_ptr<testing::DaemonProcess> daemon_;
  std::unique_ptr<kiln::v1::Kiln::Stub> stub_;
};

TEST_F(DaemonGrowthE2ETest, JobRecordsKeepNoMegabyteFieldsOfRequests) {
  ASSERT_TRUE(Start()) << daemon_->output();
  const std::string big(1 << 20, 'h');
  {
    kiln::v1::BenchmarkRequest req; // measured: the job's key is the history name
    *req.mutable_program() = Scale(2);
    req.set_target("cpu");
    req.set_trials(1);
    req.set_history_name(big);
    grpc::Status s = Benchmark(req);
    EXPECT_TRUE(s.ok()) << s.error_message().substr(0, 300);
  }
  {
    kiln::v1::BenchmarkRequest req; // fails: the job's message echoes the target
    *req.mutable_program() = Scale(3);
    req.set_target("cpu" + big);
    req.set_trials(1);
    EXPECT_FALSE(Benchmark(req).ok());
  }
  {
    kiln::v1::TuneRequest req; // every candidate's compile error echoes the toolchain
    *req.mutable_program() = Scale(4);
    req.set_target("cpu");
    req.mutable_options()->set_toolchain("a=b=c" + big);
    auto ctx = Ctx();
    std::unique_ptr<grpc::ClientReader<kiln::v1::TuneEvent>> reader = stub_->Tune(ctx.get(), req);
    kiln::v1::TuneEvent event;
    while (reader->Read(&event)) {
    }
    (void)reader->Finish();
  }
  std::vector<kiln::v1::Job> jobs = ListJobs(100);
  ASSERT_GE(jobs.size(), 3u);
  size_t total = 0;
  for (const kiln::v1::Job& j : jobs) {
    EXPECT_LE(j.key().size(), 1024u) << j.id();
    EXPECT_LE(j.message().size(), 4096u) << j.id();
    EXPECT_LE(j.ByteSizeLong(), size_t{16} << 10) << j.id() << " " << j.message().substr(0, 200);
    total += j.ByteSizeLong();
  }
  EXPECT_LE(total, size_t{64} << 10);
}

TEST_F(DaemonGrowthE2ETest, TheJobTableKeepsTheNewestFinishedRecords) {
  ASSERT_TRUE(Start()) << daemon_->output();
  for (int i = 0; i < 8; ++i) {
    kiln::v1::BenchmarkRequest req;
    *req.mutable_program() = Scale(2);
    req.set_target("cpu");
    req.set_trials(1);
    req.set_history_name("series-" + std::to_string(i));
    grpc::Status s = Benchmark(req);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  std::vector<kiln::v1::Job> before = ListJobs(1000);
  ASSERT_GE(before.size(), 8u); // the benchmarks, and the compile they ran
  const std::string oldest = before.back().id();
  daemon_->Stop();

  // Pruned at start-up to the newest 3 finished records.
  ASSERT_TRUE(Start({"--jobs-keep-records=3"})) << daemon_->output();
  std::vector<kiln::v1::Job> after = ListJobs(1000);
  // 3, and any created in the same millisecond as the oldest of them (a
  // benchmark and the compile it started often are).
  ASSERT_GE(after.size(), 3u);
  ASSERT_LE(after.size(), 5u);
  EXPECT_EQ(after.front().id(), before.front().id());
  kiln::v1::GetJobRequest get;
  get.set_job_id(oldest);
  kiln::v1::Job job;
  EXPECT_EQ(stub_->GetJob(Ctx().get(), get, &job).error_code(), grpc::StatusCode::NOT_FOUND);
}

} // namespace
} // namespace kiln
