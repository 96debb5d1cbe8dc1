// The `# kiln: test-bind` line reader of `kiln compile --test-bind`
// (clients/cpp/bind_line.h).
#include <string>

#include "clients/cpp/bind_line.h"
#include "gtest/gtest.h"

namespace kiln::cli {
namespace {

constexpr char kSource[] = "# C = A + B\n"
                           "# kiln: bind M=8192 N=8192 block_M=32\n"
                           "# kiln: test-binding is not the line\n"
                           "# kiln: test-bind M=77  N=130\tdtype=float16 eps=1e-5\r\n"
                           "# kiln: test-bind M=1\n"
                           "import tilelang\n";

TEST(ReadBindLineTest, ReadsTheFirstLineOfTheKindInOrder) {
  absl::StatusOr<BindLineEntries> test = ReadBindLine(kSource, "add.py", "test-bind");
  ASSERT_TRUE(test.ok()) << test.status();
  const BindLineEntries want = {{"M", "77"}, {"N", "130"}, {"dtype", "float16"}, {"eps", "1e-5"}};
  EXPECT_EQ(*test, want);
  absl::StatusOr<BindLineEntries> bind = ReadBindLine(kSource, "add.py", "bind");
  ASSERT_TRUE(bind.ok()) << bind.status();
  EXPECT_EQ(*bind, (BindLineEntries{{"M", "8192"}, {"N", "8192"}, {"block_M", "32"}}));
}

TEST(ReadBindLineTest, NamesTheFileAndTheLineOfAProblem) {
  absl::StatusOr<BindLineEntries> none = ReadBindLine("import tilelang\n", "k.py", "test-bind");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(none.status().message(), "k.py has no '# kiln: test-bind' line");
  for (const char* bad : {"M", "=3", "M="}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<BindLineEntries> r =
        ReadBindLine(std::string("\n\n# kiln: test-bind N=1 ") + bad + "\n", "k.py", "test-bind");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(),
              std::string("k.py:3: bad '# kiln: test-bind' entry '") + bad + "' (want NAME=VALUE)");
  }
}

TEST(ReadBindLineTest, AnEmptyLineBindsNothing) {
  absl::StatusOr<BindLineEntries> r = ReadBindLine("# kiln: test-bind\n", "k.py", "test-bind");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->empty());
}

} // namespace
} // namespace kiln::cli
