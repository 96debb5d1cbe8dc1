// End-to-end: `kiln bench` against the real kilnd (CPU device, its real
// kiln-worker) on a loopback port: a program is compiled and timed, the run
// lands in the history, a second run compares with it, a run by artifact key
// works, the job is listed, and a bad program fails with its location.
#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"
#include "util/subprocess.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";
const std::string kKiln = std::string(KILN_BINARY_DIR) + "/kiln";
const std::string kAdd = std::string(KILN_SOURCE_DIR) + "/examples/elementwise/add.py";

// The value of "name": in a flat JSON object line (a number or a string).
std::string Field(const std::string& json, const std::string& name) {
  const std::string tag = "\"" + name + "\": ";
  const size_t at = json.find(tag);
  if (at == std::string::npos) return "";
  size_t start = at + tag.size();
  if (json[start] == '"') {
    const size_t end = json.find('"', start + 1);
    return json.substr(start + 1, end - start - 1);
  }
  const size_t end = json.find_first_of(",}", start);
  return json.substr(start, end - start);
}

class BenchE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTestDir("bench_e2e_");
    ASSERT_TRUE(daemon_.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir_}))
        << daemon_.output();
  }

  util::SubprocessResult Kiln(std::vector<std::string> args) {
    args.insert(args.begin(), kKiln);
    args.push_back("--server=" + daemon_.address());
    util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(120);
    absl::StatusOr<util::SubprocessResult> r = util::RunSubprocess(args, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : util::SubprocessResult{};
  }

  std::vector<std::string> AddArgs() {
    return {"bench",  kAdd,         "--bind", "M=77",       "--bind",   "N=130",
            "--bind", "block_M=16", "--bind", "block_N=64", "--target", "cpu"};
  }

  std::string dir_;
  testing::DaemonProcess daemon_;
};

TEST_F(BenchE2ETest, TimesAProgramRecordsItAndComparesTheNextRun) {
  std::vector<std::string> args = AddArgs();
  for (const char* a : {"--trials", "5", "--history", "add-small", "--compare", "--json"}) {
    args.push_back(a);
  }
  util::SubprocessResult first = Kiln(args);
  ASSERT_TRUE(first.success()) << first.stderr_data << daemon_.output();
  EXPECT_EQ(Field(first.stdout_data, "device"), "cpu");
  EXPECT_EQ(Field(first.stdout_data, "trials"), "5");
  EXPECT_EQ(Field(first.stdout_data, "verdict"), "no_baseline");
  EXPECT_GT(std::stod(Field(first.stdout_data, "median_us")), 0);
  const std::string key = Field(first.stdout_data, "key");
  ASSERT_EQ(key.size(), 64u) << first.stdout_data;

  // Generous threshold: this shared VM's noise must not fail the test.
  args.push_back("--max-slowdown=100");
  util::SubprocessResult second = Kiln(args);
  ASSERT_TRUE(second.success()) << second.stderr_data;
  EXPECT_EQ(Field(second.stdout_data, "verdict"), "pass") << second.stdout_data;
  EXPECT_NEAR(std::stod(Field(second.stdout_data, "baseline_median_us")),
              std::stod(Field(first.stdout_data, "median_us")), 1e-3);

  util::SubprocessResult by_key = Kiln({"bench", "--key", key, "--trials", "3"});
  ASSERT_TRUE(by_key.success()) << by_key.stderr_data;
  EXPECT_THAT(by_key.stdout_data, HasSubstr(key.substr(0, 12) + " on cpu"));
  EXPECT_THAT(by_key.stdout_data, HasSubstr("3 trials"));

  util::SubprocessResult jobs = Kiln({"jobs"});
  ASSERT_TRUE(jobs.success()) << jobs.stderr_data;
  EXPECT_THAT(jobs.stdout_data, HasSubstr("benchmark succeeded"));
}

TEST_F(BenchE2ETest, BadInputFailsClearly) {
  const std::string bad = dir_ + "_bad.py";
  {
    std::FILE* f = std::fopen(bad.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("import tilelang.language as T\n\ndef k(M):\n    @T.prim_func\n"
               "    def main(A: T.Tensor((M,), T.float32)):\n"
               "        with T.Kernel(1, threads=32) as bx:\n            A[0] = undefined_name\n"
               "    return main\n",
               f);
    std::fclose(f);
  }
  util::SubprocessResult r = Kiln({"bench", bad, "--bind", "M=4", "--target", "cpu"});
  EXPECT_EQ(r.exit_code, 1) << r.stdout_data << r.stderr_data;
  EXPECT_THAT(r.stderr_data, HasSubstr("_bad.py:7:"));

  util::SubprocessResult missing = Kiln({"bench", "--key", std::string(64, 'f')});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.stderr_data, HasSubstr("no artifact"));

  util::SubprocessResult usage = Kiln({"bench"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_THAT(usage.stderr_data, HasSubstr("give either FILE or --key"));
}

} // namespace
} // namespace kiln
