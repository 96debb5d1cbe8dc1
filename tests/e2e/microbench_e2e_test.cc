// End-to-end: the micro-benchmarks through the real kilnd and its CPU
// worker. A fresh cache lists the device as "pending"; the first roller
// tune measures it (the log says so) and ListDevices shows the bandwidth;
// a restarted kilnd on the same cache lists it at once from the cache and
// a roller tune there does not measure again; `kiln devices --json` shows
// the values. A grid tune on a fresh cache does not measure, nor does any
// tune with --worker-microbench=false.
#include <filesystem>
#include <string>

#include <grpcpp/grpcpp.h>

#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"
#include "tests/support/example_loader.h"
#include "util/subprocess.h"

namespace kiln {
namespace {

namespace pb = kiln::v1;
const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";
const std::string kKiln = std::string(KILN_BINARY_DIR) + "/kiln";

pb::TuneRequest AddTune(pb::TuneStrategy strategy) {
  testing::ExampleFile ex =
      testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/elementwise/add.py");
  pb::TuneRequest req;
  req.mutable_program()->set_tilelang_source(ex.source);
  req.mutable_program()->set_file_name(ex.rel_path);
  (*req.mutable_program()->mutable_bindings())["M"].set_int_value(64);
  (*req.mutable_program()->mutable_bindings())["N"].set_int_value(128);
  req.set_target("cpu");
  req.set_strategy(strategy);
  if (strategy == pb::TUNE_STRATEGY_EXHAUSTIVE) {
    for (const char* name : {"block_M", "block_N", "threads"}) {
      auto& list = (*req.mutable_space()->mutable_candidates())[name];
      list.add_values()->set_int_value(name[0] == 't' ? 128 : 32);
    }
  }
  req.mutable_budget()->set_max_candidates(2);
  req.mutable_budget()->set_repeats(2);
  req.mutable_budget()->set_warmup(1);
  return req;
}

// Runs a tune to its end; its error message, or "".
std::string Tune(pb::Kiln::Stub& stub, const pb::TuneRequest& req) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(3));
  auto reader = stub.Tune(&ctx, req);
  pb::TuneEvent event;
  while (reader->Read(&event)) {
  }
  grpc::Status s = reader->Finish();
  return s.ok() ? "" : s.error_message();
}

pb::Device Cpu(pb::Kiln::Stub& stub) {
  grpc::ClientContext ctx;
  pb::ListDevicesResponse resp;
  EXPECT_TRUE(stub.ListDevices(&ctx, pb::ListDevicesRequest{}, &resp).ok());
  for (const pb::Device& d : resp.devices()) {
    if (d.id() == "cpu") return d;
  }
  ADD_FAILURE() << "no cpu device";
  return {};
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(MicrobenchE2ETest, FirstRollerTuneMeasuresAndARestartReusesTheResult) {
  const std::string dir = ::testing::TempDir() + "microbench_e2e";
  std::filesystem::remove_all(dir);
  const std::vector<std::string> args = {"--listen=127.0.0.1:0", "--cache-dir=" + dir};
  double dram = 0;
  {
    testing::DaemonProcess daemon;
    ASSERT_TRUE(daemon.Start(kKilnd, args)) << daemon.output();
    auto stub = pb::Kiln::NewStub(
        grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
    EXPECT_EQ(Cpu(*stub).measured().state(), "pending");
    // A grid sweep does not wait for the probes.
    ASSERT_EQ(Tune(*stub, AddTune(pb::TUNE_STRATEGY_EXHAUSTIVE)), "");
    EXPECT_EQ(Cpu(*stub).measured().state(), "pending");
    ASSERT_EQ(Tune(*stub, AddTune(pb::TUNE_STRATEGY_ROLLER)), "");
    const pb::Device cpu = Cpu(*stub);
    EXPECT_EQ(cpu.measured().state(), "measured") << cpu.measured().note();
    EXPECT_GT(cpu.measured().dram_gbs(), 0.1);
    EXPECT_EQ(cpu.measured().mma_f16_tflops(), 0);
    EXPECT_NE(cpu.measured().note().find("no tensor cores"), std::string::npos);
    EXPECT_FALSE(cpu.measured().from_cache());
    dram = cpu.measured().dram_gbs();
    // The second roller tune reuses this process's result.
    ASSERT_EQ(Tune(*stub, AddTune(pb::TUNE_STRATEGY_ROLLER)), "");
    daemon.Stop();
    EXPECT_EQ(Count(daemon.output(), "micro-benchmarks starting"), 1u) << daemon.output();
    EXPECT_EQ(Count(daemon.output(), "micro-benchmarks measured"), 1u);
  }
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(kKilnd, args)) << daemon.output();
  auto stub =
      pb::Kiln::NewStub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
  pb::Device cpu = Cpu(*stub);
  EXPECT_EQ(cpu.measured().state(), "measured");
  EXPECT_TRUE(cpu.measured().from_cache());
  EXPECT_EQ(cpu.measured().dram_gbs(), dram);
  ASSERT_EQ(Tune(*stub, AddTune(pb::TUNE_STRATEGY_ROLLER)), "");

  util::SubprocessOptions run;
  run.timeout = std::chrono::seconds(30);
  absl::StatusOr<util::SubprocessResult> json =
      util::RunSubprocess({kKiln, "devices", "--json", "--server", daemon.address()}, run);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_NE(json->stdout_data.find("\"dram_gbs\""), std::string::npos) << json->stdout_data;
  EXPECT_NE(json->stdout_data.find("\"from_cache\":true"), std::string::npos) << json->stdout_data;
  daemon.Stop();
  EXPECT_EQ(Count(daemon.output(), "micro-benchmarks starting"), 0u) << daemon.output();
}

TEST(MicrobenchE2ETest, MeasuringCanBeTurnedOff) {
  const std::string dir = ::testing::TempDir() + "microbench_e2e_off";
  std::filesystem::remove_all(dir);
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(
      kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir, "--worker-microbench=false"}))
      << daemon.output();
  auto stub =
      pb::Kiln::NewStub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
  ASSERT_EQ(Tune(*stub, AddTune(pb::TUNE_STRATEGY_ROLLER)), "");
  EXPECT_EQ(Cpu(*stub).measured().state(), "pending");
  daemon.Stop();
  EXPECT_EQ(Count(daemon.output(), "micro-benchmarks starting"), 0u) << daemon.output();
}

} // namespace
} // namespace kiln
