#include <cstdlib>
#include <sstream>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/str_split.h"
#include "clients/cpp/remote/tune_progress.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

kiln::v1::TuneProgress Progress(int total, int compiled, int measured, int failed, double best_us,
                                double elapsed) {
  kiln::v1::TuneProgress p;
  p.set_candidates_total(total);
  p.set_candidates_compiled(compiled);
  p.set_candidates_measured(measured);
  p.set_candidates_failed(failed);
  p.set_elapsed_seconds(elapsed);
  if (best_us > 0) {
    p.mutable_best_so_far()->set_median_us(best_us);
    (*p.mutable_best_so_far()->mutable_config())["block_M"].set_int_value(128);
  }
  return p;
}

TEST(ProgressBarLine, AlwaysShorterThanTheTerminal) {
  // The widest numbers a sweep shows, and a small one.
  const kiln::v1::TuneProgress big = Progress(100000, 99999, 88888, 11111, 123456789.25, 98765.4);
  const kiln::v1::TuneProgress small = Progress(12, 9, 7, 0, 349.3, 12.3);
  for (const kiln::v1::TuneProgress* p : {&big, &small}) {
    for (int columns = 0; columns <= 200; ++columns) {
      SCOPED_TRACE(columns);
      const std::string line = ProgressBarLine(*p, columns);
      EXPECT_LT(static_cast<int>(line.size()), std::max(columns, 1)) << line;
      EXPECT_EQ(line.find('\n'), std::string::npos);
    }
  }
}

TEST(ProgressBarLine, ShrinksTheBarThenTheDetails) {
  const kiln::v1::TuneProgress p = Progress(12, 9, 7, 1, 349.3, 12.3);
  // Wide: the full 30-column bar and every detail.
  const std::string wide = ProgressBarLine(p, 200);
  EXPECT_THAT(wide, StartsWith("[" + std::string(20, '#') + std::string(10, '.') + "] "));
  EXPECT_THAT(wide, HasSubstr("8/12 measured, 9 compiled, 1 failed, best 349.30 us  12.3s"));
  // 80 columns (the old fixed line was 87 wide here and wrapped).
  const std::string eighty = ProgressBarLine(p, 80);
  EXPECT_LT(eighty.size(), 80u);
  EXPECT_THAT(eighty, StartsWith("["));
  EXPECT_THAT(eighty, HasSubstr("8/12 measured"));
  EXPECT_THAT(eighty, HasSubstr("best 349.30 us"));
  // Narrow: the counts stay.
  EXPECT_THAT(ProgressBarLine(p, 40), HasSubstr("8/12"));
  EXPECT_EQ(ProgressBarLine(p, 8), "8/12");
  EXPECT_EQ(ProgressBarLine(p, 1), "");
}

TEST(TuneProgressPrinter, RedrawsInPlaceAtTheWidthItIsGiven) {
  std::ostringstream out;
  int columns = 50;
  TuneProgressPrinter printer(out, /*bar=*/true, /*quiet=*/false, [&] { return columns; });
  printer.Show(Progress(12, 3, 1, 0, 10, 1));
  columns = 30; // the terminal was narrowed
  printer.Show(Progress(12, 6, 2, 0, 9, 2));
  printer.Finish();
  const std::string text = out.str();
  ASSERT_EQ(text.back(), '\n');
  const std::vector<std::string> draws =
      absl::StrSplit(text.substr(0, text.size() - 1), '\r', absl::SkipEmpty());
  ASSERT_EQ(draws.size(), 2u) << text;
  for (size_t i = 0; i < draws.size(); ++i) {
    const std::string& d = draws[i];
    ASSERT_GE(d.size(), 3u);
    EXPECT_EQ(d.substr(d.size() - 3), "\x1b[K");
    EXPECT_LT(d.size() - 3, i == 0 ? 50u : 30u) << d;
  }
}

TEST(TuneProgressPrinter, PlainLinesWhenNotATerminalAndNothingWithJson) {
  std::ostringstream plain, quiet;
  TuneProgressPrinter p(plain, /*bar=*/false, /*quiet=*/false, [] { return 10; });
  p.Show(Progress(4, 4, 1, 0, 5, 1.5));
  p.Show(Progress(4, 4, 1, 0, 5, 1.6)); // no change in the counts: no line
  p.Show(Progress(4, 4, 3, 1, 5, 2.5));
  p.Finish();
  EXPECT_EQ(plain.str(),
            "[   1.5s] 4/4 compiled, 1 measured, 0 failed, best 5.00 us (block_M=128)\n"
            "[   2.5s] 4/4 compiled, 3 measured, 1 failed, best 5.00 us (block_M=128)\n");
  TuneProgressPrinter q(quiet, /*bar=*/true, /*quiet=*/true);
  q.Show(Progress(4, 4, 1, 0, 5, 1.5));
  q.Finish();
  EXPECT_EQ(quiet.str(), "");
}

TEST(TerminalColumns, FallsBackToColumnsThenEighty) {
  const int fd = open("/dev/null", O_WRONLY); // not a terminal
  ASSERT_GE(fd, 0);
  const char* old = std::getenv("COLUMNS");
  const std::string saved = old != nullptr ? old : "";
  setenv("COLUMNS", "132", 1);
  EXPECT_EQ(TerminalColumns(fd), 132);
  setenv("COLUMNS", "wide", 1);
  EXPECT_EQ(TerminalColumns(fd), 80);
  unsetenv("COLUMNS");
  EXPECT_EQ(TerminalColumns(fd), 80);
  if (old != nullptr) setenv("COLUMNS", saved.c_str(), 1);
  close(fd);
}

} // namespace
} // namespace kiln::cli
