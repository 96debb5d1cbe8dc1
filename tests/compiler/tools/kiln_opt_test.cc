// kiln-opt's output paths, with the real binary as a child process in a
// temporary working folder and HOME pointed at another: a bare -o name,
// missing folders created, `-o=~/x` and `--launch-json=~/x` (no shell expands
// a ~ after '='), and a path that cannot be written (exit 2, named).
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/passes/target.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/subprocess.h"
#include "util/temp_dir.h"

namespace kiln::tools {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kAdd = std::string(KILN_SOURCE_DIR) + "/examples/elementwise/add.py";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class KilnOptPathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-opt-test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_.emplace(*std::move(dir));
    fs::create_directory(Path("cwd"));
    fs::create_directory(Path("home"));
  }
  std::string Path(const std::string& name) const { return dir_->path() + "/" + name; }

  // kiln-opt add.py --test-bind `args...` in cwd/ with HOME=home/.
  util::SubprocessResult Run(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {std::string(KILN_BINARY_DIR) + "/kiln-opt", kAdd,
                                     "--test-bind"};
    argv.insert(argv.end(), args.begin(), args.end());
    util::SubprocessOptions options;
    options.timeout = std::chrono::seconds(120);
    options.working_dir = Path("cwd");
    options.extra_env = {{"HOME", Path("home")}};
    absl::StatusOr<util::SubprocessResult> run = util::RunSubprocess(argv, options);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.ok() ? *run : util::SubprocessResult{};
  }

  std::optional<util::TempDir> dir_;
};

TEST_F(KilnOptPathsTest, OutputsGoWhereTheUserSaid) {
  util::SubprocessResult printed = Run({});
  ASSERT_EQ(printed.exit_code, 0) << printed.stderr_data;
  const std::string ir = printed.stdout_data;
  ASSERT_THAT(ir, HasSubstr("program "));

  struct Case {
    std::vector<std::string> args;
    std::string written; // relative to the test folder
  };
  const Case cases[] = {
      {{"-o", "add.kir"}, "cwd/add.kir"},
      {{"-o", "./dot.kir"}, "cwd/dot.kir"},
      {{"-o", "sub/dir/add.kir"}, "cwd/sub/dir/add.kir"},
      {{"-o=~/ir/add.kir"}, "home/ir/add.kir"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.written);
    util::SubprocessResult run = Run(c.args);
    ASSERT_EQ(run.exit_code, 0) << run.stderr_data;
    EXPECT_EQ(ReadFile(Path(c.written)), ir);
  }
  EXPECT_FALSE(fs::exists(Path("cwd/~")));

  util::SubprocessResult cpp =
      Run({"--emit=cpp", "--target", "cpu", "-o", "gen/add.cc", "--launch-json=~/launch/add.json"});
  ASSERT_EQ(cpp.exit_code, 0) << cpp.stderr_data;
  EXPECT_THAT(ReadFile(Path("cwd/gen/add.cc")), HasSubstr("kiln_kernel"));
  EXPECT_THAT(ReadFile(Path("home/launch/add.json")), HasSubstr("\"symbol\": \"kiln_kernel\""));
}

TEST_F(KilnOptPathsTest, AnUnwritableOutputIsExit2NamingThePath) {
  // A regular file where a folder should be: tests run as root, where
  // permission bits do not stop a write.
  std::ofstream(Path("cwd/somefile")) << "a file";
  util::SubprocessResult run = Run({"-o", "somefile/add.kir"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.stderr_data, HasSubstr("kiln-opt: cannot write 'somefile/add.kir': 'somefile' "
                                         "exists and is not a folder"));
  run = Run({"--emit=cpp", "--target", "cpu", "--launch-json", "/sys/kiln-opt-test.json"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.stderr_data,
              HasSubstr("cannot write '/sys/kiln-opt-test.json': folder '/sys' is not writable"));
  EXPECT_TRUE(run.stdout_data.empty()) << run.stdout_data; // failed before the work
  EXPECT_EQ(ReadFile(Path("cwd/somefile")), "a file");
}

TEST(KilnOptTest, ListsTheSupportedTargets) {
  // The one list (passes::SupportedTargets), one target a line.
  util::SubprocessOptions options;
  options.timeout = std::chrono::seconds(60);
  absl::StatusOr<util::SubprocessResult> run =
      util::RunSubprocess({std::string(KILN_BINARY_DIR) + "/kiln-opt", "--list-targets"}, options);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 0) << run->stderr_data;
  std::string expected;
  for (const std::string& t : passes::SupportedTargets()) expected += t + "\n";
  EXPECT_EQ(run->stdout_data, expected);
}

} // namespace
} // namespace kiln::tools
