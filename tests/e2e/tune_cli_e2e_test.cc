// End-to-end: `kiln tune` and the --json outputs as a user reads them,
// against the real kilnd (CPU device, its kiln-worker) on a loopback port:
// the result is a ranked table with a header, results reused from the
// measurement history are marked, --json configs are plain values and 64-bit
// integers numbers, a failed --json request prints the JSON error object,
// and the progress bar fits the terminal's width.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"
#include "util/subprocess.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";
const std::string kKiln = std::string(KILN_BINARY_DIR) + "/kiln";
const std::string kAdd = std::string(KILN_SOURCE_DIR) + "/examples/elementwise/add.py";

class TuneCliE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTestDir("tune_cli_e2e_");
    ASSERT_TRUE(daemon_.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir_}))
        << daemon_.output();
  }

  util::SubprocessResult Kiln(std::vector<std::string> args,
                              std::vector<std::pair<std::string, std::string>> env = {}) {
    args.insert(args.begin(), kKiln);
    args.push_back("--server=" + daemon_.address());
    util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(180);
    o.extra_env = std::move(env);
    absl::StatusOr<util::SubprocessResult> r = util::RunSubprocess(args, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : util::SubprocessResult{};
  }

  // A CPU grid of 4 configs of examples/elementwise/add.py.
  static std::vector<std::string> AddGrid() {
    return {"tune",       kAdd,
            "--bind",     "M=77",
            "--bind",     "N=130",
            "--strategy", "grid",
            "--space",    "block_M=16,32",
            "--space",    "block_N=16,32",
            "--space",    "threads=128",
            "--target",   "cpu"};
  }

  std::string dir_;
  testing::DaemonProcess daemon_;
};

// The measured times (us) of the table's ranked rows, and whether each is
// marked as reused.
struct Row {
  double us = 0;
  bool reused = false;
};
std::vector<Row> RankedRows(const std::string& table) {
  std::vector<Row> rows;
  const std::vector<std::string> lines = absl::StrSplit(table, '\n');
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> words = absl::StrSplit(lines[i], ' ', absl::SkipWhitespace());
    // "   1*    12.25 us ..." : a rank, then the time.
    if (words.size() < 3 || words[2] != "us") break;
    absl::string_view rank = words[0];
    Row row;
    row.reused = absl::ConsumeSuffix(&rank, "*");
    int n = 0;
    if (!absl::SimpleAtoi(rank, &n) || n != static_cast<int>(rows.size()) + 1) break;
    if (!absl::SimpleAtod(words[1], &row.us)) break;
    rows.push_back(row);
  }
  return rows;
}

