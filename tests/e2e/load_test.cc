// Load on the real kilnd: 64 concurrent clients (a channel each) for
// KILN_LOAD_SECONDS (default 60) mixing cache hits, first requests of new
// programs and waves of identical requests. Asserts zero errors and exactly
// one compile (one MISS) per distinct program; prints p50/p99. Then a
// crash: kill -9 in the middle of load, restart on the same cache, and
// every compile that completed before the kill is a hit.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"
#include "tests/support/example_loader.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";

double LoadSeconds() {
  const char* env = std::getenv("KILN_LOAD_SECONDS");
  return env != nullptr ? std::max(5.0, std::atof(env)) : 60.0;
}

kiln::v1::CompileRequest Program(const testing::ExampleFile& ex, int64_t m) {
  kiln::v1::CompileRequest req;
  req.mutable_program()->set_tilelang_source(ex.source);
  req.mutable_program()->set_file_name(ex.rel_path);
  for (const auto& [name, value] : ex.test_bind) {
    kiln::v1::BindingValue v;
    v.set_int_value(name == "M" ? m : value.ival);
    (*req.mutable_program()->mutable_bindings())[name] = v;
  }
  req.set_target("cpu");
  return req;
}

struct Sample {
  int64_t m;
  grpc::Status status;
  kiln::v1::CacheOutcome outcome;
  std::string key;
  double ms;
};

// Runs `clients` client threads against `address` until `stop` or the end
// of `seconds`; each request's program is chosen from hot / wave / random.
std::vector<Sample> RunLoad(const std::string& address, const testing::ExampleFile& ex, int clients,
                            double seconds, std::atomic<bool>* stop,
                            std::atomic<int64_t>* completed = nullptr) {
  std::mutex mu;
  std::vector<Sample> samples;
  const Clock::time_point start = Clock::now();
  const auto end = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      grpc::ChannelArguments ch;
      ch.SetInt("grpc.use_local_subchannel_pool", 1);
      auto stub = kiln::v1::Kiln::NewStub(
          grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), ch));
      std::mt19937 rng(1234 + c);
      std::vector<Sample> mine;
      while (Clock::now() < end && !stop->load()) {
        const double t = std::chrono::duration<double>(Clock::now() - start).count();
        const int pick = static_cast<int>(rng() % 10);
        int64_t m;
        if (pick < 5) {
          m = 100; // hot: compiled before the load
        } else if (pick < 8) {
          m = 300 + static_cast<int64_t>(t / 5); // a wave: everyone asks for one new program
        } else {
          m = 200 + static_cast<int64_t>(rng() % 10); // one of 10 others
        }
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
        kiln::v1::CompileResponse resp;
        const Clock::time_point t0 = Clock::now();
        Sample s;
        s.m = m;
        s.status = stub->Compile(&ctx, Program(ex, m), &resp);
        s.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        s.outcome = resp.outcome();
        s.key = resp.artifact().key();
        mine.push_back(std::move(s));
        if (completed && mine.back().status.ok()) completed->fetch_add(1);
      }
      std::lock_guard<std::mutex> lock(mu);
      samples.insert(samples.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  return samples;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

class LoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTestDir("kiln_load_");
    ex_ = testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/gemm/gemm.py");
  }
  bool Start() {
    daemon_ = std::make_unique<testing::DaemonProcess>();
    return daemon_->Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir_});
  }
  grpc::Status CompileOnce(int64_t m, kiln::v1::CompileResponse* resp) {
    auto stub = kiln::v1::Kiln::NewStub(
        grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    return stub->Compile(&ctx, Program(ex_, m), resp);
  }

  std::string dir_;
  testing::ExampleFile ex_;
  std::unique_ptr<testing::DaemonProcess> daemon_;
};

TEST_F(LoadTest, SixtyFourClientsNoErrorsOneCompilePerProgram) {
  ASSERT_TRUE(Start()) << daemon_->output();
  kiln::v1::CompileResponse warm;
  ASSERT_TRUE(CompileOnce(100, &warm).ok());
  std::atomic<bool> stop{false};
  const double seconds = LoadSeconds();
  std::vector<Sample> samples = RunLoad(daemon_->address(), ex_, 64, seconds, &stop);
  std::map<int64_t, std::map<int, int>> outcomes; // m -> outcome -> count
  std::map<int64_t, std::set<std::string>> keys;
  std::vector<double> all_ms, hit_ms;
  int64_t errors = 0;
  for (const Sample& s : samples) {
    if (!s.status.ok()) {
      if (errors++ < 5) ADD_FAILURE() << "M=" << s.m << ": " << s.status.error_message();
      continue;
    }
    ++outcomes[s.m][s.outcome];
    keys[s.m].insert(s.key);
    all_ms.push_back(s.ms);
    if (s.outcome == kiln::v1::CACHE_OUTCOME_HIT) hit_ms.push_back(s.ms);
  }
  EXPECT_EQ(errors, 0);
  // Each client spends most of its time waiting on compiles of new programs
  // (two compile threads here); it must still have got answers all along.
  ASSERT_GT(samples.size(), 64u * 4) << "the load hardly ran";
  int distinct = 0;
  for (const auto& [m, by_outcome] : outcomes) {
    SCOPED_TRACE("M=" + std::to_string(m));
    const auto miss = by_outcome.find(kiln::v1::CACHE_OUTCOME_MISS);
    EXPECT_EQ(miss == by_outcome.end() ? 0 : miss->second, m == 100 ? 0 : 1);
    EXPECT_EQ(keys[m].size(), 1u);
    ++distinct;
  }
  int joined = 0;
  for (const auto& [m, by_outcome] : outcomes) {
    auto it = by_outcome.find(kiln::v1::CACHE_OUTCOME_JOINED);
    if (it != by_outcome.end()) joined += it->second;
  }
  EXPECT_GT(joined, 0) << "no request ever joined a running compile";
  std::printf("load: %zu requests in %.0f s by 64 clients, %d distinct programs, %d joined; "
              "latency p50 %.2f ms p99 %.2f ms; hits p50 %.3f ms p99 %.3f ms\n",
              samples.size(), seconds, distinct, joined, Percentile(all_ms, 0.5),
              Percentile(all_ms, 0.99), Percentile(hit_ms, 0.5), Percentile(hit_ms, 0.99));
  EXPECT_EQ(daemon_->Stop(), 0) << daemon_->output();
}

TEST_F(LoadTest, KillNineMidLoadThenEverythingCompletedIsAHit) {
  ASSERT_TRUE(Start()) << daemon_->output();
  std::atomic<bool> stop{false};
  std::atomic<int64_t> completed{0};
  std::vector<Sample> samples;
  std::thread load(
      [&] { samples = RunLoad(daemon_->address(), ex_, 16, LoadSeconds(), &stop, &completed); });
  // Kill once a few programs have compiled and many requests are in flight.
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(60);
  while (completed.load() < 40 && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  daemon_->Kill();
  stop = true;
  load.join();
  std::set<int64_t> done;
  for (const Sample& s : samples) {
    if (s.status.ok()) done.insert(s.m);
  }
  ASSERT_FALSE(done.empty());
  ASSERT_TRUE(Start()) << daemon_->output();
  for (int64_t m : done) {
    SCOPED_TRACE("M=" + std::to_string(m));
    kiln::v1::CompileResponse resp;
    ASSERT_TRUE(CompileOnce(m, &resp).ok());
    EXPECT_EQ(resp.outcome(), kiln::v1::CACHE_OUTCOME_HIT);
  }
  std::printf("crash: %zu programs had compiled before kill -9; all hits after restart\n",
              done.size());
}

} // namespace
} // namespace kiln
