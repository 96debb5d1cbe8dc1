// End-to-end: `kiln regress` (the real kiln binary) against the real kilnd
// on the CPU target. The same suite run under two labels passes (exit 0)
// and writes JUnit, Markdown and a plot (a threshold band, nothing red); the
// same kernel name with other bindings (another problem size) is a baseline
// mismatch (exit 2) naming the bindings; slower code with the same bindings
// is a regression (exit 1); `kiln regress history` prints the trend and,
// with --plot, draws it (for a kernel or a suite) without measuring; a
// suite naming a missing file and an unreachable daemon are infrastructure
// errors (exit 2).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"
#include "util/subprocess.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";
const std::string kKiln = std::string(KILN_BINARY_DIR) + "/kiln";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class RegressE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTestDir("regress_e2e_");
    fs::create_directories(dir_);
    ASSERT_TRUE(daemon_.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir_ + "/cache"}))
        << daemon_.output();
  }
  // A suite of one kernel, add.py at M rows; the threshold is generous
  // because this shared 2-core VM's load changes between runs (the unit
  // tests cover the verdict's fine-grained cases).
  std::string WriteSuite(const std::string& name, int m,
                         const std::string& file = std::string(KILN_SOURCE_DIR) +
                                                   "/examples/elementwise/add.py") {
    const std::string path = dir_ + "/" + name + ".yaml";
    std::ofstream(path) << "defaults:\n  target: cpu\n  trials: 4\n  iterations: 5\n"
                        << "  threshold: 50%\nkernels:\n  - name: add-ci\n    file: " << file
                        << "\n"
                        << "    bindings: {M: " << m << ", N: 1024}\n"
                        << "    config: {block_M: 32, block_N: 256}\n";
    return path;
  }
  util::SubprocessResult Kiln(std::vector<std::string> args, bool connect = true) {
    args.insert(args.begin(), kKiln);
    if (connect) args.push_back("--server=" + daemon_.address());
    util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(300);
    absl::StatusOr<util::SubprocessResult> r = util::RunSubprocess(args, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : util::SubprocessResult{};
  }

  std::string dir_;
  testing::DaemonProcess daemon_;
};

