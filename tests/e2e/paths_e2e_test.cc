// End to end: the path-taking flags of the real `kiln` binary against the
// real kilnd on a loopback port, run in a temporary working folder with HOME
// pointed at another: bare output names (`-o gemm.cubin` once failed with
// "cannot create : Invalid argument"), ./names, missing folders, `--flag=~/x`
// (which no shell expands), and unwritable targets, which fail before any
// work with the path in the message. `kiln regress run` writes its reports
// to bare names. kilnd creates its --log-file's folder and names a
// --cache-dir that lies under a regular file.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"
#include "util/subprocess.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";
const std::string kKiln = std::string(KILN_BINARY_DIR) + "/kiln";
const std::string kAdd = std::string(KILN_SOURCE_DIR) + "/examples/elementwise/add.py";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class PathsE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTestDir("paths_e2e_");
    work_ = dir_ + "/work";
    home_ = dir_ + "/home";
    fs::create_directories(work_);
    fs::create_directories(home_);
    // A regular file: a folder under it cannot be created, even by root
    // (tests run as root, where permission bits do not stop a write).
    std::ofstream(work_ + "/somefile") << "a file, not a folder\n";
    ASSERT_TRUE(daemon_.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir_ + "/cache"}))
        << daemon_.output();
  }
  // `kiln args... --server ADDR` in work_, with HOME=home_.
  util::SubprocessResult Kiln(std::vector<std::string> args, bool connect = true) {
    args.insert(args.begin(), kKiln);
    if (connect) args.push_back("--server=" + daemon_.address());
    util::SubprocessOptions o;
    o.timeout = std::chrono::seconds(300);
    o.working_dir = work_;
    o.extra_env = {{"HOME", home_}, {"KILN_CLIENT_CACHE", ""}};
    absl::StatusOr<util::SubprocessResult> r = util::RunSubprocess(args, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : util::SubprocessResult{};
  }
  // `kiln compile add.py ... --target cpu` plus `extra`.
  util::SubprocessResult Compile(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"compile", kAdd,         "--bind",   "M=77",
                                     "--bind",  "N=130",      "--bind",   "block_M=16",
                                     "--bind",  "block_N=64", "--target", "cpu"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Kiln(args);
  }

  std::string dir_, work_, home_;
  testing::DaemonProcess daemon_;
};

TEST_F(PathsE2ETest, CompileWritesBareNamesMissingFoldersAndHome) {
  util::SubprocessResult bare = Compile({"-o", "gemm.cubin"});
  ASSERT_EQ(bare.exit_code, 0) << bare.stderr_data << daemon_.output();
  const std::string bytes = ReadFile(work_ + "/gemm.cubin");
  EXPECT_FALSE(bytes.empty());

  util::SubprocessResult nested = Compile({"-o", "sub/dir/g.cubin"});
  ASSERT_EQ(nested.exit_code, 0) << nested.stderr_data;
  EXPECT_EQ(ReadFile(work_ + "/sub/dir/g.cubin"), bytes);

  util::SubprocessResult dot = Compile({"-o=./dot.so"});
  ASSERT_EQ(dot.exit_code, 0) << dot.stderr_data;
  EXPECT_EQ(ReadFile(work_ + "/dot.so"), bytes);

  // `--flag=~/x`: the shell leaves that ~ alone; kiln expands it.
  util::SubprocessResult home = Compile({"--launch-json=~/x.json", "-o=~/out/k.so", "--json"});
  ASSERT_EQ(home.exit_code, 0) << home.stderr_data;
  EXPECT_EQ(ReadFile(home_ + "/out/k.so"), bytes);
  const std::string launch = ReadFile(home_ + "/x.json");
  EXPECT_THAT(launch, HasSubstr("\"kernel_symbol\""));
  EXPECT_THAT(launch, HasSubstr("\"C\""));
  EXPECT_THAT(home.stdout_data, HasSubstr(home_ + "/out/k.so"));
  EXPECT_FALSE(fs::exists(work_ + "/~"));
  // Nothing but the outputs was left in the folders (no temporary files).
  EXPECT_EQ(std::distance(fs::directory_iterator(home_ + "/out"), fs::directory_iterator()), 1);
}

