// A sweep that survives its broken candidates, through the real kilnd: a
// grid over tests/e2e/data/faulty_tune.py's `mode` (0 and 3 correct, 1 writes
// far out of bounds, 2 never finishes) on one device, with a short worker
// request timeout. The sweep must finish with the fault recorded as
// LAUNCH_ERROR and the hang as TIMEOUT, the best one of the correct configs,
// and the daemon up and its worker back for the next request. Used by
// tune_faults_test.cc (the CPU device) and tune_faults_gpu_test.cc (cuda:0).
// KILN_KILND and KILN_SOURCE_ROOT override the build's kilnd and source tree
// (a bundle on a GPU machine).
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/tune_stream.h"
#include "tests/support/example_loader.h"

namespace kiln::testing {

inline std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

inline void RunFaultySweep(const std::string& target, const std::string& device_id,
                           const std::string& dir_name) {
  namespace pb = kiln::v1;
  const std::string dir = ::testing::TempDir() + dir_name;
  std::filesystem::remove_all(dir);
  DaemonProcess daemon;
  const std::string kilnd = EnvOr("KILN_KILND", std::string(KILN_BINARY_DIR) + "/kilnd");
  ASSERT_TRUE(daemon.Start(
      kilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir, "--worker-request-timeout=4s"}))
      << daemon.output();
  auto stub =
      pb::Kiln::NewStub(grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));

  const ExampleFile ex =
      LoadExampleFile(EnvOr("KILN_SOURCE_ROOT", KILN_SOURCE_DIR), "tests/e2e/data/faulty_tune.py");
  ASSERT_FALSE(ex.source.empty());
  pb::TuneRequest req;
  req.mutable_program()->set_tilelang_source(ex.source);
  req.mutable_program()->set_file_name(ex.rel_path);
  (*req.mutable_program()->mutable_bindings())["M"].set_int_value(4096);
  req.set_target(target);
  req.mutable_devices()->add_device_ids(device_id);
  req.set_strategy(pb::TUNE_STRATEGY_EXHAUSTIVE);
  pb::ValueList& modes = (*req.mutable_space()->mutable_candidates())["mode"];
  for (int m : {0, 1, 2, 3}) modes.add_values()->set_int_value(m);
  (*req.mutable_space()->mutable_candidates())["block_M"].add_values()->set_int_value(64);
  req.mutable_budget()->set_repeats(3);

  const TuneOutcome tune = RunTune(*stub, req, std::chrono::minutes(4));
  ASSERT_TRUE(tune.status.ok()) << tune.status.error_message() << daemon.output();
  ASSERT_TRUE(tune.result.has_value());
  const std::optional<pb::TuneResult>& result = tune.result;
  std::map<int64_t, pb::Measurement> by_mode;
  for (const pb::Measurement& m : result->measurements()) {
    by_mode[m.config().at("mode").int_value()] = m;
  }
  ASSERT_EQ(by_mode.size(), 4u) << result->DebugString();
  EXPECT_EQ(by_mode[0].status(), pb::Measurement::STATUS_OK) << by_mode[0].error();
  EXPECT_EQ(by_mode[3].status(), pb::Measurement::STATUS_OK) << by_mode[3].error();
  EXPECT_EQ(by_mode[1].status(), pb::Measurement::STATUS_LAUNCH_ERROR) << by_mode[1].DebugString();
  EXPECT_FALSE(by_mode[1].error().empty());
  EXPECT_EQ(by_mode[2].status(), pb::Measurement::STATUS_TIMEOUT) << by_mode[2].DebugString();
  ASSERT_TRUE(result->has_best());
  const int64_t best = result->best().config().at("mode").int_value();
  EXPECT_TRUE(best == 0 || best == 3) << best;

  // The daemon is up, the device's worker is back, and it measures again.
  pb::BenchmarkRequest bench;
  *bench.mutable_program() = req.program();
  (*bench.mutable_program()->mutable_bindings())["mode"].set_int_value(0);
  bench.set_target(target);
  bench.mutable_devices()->add_device_ids(device_id);
  bench.set_trials(3);
  pb::BenchmarkResponse measured;
  grpc::ClientContext bctx;
  bctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(2));
  const grpc::Status bs = stub->Benchmark(&bctx, bench, &measured);
  EXPECT_TRUE(bs.ok()) << bs.error_message() << daemon.output();
}

} // namespace kiln::testing