TEST_F(RegressE2ETest, SameCodePassesOtherBindingsMismatchSlowerCodeRegresses) {
  const std::string suite = WriteSuite("suite", 256);
  util::SubprocessResult first = Kiln({"regress", "run", suite, "--label", "sha-1"});
  ASSERT_EQ(first.exit_code, 0) << first.stdout_data << first.stderr_data << daemon_.output();
  EXPECT_THAT(first.stdout_data, HasSubstr("no_baseline"));

  util::SubprocessResult second =
      Kiln({"regress", "run", suite, "--label", "sha-2", "--baseline", "auto", "--junit",
            dir_ + "/junit.xml", "--markdown", dir_ + "/summary.md", "--plot-dir", dir_ + "/plots",
            "--json"});
  ASSERT_EQ(second.exit_code, 0) << second.stdout_data << second.stderr_data;
  EXPECT_THAT(second.stdout_data, HasSubstr("\"baseline_label\":\"sha-1\""));
  // Same code: a pass, or an "improvement" when this shared VM was busier
  // during sha-1 (other builds), never a regression.
  EXPECT_THAT(second.stdout_data,
              AnyOf(HasSubstr("\"verdict\":\"pass\""), HasSubstr("\"verdict\":\"improvement\"")));
  EXPECT_THAT(second.stderr_data, HasSubstr("add-ci trial 4/4"));
  const std::string junit = ReadFile(dir_ + "/junit.xml");
  EXPECT_THAT(junit, HasSubstr("<testcase classname=\"kiln.regress.suite\" name=\"add-ci\""));
  EXPECT_THAT(junit, HasSubstr("failures=\"0\""));
  EXPECT_THAT(ReadFile(dir_ + "/summary.md"), HasSubstr("| add-ci | "));
  const std::string svg = ReadFile(dir_ + "/plots/add-ci.svg");
  EXPECT_THAT(svg, HasSubstr("<svg "));
  EXPECT_THAT(svg, HasSubstr("sha-1"));
  EXPECT_THAT(svg, HasSubstr("sha-2"));
  EXPECT_THAT(svg, HasSubstr("class=\"band\"")); // sha-1's median ± 50 %
  EXPECT_THAT(svg, Not(HasSubstr("#d62728")))    // not a regression: nothing red
      << svg;

  // The same kernel name, a quarter of the rows: another problem, which
  // sha-2's runs cannot be a baseline of. Exit 2, naming the bindings.
  const std::string resized = WriteSuite("resized", 64);
  util::SubprocessResult third =
      Kiln({"regress", "run", resized, "--label", "sha-3", "--json", "--junit",
            dir_ + "/junit3.xml", "--markdown", dir_ + "/summary3.md"});
  EXPECT_EQ(third.exit_code, 2) << third.stdout_data << third.stderr_data;
  EXPECT_THAT(third.stdout_data, HasSubstr("\"verdict\":\"baseline_mismatch\""));
  EXPECT_THAT(third.stdout_data, HasSubstr("baseline sha-2's (M: 256 -> 64;"));
  EXPECT_THAT(third.stderr_data, HasSubstr("add-ci"));
  EXPECT_THAT(third.stderr_data, HasSubstr("baseline mismatch"));
  EXPECT_THAT(ReadFile(dir_ + "/junit3.xml"), HasSubstr("<error type=\"baseline_mismatch\""));
  EXPECT_THAT(ReadFile(dir_ + "/summary3.md"), HasSubstr("**baseline mismatch**"));

  // Slower code, the same bindings: a regression against sha-2.
  const std::string prog = dir_ + "/slow_add.py";
  std::ofstream(prog) << "import tilelang.language as T\n\n"
                         "def add(M, N, block_M, block_N, threads=256, dtype=T.float16):\n"
                         "    @T.prim_func\n"
                         "    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),\n"
                         "             C: T.Tensor((M, N), dtype)):\n"
                         "        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M),\n"
                         "                      threads=threads) as (bx, by):\n"
                         "            for r in T.serial(4):\n"
                         "                for i, j in T.Parallel(block_M, block_N):\n"
                         "                    row = by * block_M + i\n"
                         "                    col = bx * block_N + j\n"
                         "                    if row < M and col < N:\n"
                         "                        C[row, col] = C[row, col] * A[row, col] + "
                         "B[row, col]\n"
                         "    return main\n";
  const std::string slow = WriteSuite("slow", 256, prog);
  util::SubprocessResult fourth =
      Kiln({"regress", "run", slow, "--label", "sha-4", "--baseline", "sha-2", "--junit",
            dir_ + "/junit4.xml", "--markdown", dir_ + "/summary4.md"});
  EXPECT_EQ(fourth.exit_code, 1) << fourth.stdout_data << fourth.stderr_data;
  EXPECT_THAT(fourth.stdout_data, HasSubstr("regression"));
  EXPECT_THAT(ReadFile(dir_ + "/junit4.xml"), HasSubstr("<failure type=\"regression\""));
  EXPECT_THAT(ReadFile(dir_ + "/summary4.md"), HasSubstr("**regression**"));

  util::SubprocessResult history = Kiln({"regress", "history", "add-ci"});
  ASSERT_EQ(history.exit_code, 0) << history.stderr_data;
  const size_t a = history.stdout_data.find("sha-1"), b = history.stdout_data.find("sha-2"),
               c = history.stdout_data.find("sha-4");
  ASSERT_NE(a, std::string::npos) << history.stdout_data;
  ASSERT_NE(c, std::string::npos) << history.stdout_data;
  EXPECT_LT(a, b); // oldest first
  EXPECT_LT(b, c);
  EXPECT_THAT(history.stdout_data, HasSubstr("    4 ")); // 4 runs per label
  EXPECT_EQ(Kiln({"regress", "history", "no-such-kernel"}).exit_code, 1);
}

