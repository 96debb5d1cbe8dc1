// Micro-benchmark results per device model (server/device_profiles.h) with
// the real pieces: the device pool's CPU worker and a cache directory. The
// first Get that may measure runs the probes and stores them; another
// DeviceProfiles on the same cache (a restarted daemon) reads them back
// without measuring; Annotate never measures; a damaged row is measured
// again and replaced; with measuring off nothing runs; a Kiln upgrade
// measures again.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "cache/cache.h"
#include "cache/sqlite_db.h"
#include "gtest/gtest.h"
#include "server/device_pool.h"
#include "server/device_profiles.h"
#include "server/roller_planner.h"
#include "tests/support/example_loader.h"
#include "tuner/arch/arch_model.h"
#include "util/temp_dir.h"

namespace kiln::server {
namespace {

namespace pb = kiln::v1;

constexpr char kWorker[] = KILN_BINARY_DIR "/kiln-worker";

class DeviceProfilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-profiles-test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<util::TempDir>(*std::move(dir));
    OpenCache();
    DevicePoolOptions dp;
    dp.worker_path = kWorker;
    dp.discover_gpus = false;
    absl::StatusOr<std::unique_ptr<DevicePool>> devices = DevicePool::Start(std::move(dp));
    ASSERT_TRUE(devices.ok()) << devices.status();
    devices_ = *std::move(devices);
    cpu_ = devices_->Devices().at(0);
    ASSERT_EQ(cpu_.id(), "cpu");
    options_.microbench.copy_bytes = 16 << 20;
    options_.microbench.repeats = 3;
  }

  void OpenCache() {
    cache_.reset();
    absl::StatusOr<std::unique_ptr<cache::Cache>> c = cache::Cache::Open(dir_->path());
    ASSERT_TRUE(c.ok()) << c.status();
    cache_ = *std::move(c);
  }

  std::unique_ptr<util::TempDir> dir_;
  std::unique_ptr<cache::Cache> cache_;
  std::unique_ptr<DevicePool> devices_;
  pb::Device cpu_;
  DeviceProfilesOptions options_;
};

TEST_F(DeviceProfilesTest, MeasuresOnceStoresAndARestartReusesTheResult) {
  EXPECT_FALSE(cpu_.driver_version().empty()); // the pool keeps describe's driver
  double dram = 0;
  {
    DeviceProfiles profiles(devices_.get(), cache_.get(), "test-1", options_);
    std::vector<pb::Device> listed = devices_->Devices();
    profiles.Annotate(listed);
    EXPECT_EQ(listed.at(0).measured().state(), "pending");
    EXPECT_EQ(profiles.measurements_run(), 0); // Annotate never measures
    EXPECT_EQ(profiles.Get(cpu_, /*measure_if_missing=*/false).state(), "pending");

    const pb::DeviceMeasurements m = profiles.Get(cpu_, /*measure_if_missing=*/true);
    EXPECT_EQ(m.state(), "measured") << m.note();
    EXPECT_GT(m.dram_gbs(), 0.1);
    EXPECT_EQ(m.mma_f16_tflops(), 0);
    EXPECT_NE(m.note().find("no tensor cores"), std::string::npos) << m.note();
    EXPECT_FALSE(m.from_cache());
    EXPECT_EQ(profiles.measurements_run(), 1);
    dram = m.dram_gbs();
    // Again: from memory.
    EXPECT_EQ(profiles.Get(cpu_, true).dram_gbs(), dram);
    EXPECT_EQ(profiles.measurements_run(), 1);
    listed = devices_->Devices();
    profiles.Annotate(listed);
    EXPECT_EQ(listed.at(0).measured().dram_gbs(), dram);
  }
  absl::StatusOr<cache::DeviceProfile> row =
      cache_->device_profiles().Get(cpu_.model(), cpu_.driver_version(), "test-1");
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_EQ(row->values.at("dram_gbs"), dram);

  // A restarted daemon on the same cache.
  OpenCache();
  DeviceProfiles restarted(devices_.get(), cache_.get(), "test-1", options_);
  std::vector<pb::Device> listed = devices_->Devices();
  restarted.Annotate(listed);
  EXPECT_EQ(listed.at(0).measured().state(), "measured");
  EXPECT_TRUE(listed.at(0).measured().from_cache());
  const pb::DeviceMeasurements again = restarted.Get(cpu_, true);
  EXPECT_EQ(again.dram_gbs(), dram);
  EXPECT_TRUE(again.from_cache());
  EXPECT_EQ(restarted.measurements_run(), 0);

  // Another Kiln version measures for itself.
  DeviceProfiles upgraded(devices_.get(), cache_.get(), "test-2", options_);
  EXPECT_FALSE(upgraded.Get(cpu_, true).from_cache());
  EXPECT_EQ(upgraded.measurements_run(), 1);
}

