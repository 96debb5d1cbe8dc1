#include <string>

#include "gtest/gtest.h"
#include "util/utf8.h"

namespace kiln::util {
namespace {

TEST(Utf8Test, ValidatesAndRepairsPerUnicodeRecommendation) {
  const std::string kFffd = "\xEF\xBF\xBD";
  struct Case {
    std::string input;
    bool valid;
    std::string repaired;
  };
  const Case cases[] = {
      {"", true, ""},
      {"plain ascii", true, "plain ascii"},
      {"caf\xC3\xA9", true, "caf\xC3\xA9"},                       // U+00E9
      {"\xE2\x82\xAC", true, "\xE2\x82\xAC"},                     // U+20AC
      {"\xF0\x9F\x94\xA5", true, "\xF0\x9F\x94\xA5"},             // U+1F525
      {"\xF4\x8F\xBF\xBF", true, "\xF4\x8F\xBF\xBF"},             // U+10FFFF
      {std::string("a\0b", 3), true, std::string("a\0b", 3)},     // NUL is valid UTF-8
      {"\x80", false, kFffd},                                     // stray continuation
      {"\xC0\xAF", false, kFffd + kFffd},                         // overlong '/', C0 never valid
      {"\xE0\x80\xAF", false, kFffd + kFffd + kFffd},             // overlong, E0 needs A0..BF
      {"\xED\xA0\x80", false, kFffd + kFffd + kFffd},             // surrogate U+D800
      {"\xF4\x90\x80\x80", false, kFffd + kFffd + kFffd + kFffd}, // above U+10FFFF
      {"\xF5\x80", false, kFffd + kFffd},                         // F5 never valid
      {"\xE2\x82", false, kFffd},                                 // truncated: one maximal subpart
      {"\xE2\x82x", false, kFffd + "x"},                          // cut short by ASCII
      {"ok\xF0\x9F\x94", false, "ok" + kFffd},                    // truncated at the end
      {"\xC3\xA9\xFF\xC3\xA9", false, "\xC3\xA9" + kFffd + "\xC3\xA9"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::PrintToString(c.input));
    EXPECT_EQ(IsValidUtf8(c.input), c.valid);
    EXPECT_EQ(ToValidUtf8(c.input), c.repaired);
    EXPECT_TRUE(IsValidUtf8(ToValidUtf8(c.input)));
  }
}

TEST(Utf8Test, AppendKeepsWhatIsThere) {
  std::string out = "prefix:";
  AppendValidUtf8(out, "x\xFFy");
  EXPECT_EQ(out, "prefix:x\xEF\xBF\xBDy");
}

} // namespace
} // namespace kiln::util