// `kiln regress history --plot` draws what the daemon stored, for a kernel
// or every kernel of a suite, and measures nothing.
TEST_F(RegressE2ETest, HistoryPlotDrawsTheStoredSeries) {
  const std::string suite = WriteSuite("suite", 64);
  for (const char* label : {"p-1", "p-2"}) {
    util::SubprocessResult r = Kiln({"regress", "run", suite, "--label", label});
    ASSERT_EQ(r.exit_code, 0) << r.stdout_data << r.stderr_data;
  }
  const std::string before = Kiln({"regress", "history", "add-ci", "--json"}).stdout_data;

  util::SubprocessResult plot = Kiln({"regress", "history", "add-ci", "--plot", "--plot-dir",
                                      dir_ + "/hist", "--baseline", "p-1", "--threshold", "50%"});
  ASSERT_EQ(plot.exit_code, 0) << plot.stdout_data << plot.stderr_data;
  EXPECT_THAT(plot.stdout_data, HasSubstr("p-2")); // the table too
  EXPECT_THAT(plot.stderr_data, HasSubstr("wrote " + dir_ + "/hist/add-ci.svg"));
  const std::string svg = ReadFile(dir_ + "/hist/add-ci.svg");
  EXPECT_THAT(svg, HasSubstr("add-ci on "));
  EXPECT_THAT(svg, HasSubstr("class=\"band\""));
  EXPECT_THAT(svg, HasSubstr("baseline p-1"));
  EXPECT_THAT(svg, HasSubstr("<title>p-2: "));
  EXPECT_THAT(svg, HasSubstr(" µs</text>"));

  // Every kernel of a suite, into a folder that does not exist yet.
  util::SubprocessResult all =
      Kiln({"regress", "history", suite, "--plot-dir", dir_ + "/suite-plots/new"});
  ASSERT_EQ(all.exit_code, 0) << all.stdout_data << all.stderr_data;
  EXPECT_THAT(all.stdout_data, HasSubstr("KERNEL add-ci"));
  EXPECT_THAT(ReadFile(dir_ + "/suite-plots/new/add-ci.svg"), HasSubstr("<title>p-2: "));

  // Nothing was measured: the stored history is what it was.
  EXPECT_EQ(Kiln({"regress", "history", "add-ci", "--json"}).stdout_data, before);
  EXPECT_EQ(Kiln({"regress", "history", "no-such-kernel", "--plot", "--plot-dir", dir_ + "/none"})
                .exit_code,
            1);
  EXPECT_FALSE(fs::exists(dir_ + "/none/no-such-kernel.svg"));
}

TEST_F(RegressE2ETest, InfrastructureProblemsExitTwo) {
  const std::string bad = dir_ + "/bad.yaml";
  std::ofstream(bad) << "kernels:\n  - name: missing\n    file: nowhere/k.py\n";
  util::SubprocessResult missing = Kiln({"regress", "run", bad, "--label", "x"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.stderr_data, HasSubstr("kernel missing: cannot read"));

  util::SubprocessResult usage = Kiln({"regress", "run", bad});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_THAT(usage.stderr_data, HasSubstr("--label are required"));

  // A program the compiler rejects: that kernel is an error, exit 2.
  const std::string prog = dir_ + "/broken.py";
  std::ofstream(prog) << "import tilelang.language as T\n\ndef k(M):\n    @T.prim_func\n"
                         "    def main(A: T.Tensor((M,), T.float32)):\n"
                         "        with T.Kernel(1, threads=32) as bx:\n"
                         "            A[0] = undefined_name\n    return main\n";
  const std::string broken = dir_ + "/broken.yaml";
  std::ofstream(broken) << "kernels:\n  - name: broken\n    file: broken.py\n"
                        << "    bindings: {M: 4}\n    trials: 2\n";
  util::SubprocessResult compile =
      Kiln({"regress", "run", broken, "--label", "x", "--junit", dir_ + "/j.xml"});
  EXPECT_EQ(compile.exit_code, 2) << compile.stdout_data << compile.stderr_data;
  EXPECT_THAT(compile.stderr_data, HasSubstr("broken.py:7:"));
  EXPECT_THAT(ReadFile(dir_ + "/j.xml"), HasSubstr("<error type=\"infrastructure\""));

  util::SubprocessResult down = Kiln({"regress", "run", WriteSuite("s", 64), "--label", "x",
                                      "--server=127.0.0.1:1", "--retries=0"},
                                     /*connect=*/false);
  EXPECT_EQ(down.exit_code, 2);
  EXPECT_THAT(down.stderr_data, HasSubstr("cannot reach kilnd"));
}

} // namespace
} // namespace kiln