TEST_F(DeviceProfilesTest, ADamagedRowIsMeasuredAgainAndReplaced) {
  {
    DeviceProfiles profiles(devices_.get(), cache_.get(), "test-1", options_);
    ASSERT_EQ(profiles.Get(cpu_, true).state(), "measured");
  }
  cache_.reset();
  {
    absl::StatusOr<std::unique_ptr<cache::SqliteDb>> db =
        cache::SqliteDb::Open(dir_->path() + "/index.sqlite", false, {});
    ASSERT_TRUE(db.ok()) << db.status();
    ASSERT_TRUE((*db)->Exec("UPDATE device_profiles SET values_json = 'garbage'").ok());
  }
  OpenCache();
  DeviceProfiles profiles(devices_.get(), cache_.get(), "test-1", options_);
  std::vector<pb::Device> listed = devices_->Devices();
  profiles.Annotate(listed);
  EXPECT_EQ(listed.at(0).measured().state(), "pending"); // unreadable: as if missing
  const pb::DeviceMeasurements m = profiles.Get(cpu_, true);
  EXPECT_EQ(m.state(), "measured");
  EXPECT_FALSE(m.from_cache());
  EXPECT_EQ(profiles.measurements_run(), 1);
  EXPECT_TRUE(cache_->device_profiles().Get(cpu_.model(), cpu_.driver_version(), "test-1").ok());
}

TEST_F(DeviceProfilesTest, WithMeasuringOffOrNoDevicesNothingRuns) {
  DeviceProfilesOptions off = options_;
  off.measure = false;
  DeviceProfiles profiles(devices_.get(), cache_.get(), "test-1", off);
  EXPECT_EQ(profiles.Get(cpu_, true).state(), "pending");
  EXPECT_EQ(profiles.measurements_run(), 0);
  DeviceProfiles none(nullptr, nullptr, "test-1", options_);
  EXPECT_EQ(none.Get(cpu_, true).state(), "pending");
}

TEST_F(DeviceProfilesTest, AnUnavailableDeviceFailsTheMeasurementNotTheCaller) {
  DeviceProfiles profiles(devices_.get(), cache_.get(), "test-1", options_);
  pb::Device gone = cpu_;
  gone.set_id("cuda:7"); // no such worker in the pool
  const pb::DeviceMeasurements m = profiles.Get(gone, true);
  EXPECT_EQ(m.state(), "failed");
  EXPECT_NE(m.note().find("unavailable"), std::string::npos) << m.note();
  // Nothing measured is not stored: a restart tries again.
  EXPECT_EQ(
      cache_->device_profiles().Get(gone.model(), gone.driver_version(), "test-1").status().code(),
      absl::StatusCode::kNotFound);
  // This process does not retry on every call, only after retry_failed_after.
  EXPECT_EQ(profiles.Get(gone, true).state(), "failed");
  EXPECT_EQ(profiles.measurements_run(), 1);
  DeviceProfilesOptions eager = options_;
  eager.retry_failed_after = absl::ZeroDuration();
  DeviceProfiles retrying(devices_.get(), cache_.get(), "test-1", eager);
  EXPECT_EQ(retrying.Get(gone, true).state(), "failed");
  absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(retrying.Get(gone, true).state(), "failed");
  EXPECT_EQ(retrying.measurements_run(), 2);
}

TEST_F(DeviceProfilesTest, TheRollerPlannerUsesTheMeasuredBandwidth) {
  testing::ExampleFile ex =
      testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/elementwise/add.py");
  pb::TuneRequest r;
  r.mutable_program()->set_tilelang_source(ex.source);
  r.mutable_program()->set_file_name(ex.rel_path);
  for (const auto& [k, v] : {std::pair{"M", 4096}, std::pair{"N", 4096}}) {
    (*r.mutable_program()->mutable_bindings())[k].set_int_value(v);
  }
  r.set_target("cpu");
  r.set_strategy(pb::TUNE_STRATEGY_ROLLER);
  r.mutable_budget()->set_max_candidates(1);
  absl::StatusOr<std::vector<TuneCandidate>> preset = RollerPlanner(r, cpu_);
  ASSERT_TRUE(preset.ok()) << preset.status();
  ASSERT_EQ(preset->size(), 1u);
  // A memory-bound program predicted at a tenth of the preset's bandwidth
  // takes longer; nothing measured (pending) changes nothing.
  pb::DeviceMeasurements slow;
  slow.set_state("measured");
  slow.set_dram_gbs(arch::FindPreset("cpu")->dram_gbs / 10);
  absl::StatusOr<std::vector<TuneCandidate>> measured = RollerPlannerMeasured(r, cpu_, &slow);
  ASSERT_TRUE(measured.ok()) << measured.status();
  ASSERT_EQ(measured->size(), 1u);
  EXPECT_GT(measured->front().predicted_us, 2 * preset->front().predicted_us);
  pb::DeviceMeasurements pending;
  pending.set_state("pending");
  absl::StatusOr<std::vector<TuneCandidate>> same = RollerPlannerMeasured(r, cpu_, &pending);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->front().predicted_us, preset->front().predicted_us);
}

} // namespace
} // namespace kiln::server
