// The micro-benchmark results store (cache/device_profile_log.h): rows round
// trip and survive reopening the cache; the key is (model, driver, Kiln
// version); a damaged row reads as kCorrupt (DataLoss) and a Put replaces
// it; bad values are refused on the way in.
#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "cache/cache.h"
#include "cache/device_profile_log.h"
#include "cache/sqlite_db.h"
#include "gtest/gtest.h"

namespace kiln::cache {
namespace {

std::string FreshDir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "device_profile_log_" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

DeviceProfile H200(double dram) {
  DeviceProfile p;
  p.device_model = "NVIDIA H200";
  p.driver = "13.0";
  p.kiln_version = "0.9.0";
  p.state = "measured";
  p.values = {{"dram_gbs", dram}, {"mma_f16_tflops", 612.5}};
  p.note = "";
  return p;
}

TEST(DeviceProfileLogTest, RoundTripsAndSurvivesReopening) {
  const std::string dir = FreshDir("roundtrip");
  {
    absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_TRUE((*c)->device_profiles().Put(H200(4012.25)).ok());
    DeviceProfile cpu;
    cpu.device_model = "host CPU";
    cpu.driver = "6.1.0";
    cpu.kiln_version = "0.9.0";
    cpu.state = "measured";
    cpu.values = {{"dram_gbs", 11.5}};
    cpu.note = "mma_f16_tflops: not measured: the CPU device has no tensor cores";
    cpu.measured_unix_ms = 1234;
    ASSERT_TRUE((*c)->device_profiles().Put(cpu).ok());
  }
  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir);
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<DeviceProfile> p = (*c)->device_profiles().Get("NVIDIA H200", "13.0", "0.9.0");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->state, "measured");
  EXPECT_DOUBLE_EQ(p->values.at("dram_gbs"), 4012.25);
  EXPECT_DOUBLE_EQ(p->values.at("mma_f16_tflops"), 612.5);
  EXPECT_GT(p->measured_unix_ms, 1'600'000'000'000); // 0 on Put means now
  absl::StatusOr<DeviceProfile> cpu = (*c)->device_profiles().Get("host CPU", "6.1.0", "0.9.0");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->values.size(), 1u);
  EXPECT_EQ(cpu->measured_unix_ms, 1234);
  EXPECT_NE(cpu->note.find("no tensor cores"), std::string::npos);

  absl::StatusOr<std::vector<DeviceProfile>> all = (*c)->device_profiles().List();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].device_model, "NVIDIA H200");
  EXPECT_EQ((*all)[1].device_model, "host CPU");
}

TEST(DeviceProfileLogTest, KeyedByModelDriverAndKilnVersion) {
  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(FreshDir("key"));
  ASSERT_TRUE(c.ok()) << c.status();
  DeviceProfileLog& log = (*c)->device_profiles();
  ASSERT_TRUE(log.Put(H200(4000)).ok());
  for (const auto& [model, driver, kiln] :
       {std::tuple{"NVIDIA H100", "13.0", "0.9.0"}, std::tuple{"NVIDIA H200", "12.8", "0.9.0"},
        std::tuple{"NVIDIA H200", "13.0", "0.9.1"}}) {
    SCOPED_TRACE(absl::StrCat(model, " ", driver, " ", kiln));
    EXPECT_EQ(log.Get(model, driver, kiln).status().code(), absl::StatusCode::kNotFound);
  }
  ASSERT_TRUE(log.Put(H200(4100)).ok()); // replaces
  absl::StatusOr<DeviceProfile> p = log.Get("NVIDIA H200", "13.0", "0.9.0");
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(p->values.at("dram_gbs"), 4100);
  absl::StatusOr<std::vector<DeviceProfile>> all = log.List();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);
}

TEST(DeviceProfileLogTest, CorruptRowsReadAsDataLossAndAreReplacedByPut) {
  const std::string dir = FreshDir("corrupt");
  struct Case {
    const char* name;
    const char* values_json;
  };
  for (const Case& k : {Case{"not json", "{dram_gbs: 4000"}, Case{"not an object", "[1, 2]"},
                        Case{"a string value", R"({"dram_gbs": "fast"})"},
                        Case{"a negative value", R"({"dram_gbs": -4.0})"},
                        Case{"a zero value", R"({"mma_f16_tflops": 0})"}}) {
    SCOPED_TRACE(k.name);
    {
      absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir);
      ASSERT_TRUE(c.ok()) << c.status();
      ASSERT_TRUE((*c)->device_profiles().Put(H200(4000)).ok());
    }
    {
      // Damage the row behind the cache's back, as a crash or a hand edit might.
      absl::StatusOr<std::unique_ptr<SqliteDb>> db =
          SqliteDb::Open(dir + "/index.sqlite", false, {});
      ASSERT_TRUE(db.ok()) << db.status();
      absl::StatusOr<Statement> st = (*db)->Prepare("UPDATE device_profiles SET values_json = ?1");
      ASSERT_TRUE(st.ok());
      st->Bind(1, std::string_view(k.values_json));
      ASSERT_TRUE(st->Run().ok());
    }
    absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir);
    ASSERT_TRUE(c.ok()) << c.status();
    absl::StatusOr<DeviceProfile> p = (*c)->device_profiles().Get("NVIDIA H200", "13.0", "0.9.0");
    EXPECT_EQ(p.status().code(), absl::StatusCode::kDataLoss) << p.status();
    absl::StatusOr<std::vector<DeviceProfile>> all = (*c)->device_profiles().List();
    ASSERT_TRUE(all.ok());
    EXPECT_TRUE(all->empty()); // left out, not an error for the whole list
    ASSERT_TRUE((*c)->device_profiles().Put(H200(3900)).ok());
    p = (*c)->device_profiles().Get("NVIDIA H200", "13.0", "0.9.0");
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_DOUBLE_EQ(p->values.at("dram_gbs"), 3900);
  }
}

TEST(DeviceProfileLogTest, RefusesBadValues) {
  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(FreshDir("bad"));
  ASSERT_TRUE(c.ok()) << c.status();
  DeviceProfileLog& log = (*c)->device_profiles();
  DeviceProfile no_model = H200(1);
  no_model.device_model.clear();
  EXPECT_EQ(log.Put(no_model).code(), absl::StatusCode::kInvalidArgument);
  for (double bad : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(log.Put(H200(bad)).code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(log.Get("NVIDIA H200", "13.0", "0.9.0").status().code(), absl::StatusCode::kNotFound);
}

} // namespace
} // namespace kiln::cache
