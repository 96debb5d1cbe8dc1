#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "clients/cpp/remote/tune_report.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::cli {
namespace {

namespace pb = kiln::v1;
using ::testing::HasSubstr;
using ::testing::StartsWith;

pb::Measurement* Add(pb::TuneResult& r, int block_m, pb::Measurement::Status status, double us,
                     int64_t unix_ms, double predicted = 0, const std::string& error = "") {
  pb::Measurement* m = r.add_measurements();
  (*m->mutable_config())["block_M"].set_int_value(block_m);
  (*m->mutable_config())["threads"].set_int_value(256);
  m->set_status(status);
  m->set_median_us(us);
  m->set_stddev_us(us / 100);
  m->set_predicted_us(predicted);
  m->set_unix_ms(unix_ms);
  m->set_error(error);
  m->set_device_id("cpu");
  m->set_device_model("Test CPU");
  m->set_key(std::string(64, 'a' + static_cast<char>(block_m % 26)));
  return m;
}

// The server's order (completion order), not the ranking.
pb::TuneResult Sweep() {
  pb::TuneResult r;
  Add(r, 64, pb::Measurement::STATUS_OK, 30.5, 2000, 25);
  Add(r, 8, pb::Measurement::STATUS_COMPILE_ERROR, 0, 2100, 0, "a.py:3:4: too big\nmore");
  Add(r, 16, pb::Measurement::STATUS_OK, 12.25, 1000, 10); // from an earlier sweep
  Add(r, 32, pb::Measurement::STATUS_OK, 20, 2200, 0);
  Add(r, 4, pb::Measurement::STATUS_WRONG_RESULT, 0, 900, 0, "measured earlier: wrong_result");
  *r.mutable_best() = r.measurements(2);
  return r;
}

TEST(TuneReport, RanksByMeasuredTimeThenFailuresByKind) {
  const pb::TuneResult r = Sweep();
  EXPECT_EQ(RankOrder(r), (std::vector<int>{2, 3, 0, 1, 4}));
}

TEST(TuneReport, ReusedIsWhatPredatesTheSweep) {
  const pb::TuneResult r = Sweep();
  EXPECT_EQ(ReusedFromHistory(r, 1500), (std::vector<bool>{false, false, true, false, true}));
  // The job's time unknown: only what kilnd's error says.
  EXPECT_EQ(ReusedFromHistory(r, 0), (std::vector<bool>{false, false, false, false, true}));
}

TEST(TuneReport, TableHasAHeaderSortedRowsFailuresAndTheBest) {
  const pb::TuneResult r = Sweep();
  std::ostringstream out;
  PrintTuneTable(r, ReusedFromHistory(r, 1500), out);
  const std::vector<std::string> lines = absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 9u) << out.str();
  EXPECT_EQ(lines[0], " rank     measured    predicted    spread  config");
  EXPECT_EQ(lines[1], "   1*     12.25 us     10.00 us    +-1.0%  block_M=16 threads=256");
  EXPECT_EQ(lines[2], "   2      20.00 us            -    +-1.0%  block_M=32 threads=256");
  EXPECT_EQ(lines[3], "   3      30.50 us     25.00 us    +-1.0%  block_M=64 threads=256");
  EXPECT_EQ(lines[4], "failed: 2");
  EXPECT_EQ(lines[5], "       compile_error    block_M=8 threads=256  (a.py:3:4: too big)");
  EXPECT_EQ(lines[6], "    *  wrong_result     block_M=4 threads=256  (measured earlier: "
                      "wrong_result)");
  EXPECT_THAT(lines[7], StartsWith("best: block_M=16 threads=256  12.25 us on cpu (Test CPU), "
                                   "artifact qqqqqqqqqqqq"));
  EXPECT_THAT(lines[8], StartsWith("* reused from kilnd's measurement history"));
}

TEST(TuneReport, NoMarkersNoLegendAndNoBest) {
  pb::TuneResult r;
  Add(r, 8, pb::Measurement::STATUS_TIMEOUT, 0, 2000);
  std::ostringstream out;
  PrintTuneTable(r, ReusedFromHistory(r, 1000), out);
  EXPECT_EQ(out.str(), "failed: 1\n       timeout          block_M=8 threads=256\n"
                       "no valid config: every candidate failed\n");
}

TEST(TuneReport, JsonIsRankedWithPlainConfigsAndNumbers) {
  const pb::TuneResult r = Sweep();
  const OrderedJson j = TuneResultJson("job-7", r, ReusedFromHistory(r, 1500));
  EXPECT_EQ(j.at("job_id"), "job-7");
  const OrderedJson& ms = j.at("result").at("measurements");
  ASSERT_EQ(ms.size(), 5u);
  EXPECT_EQ(ms[0].at("rank"), 1);
  EXPECT_EQ(ms[0].at("reused"), true);
  EXPECT_EQ(ms[0].at("config"), OrderedJson::parse(R"({"block_M": 16, "threads": 256})"));
  EXPECT_EQ(ms[0].at("unix_ms"), 1000);
  EXPECT_EQ(ms[1].at("rank"), 2);
  EXPECT_EQ(ms[1].at("reused"), false);
  EXPECT_TRUE(ms[3].at("rank").is_null());
  EXPECT_EQ(ms[3].at("status"), "STATUS_COMPILE_ERROR");
  EXPECT_EQ(j.at("result").at("best").at("config").at("block_M"), 16);
  EXPECT_EQ(Dump(j).find("int_value"), std::string::npos);
}

} // namespace
} // namespace kiln::cli