TEST_F(TuneCliE2ETest, RankedTableThenReusedMarkersThenPlainJson) {
  std::vector<std::string> args = AddGrid();
  args.insert(args.end(), {"--progress", "never"});
  const util::SubprocessResult first = Kiln(args);
  ASSERT_EQ(first.exit_code, 0) << first.stderr_data << daemon_.output();
  // The header, then the rows sorted by measured time, then the best.
  ASSERT_THAT(first.stdout_data, StartsWith(" rank     measured    predicted    spread  config\n"))
      << first.stdout_data;
  std::vector<Row> rows = RankedRows(first.stdout_data);
  ASSERT_EQ(rows.size(), 4u) << first.stdout_data;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_FALSE(rows[i].reused) << first.stdout_data; // a fresh daemon measured everything
    if (i > 0) {
      EXPECT_LE(rows[i - 1].us, rows[i].us) << first.stdout_data;
    }
  }
  EXPECT_THAT(first.stdout_data, HasSubstr("\nbest: block_M="));
  EXPECT_THAT(first.stdout_data, Not(HasSubstr("reused from")));

  // Again: kilnd answers from its history, and the table says so.
  const util::SubprocessResult again = Kiln(args);
  ASSERT_EQ(again.exit_code, 0) << again.stderr_data;
  rows = RankedRows(again.stdout_data);
  ASSERT_EQ(rows.size(), 4u) << again.stdout_data;
  for (const Row& r : rows) EXPECT_TRUE(r.reused) << again.stdout_data;
  EXPECT_THAT(again.stdout_data, HasSubstr("* reused from kilnd's measurement history"));

  // --json: the same ranking; configs as in --dry-run, 64-bit integers as numbers.
  args.push_back("--json");
  const util::SubprocessResult json = Kiln(args);
  ASSERT_EQ(json.exit_code, 0) << json.stderr_data;
  const nlohmann::json j = nlohmann::json::parse(json.stdout_data);
  const nlohmann::json& ms = j.at("result").at("measurements");
  ASSERT_EQ(ms.size(), 4u) << json.stdout_data;
  double last = 0;
  for (size_t i = 0; i < ms.size(); ++i) {
    const nlohmann::json& m = ms[i];
    EXPECT_EQ(m.at("rank"), static_cast<int>(i) + 1);
    EXPECT_EQ(m.at("reused"), true);
    ASSERT_TRUE(m.at("config").at("block_M").is_number_integer()) << m.dump();
    EXPECT_EQ(m.at("config").at("threads"), 128);
    ASSERT_TRUE(m.at("unix_ms").is_number_integer()) << m.dump(); // int64
    EXPECT_GT(m.at("unix_ms").get<int64_t>(), 1700000000000);
    EXPECT_GE(m.at("median_us").get<double>(), last);
    last = m.at("median_us").get<double>();
  }
  EXPECT_TRUE(j.at("result").at("best").at("config").at("block_N").is_number_integer());
  EXPECT_EQ(json.stdout_data.find("int_value"), std::string::npos) << json.stdout_data;
  EXPECT_TRUE(j.at("result").at("best").at("unix_ms").is_number_integer());

  // Other commands' --json: int64 fields are numbers there too.
  const util::SubprocessResult devices = Kiln({"devices", "--json"});
  ASSERT_EQ(devices.exit_code, 0) << devices.stderr_data;
  const nlohmann::json d = nlohmann::json::parse(devices.stdout_data).at("devices").at(0);
  EXPECT_TRUE(d.at("memory_bytes").is_number_integer()) << devices.stdout_data;
  EXPECT_GT(d.at("memory_bytes").get<int64_t>(), 0);
  const util::SubprocessResult jobs = Kiln({"jobs", "--json"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.stderr_data;
  const nlohmann::json job = nlohmann::json::parse(jobs.stdout_data).at("jobs").at(0);
  EXPECT_TRUE(job.at("created_unix_ms").is_number_integer()) << jobs.stdout_data;
  const util::SubprocessResult best =
      Kiln({"best", kAdd, "--bind", "M=77", "--bind", "N=130", "--target", "cpu", "--json"});
  ASSERT_EQ(best.exit_code, 0) << best.stderr_data;
  EXPECT_TRUE(
      nlohmann::json::parse(best.stdout_data).at("config").at("block_M").is_number_integer())
      << best.stdout_data;
}

TEST_F(TuneCliE2ETest, FailedJsonRequestsPrintTheErrorObject) {
  const std::string bad = dir_ + "_bad.py";
  {
    std::ofstream f(bad);
    f << "import tilelang.language as T\n\ndef k(M):\n    @T.prim_func\n"
         "    def main(A: T.Tensor((M,), T.float32)):\n"
         "        with T.Kernel(1, threads=32) as bx:\n            A[0] = undefined_name\n"
         "    return main\n";
  }
  for (const std::string command : {"tune", "compile"}) {
    SCOPED_TRACE(command);
    const util::SubprocessResult r =
        Kiln({command, bad, "--bind", "M=4", "--target", "cpu", "--json"});
    EXPECT_EQ(r.exit_code, 1) << r.stdout_data << r.stderr_data;
    EXPECT_THAT(r.stderr_data, HasSubstr("_bad.py:7:")); // the human message stays on stderr
    const nlohmann::json e = nlohmann::json::parse(r.stdout_data).at("error");
    EXPECT_EQ(e.at("code"), "INVALID_ARGUMENT") << r.stdout_data;
    EXPECT_THAT(e.at("message").get<std::string>(), HasSubstr("undefined_name"));
    ASSERT_EQ(e.at("diagnostics").size(), 1u) << r.stdout_data;
    EXPECT_THAT(e.at("diagnostics")[0].at("file").get<std::string>(), HasSubstr("_bad.py"));
    EXPECT_EQ(e.at("diagnostics")[0].at("line"), 7);
    EXPECT_GT(e.at("diagnostics")[0].at("col").get<int>(), 0);
  }

  // An unreachable daemon: exit 5 and the error object.
  util::SubprocessOptions o;
  o.timeout = std::chrono::seconds(60);
  absl::StatusOr<util::SubprocessResult> down = util::RunSubprocess(
      {kKiln, "devices", "--json", "--server=127.0.0.1:1", "--retries=0", "--timeout=5"}, o);
  ASSERT_TRUE(down.ok()) << down.status();
  EXPECT_EQ(down->exit_code, 5) << down->stderr_data;
  EXPECT_EQ(nlohmann::json::parse(down->stdout_data).at("error").at("code"), "UNAVAILABLE")
      << down->stdout_data;
  absl::StatusOr<util::SubprocessResult> health =
      util::RunSubprocess({kKiln, "health", "--json", "--server=127.0.0.1:1", "--timeout=5"}, o);
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->exit_code, 5) << health->stderr_data;
  EXPECT_EQ(nlohmann::json::parse(health->stdout_data).at("error").at("code"), "UNAVAILABLE")
      << health->stdout_data;
  // The local cache commands too.
  absl::StatusOr<util::SubprocessResult> cache = util::RunSubprocess(
      {kKiln, "cache", "stats", "--json", "--cache-dir", dir_ + "/no-such-cache"}, o);
  ASSERT_TRUE(cache.ok()) << cache.status();
  EXPECT_EQ(cache->exit_code, 1) << cache->stderr_data;
  EXPECT_THAT(cache->stderr_data, HasSubstr("no cache directory"));
  EXPECT_THAT(
      nlohmann::json::parse(cache->stdout_data).at("error").at("message").get<std::string>(),
      HasSubstr("no cache directory"))
      << cache->stdout_data;
}

TEST_F(TuneCliE2ETest, TheProgressBarFitsTheTerminal) {
  std::vector<std::string> args = AddGrid();
  args.insert(args.end(), {"--progress", "always"});
  const util::SubprocessResult r = Kiln(args, {{"COLUMNS", "40"}});
  ASSERT_EQ(r.exit_code, 0) << r.stderr_data;
  int draws = 0;
  for (absl::string_view part : absl::StrSplit(r.stderr_data, '\r')) {
    const size_t clear = part.find("\x1b[K");
    if (clear == absl::string_view::npos) continue; // text before the first draw
    ++draws;
    EXPECT_LT(clear, 40u) << "a redraw wider than the terminal: '" << part.substr(0, clear) << "'";
  }
  EXPECT_GE(draws, 1) << r.stderr_data;
}

} // namespace
} // namespace kiln
