// Runs the bad-program corpus (tests/bad_programs/*.py): each file is a small
// TileLang program with one mistake. Its first line is
//   # EXPECT: LINE:COL: substring of the message
// and an optional second line `# BIND: NAME=VALUE ...` gives bindings. The
// compile must fail with a diagnostic located exactly at "PATH:LINE:COL: ".
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "compiler/frontend/frontend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::frontend {
namespace {

constexpr char kDir[] = KILN_SOURCE_DIR "/tests/bad_programs";

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    if (entry.path().extension() == ".py") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(BadProgramsTest, CorpusIsLargeEnough) { EXPECT_GE(CorpusFiles().size(), 45u); }

TEST(BadProgramsTest, EachFailsAtTheExpectedLocation) {
  for (const std::string& path : CorpusFiles()) {
    SCOPED_TRACE(path);
    std::string source = ReadFile(path);
    std::vector<std::string> lines = absl::StrSplit(source, '\n');
    ASSERT_GE(lines.size(), 2u);
    absl::string_view expect = lines[0];
    ASSERT_TRUE(absl::ConsumePrefix(&expect, "# EXPECT: ")) << "first line must be # EXPECT:";
    // "LINE:COL: substring"
    std::vector<std::string> parts = absl::StrSplit(expect, absl::MaxSplits(": ", 1));
    ASSERT_EQ(parts.size(), 2u) << "expected '# EXPECT: LINE:COL: substring'";
    const std::string& line_col = parts[0];
    const std::string& substring = parts[1];
    ASSERT_FALSE(substring.empty());

    FrontendOptions options;
    options.file_name = path;
    absl::string_view bind = lines[1];
    if (absl::ConsumePrefix(&bind, "# BIND: ")) {
      for (absl::string_view kv : absl::StrSplit(bind, ' ', absl::SkipEmpty())) {
        std::vector<std::string> nv = absl::StrSplit(kv, absl::MaxSplits('=', 1));
        ASSERT_EQ(nv.size(), 2u) << "bad # BIND entry";
        options.bindings.emplace_back(nv[0], ParseBindingText(nv[1]));
      }
    }
    absl::StatusOr<ir::Program> program = CompileSource(source, options);
    ASSERT_FALSE(program.ok()) << "compiled, but an error was expected";
    EXPECT_EQ(program.status().code(), absl::StatusCode::kInvalidArgument);
    std::string message(program.status().message());
    std::string prefix = path + ":" + line_col + ": ";
    EXPECT_EQ(message.rfind(prefix, 0), 0u)
        << "message: " << message << "\nwant prefix: " << prefix;
    EXPECT_THAT(message, ::testing::HasSubstr(substring));
  }
}

} // namespace
} // namespace kiln::frontend
