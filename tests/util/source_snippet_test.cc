#include <string>

#include "gtest/gtest.h"
#include "util/source_snippet.h"

namespace kiln::util {
namespace {

constexpr char kSource[] = "import tilelang\n"
                           "def f(A):\n"
                           "    T.gemmm(A)\n"
                           "\tx = 1  # tab\n"
                           "    s = 'äö' + T.bad\n";

TEST(SourceSnippet, CaretUnderTheColumn) {
  EXPECT_EQ(WithSourceSnippets("t.py:3:5: unknown TileLang name 'T.gemmm'", "t.py", kSource),
            "t.py:3:5: unknown TileLang name 'T.gemmm'\n"
            "  3 |     T.gemmm(A)\n"
            "    |     ^");
}

TEST(SourceSnippet, TabsAndMultibyteCharactersKeepTheCaretAligned) {
  EXPECT_EQ(WithSourceSnippets("t.py:4:6: x", "t.py", kSource), "t.py:4:6: x\n"
                                                                "  4 | \tx = 1  # tab\n"
                                                                "    | \t    ^");
  // 'ä' and 'ö' are two bytes each; the caret counts characters.
  // T is byte 18 of its line and character 16.
  EXPECT_EQ(WithSourceSnippets("t.py:5:18: y", "t.py", kSource), "t.py:5:18: y\n"
                                                                 "  5 |     s = 'äö' + T.bad\n"
                                                                 "    |                ^");
}

TEST(SourceSnippet, OtherFilesUnknownPositionsAndPlainLinesStayAsTheyAre) {
  EXPECT_EQ(WithSourceSnippets("u.py:3:5: elsewhere", "t.py", kSource), "u.py:3:5: elsewhere");
  EXPECT_EQ(WithSourceSnippets("t.py:99:1: past the end", "t.py", kSource),
            "t.py:99:1: past the end");
  EXPECT_EQ(WithSourceSnippets("t.py: no position", "t.py", kSource), "t.py: no position");
  EXPECT_EQ(WithSourceSnippets("t.py:0:1: zero", "t.py", kSource), "t.py:0:1: zero");
  EXPECT_EQ(WithSourceSnippets("t.py:x:1: bad", "t.py", kSource), "t.py:x:1: bad");
  EXPECT_EQ(WithSourceSnippets("plain", "t.py", kSource), "plain");
  EXPECT_EQ(WithSourceSnippets("t.py:3:5: a", "", kSource), "t.py:3:5: a");
  // A column past the end of its line puts the caret after the last character.
  EXPECT_EQ(WithSourceSnippets("t.py:1:40: eol", "t.py", kSource), "t.py:1:40: eol\n"
                                                                   "  1 | import tilelang\n"
                                                                   "    |                ^");
}

TEST(SourceSnippet, EveryLocatedLineOfAMessageGetsItsSnippet) {
  EXPECT_EQ(WithSourceSnippets("t.py:2:1: first\nnote\nt.py:3:9: second", "t.py", kSource),
            "t.py:2:1: first\n"
            "  2 | def f(A):\n"
            "    | ^\n"
            "note\n"
            "t.py:3:9: second\n"
            "  3 |     T.gemmm(A)\n"
            "    |         ^");
}

TEST(SourceSnippet, LongLinesShowAWindowAndControlCharactersBecomeSpaces) {
  std::string line = std::string(300, 'a') + "X" + std::string(300, 'b');
  std::string out = WithSourceSnippets("f:1:301: here", "f", line);
  // The window: "..." + 120 characters + "...", the caret under the X.
  const std::string shown = "...";
  ASSERT_NE(out.find("\n  1 | ..."), std::string::npos) << out;
  EXPECT_NE(out.find("...\n"), std::string::npos) << out;
  const size_t x = out.find('X');
  const size_t caret = out.find('^');
  ASSERT_NE(x, std::string::npos);
  ASSERT_NE(caret, std::string::npos);
  const size_t line_start = out.find("  1 | ");
  const size_t caret_start = out.find("    | ", line_start + 1);
  EXPECT_EQ(x - line_start, caret - caret_start) << out;
  EXPECT_LT(out.size(), 400u);
  EXPECT_EQ(WithSourceSnippets("f:1:3: c", "f", std::string("a\x01\x1b") + "b"),
            "f:1:3: c\n  1 | a  b\n    |   ^");
}

} // namespace
} // namespace kiln::util