TEST_F(PathsE2ETest, CompileToAnUnwritableTargetFailsNamingIt) {
  util::SubprocessResult under_file = Compile({"-o", "somefile/g.so"});
  EXPECT_EQ(under_file.exit_code, 1) << under_file.stderr_data;
  EXPECT_THAT(under_file.stderr_data,
              HasSubstr("kiln compile: cannot write 'somefile/g.so': 'somefile' exists and is "
                        "not a folder"));

  // /sys takes no new files, not even from root.
  util::SubprocessResult sys = Compile({"--launch-json", "/sys/kiln-paths-e2e.json"});
  EXPECT_EQ(sys.exit_code, 1) << sys.stderr_data;
  EXPECT_THAT(sys.stderr_data,
              HasSubstr("cannot write '/sys/kiln-paths-e2e.json': folder '/sys' is not writable"));

  util::SubprocessResult folder = Compile({"-o", "."});
  EXPECT_EQ(folder.exit_code, 1) << folder.stderr_data;
  EXPECT_THAT(folder.stderr_data, HasSubstr("cannot write '.': it is a folder"));

  // Each was refused before the compile: the daemon's cache holds nothing.
  util::SubprocessResult stats =
      Kiln({"cache", "stats", "--cache-dir", dir_ + "/cache", "--json"}, /*connect=*/false);
  ASSERT_EQ(stats.exit_code, 0) << stats.stderr_data;
  nlohmann::json j = nlohmann::json::parse(stats.stdout_data, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << stats.stdout_data;
  EXPECT_EQ(j["artifacts"], 0) << stats.stdout_data;
}

TEST_F(PathsE2ETest, RegressWritesReportsToBareNames) {
  std::ofstream(work_ + "/suite.yaml")
      << "defaults:\n  target: cpu\n  trials: 2\n  iterations: 2\n  threshold: 50%\n"
      << "kernels:\n  - name: add-paths\n    file: " << kAdd << "\n"
      << "    bindings: {M: 64, N: 256}\n    config: {block_M: 32, block_N: 256}\n";
  util::SubprocessResult run =
      Kiln({"regress", "run", "suite.yaml", "--label", "p-1", "--junit", "junit.xml", "--markdown",
            "summary.md", "--plot-dir", "plots"});
  ASSERT_EQ(run.exit_code, 0) << run.stdout_data << run.stderr_data;
  EXPECT_THAT(ReadFile(work_ + "/junit.xml"), HasSubstr("name=\"add-paths\""));
  EXPECT_THAT(ReadFile(work_ + "/summary.md"), HasSubstr("| add-paths | "));
  EXPECT_THAT(ReadFile(work_ + "/plots/add-paths.svg"), HasSubstr("<svg "));

  // An output that cannot be written fails before any measurement (exit 2,
  // the path named), instead of after minutes of timing.
  util::SubprocessResult bad =
      Kiln({"regress", "run", "suite.yaml", "--label", "p-2", "--junit=~/reports/junit.xml",
            "--markdown", "somefile/summary.md"});
  EXPECT_EQ(bad.exit_code, 2) << bad.stdout_data << bad.stderr_data;
  EXPECT_THAT(
      bad.stderr_data,
      HasSubstr("cannot write 'somefile/summary.md': 'somefile' exists and is not a folder"));
  EXPECT_THAT(bad.stderr_data, Not(HasSubstr("trial")));
  EXPECT_TRUE(fs::is_directory(home_ + "/reports")); // ~ expanded, folder made
}

TEST(KilndPathsE2ETest, LogFileFolderIsCreatedAndACacheDirUnderAFileIsNamed) {
  const std::string dir = testing::FreshTestDir("kilnd_paths_e2e_");
  std::ofstream(dir + "/somefile") << "a file\n";
  util::SubprocessOptions o;
  o.timeout = std::chrono::seconds(60);
  absl::StatusOr<util::SubprocessResult> refused = util::RunSubprocess(
      {kKilnd, "--listen=127.0.0.1:0", "--cache-dir=" + dir + "/somefile/cache"}, o);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->exit_code, 1);
  EXPECT_THAT(refused->stdout_data + refused->stderr_data,
              HasSubstr("'" + dir + "/somefile' exists and is not a folder"));

  // The log goes to the file, so Start sees no "listening on" line: it gives
  // up at once, and the file is read instead.
  const std::string log = dir + "/logs/daemon/kilnd.log";
  testing::DaemonProcess daemon;
  daemon.Start(kKilnd,
               {"--listen=127.0.0.1:0", "--cache-dir=" + dir + "/cache", "--log-file=" + log},
               std::chrono::milliseconds(1));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (ReadFile(log).find("listening on") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_THAT(ReadFile(log), HasSubstr("listening on")) << daemon.output();
  EXPECT_EQ(daemon.Stop(), 0) << daemon.output();
}

} // namespace
} // namespace kiln
