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

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// Hostile textual IR (issue 27, item 1): the deepest program the IR accepts
// compiles with a 1 MiB stack (half the smallest thread stack kilnd gets;
// 16 MiB under ASan),
// and deeper or longer ones are a located error (exit 1), in bounded time
// and memory. A 16 MB text of one-byte tokens took 2.7 GB and 5 s before
// its first error.
TEST(KilnOptTest, HostileIrTextIsALocatedErrorInBoundedStackAndMemory) {
  absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-opt-deep");
  ASSERT_TRUE(dir.ok()) << dir.status();
  auto program = [](const std::string& body) {
    return "program @deep {\n  sym M: int32\n  param A: global float32[M]\n"
           "  param B: global float32[M] out\n"
           "  kernel grid((M + 63) // 64) threads(64) as (bx) {\n" +
           body + "\n  }\n}\n";
  };
  std::string nest_open, nest_close;
  for (int i = 0; i < 200; ++i) {
    nest_open += i % 2 ? "if bx < " + std::to_string(i) + " { "
                       : "for i" + std::to_string(i) + " in serial(2) { ";
    nest_close += " }";
  }
  const std::string chain = "A[0]" + Repeat(" + A[0]", 254); // 256 levels
  struct Case {
    std::string name;
    std::string text;
    int exit_code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"deepest accepted",
       program(nest_open + "B[0] = " + Repeat("(", 560) + chain + Repeat(")", 560) + nest_close), 0,
       ""},
      {"chain of 10^5 operators", program("B[0] = A[0]" + Repeat(" + 1.0", 100000)), 1,
       "deep.kir:6:1537: nesting too deep (more than 256 levels)"},
      {"25,000 nested blocks", program(Repeat("for i in serial(2) { ", 25000)), 1,
       "deep.kir:6:5375: nesting too deep (more than 256 levels)"},
      // One load with 5.6 million indices: shallow, 16 MB, 11 million tokens.
      {"16 MB of tokens", program("B[0] = A[" + Repeat("0, ", 5600000) + "0]"), 1,
       "deep.kir:6:393148: program text too long (more than 262144 tokens)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string file = dir->path() + "/deep.kir";
    {
      std::ofstream out(file, std::ios::binary);
      out << c.text;
    }
    util::SubprocessOptions options;
    options.timeout = std::chrono::seconds(120);
    if (!kSanitized) options.memory_limit_bytes = int64_t{1} << 30;
    // ASan's frames are several times larger (docs/design/ir-text.md: the
    // whole pipeline is given 16 MiB there, as in deep_ir_test).
    const std::string stack_kib = kSanitized ? "16384" : "1024";
    absl::StatusOr<util::SubprocessResult> run = util::RunSubprocess(
        {"/bin/sh", "-c", "ulimit -s " + stack_kib + " && exec \"$0\" \"$@\"",
         std::string(KILN_BINARY_DIR) + "/kiln-opt", file, "--emit=cpp", "--target", "cpu"},
        options);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_TRUE(run->exited) << "signal " << run->term_signal;
    EXPECT_EQ(run->exit_code, c.exit_code) << run->stderr_data.substr(0, 2000);
    if (c.exit_code != 0) {
      // The located line, then the source line quoted around the column
      // (a window of it: the line is megabytes long) with a caret.
      const std::string first = file.substr(0, file.size() - 8) + c.message + "\n";
      EXPECT_EQ(run->stderr_data.substr(0, first.size()), first);
      EXPECT_THAT(run->stderr_data.substr(first.size()), ::testing::StartsWith("  6 | "));
      EXPECT_LT(run->stderr_data.size(), first.size() + 400) << run->stderr_data.substr(0, 2000);
    } else {
      EXPECT_THAT(run->stdout_data, HasSubstr("B[0]"));
    }
  }
}

} // namespace
} // namespace kiln::tools
