// The regress outputs parsed back: JUnit XML (expat; the element tree, the
// counts, a failure for the regression and an error for the broken kernel),
// the Markdown table (one row per kernel, the verdict column); a baseline
// of other bindings is an error of its kernel in both. The SVG plot's tests
// are svg_plot_test.cc.
#include <map>
#include <string>
#include <vector>

#include "clients/cpp/regress/junit_writer.h"
#include "clients/cpp/regress/markdown_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/clients/cpp/regress/xml_dom.h"

namespace kiln::regress {
namespace {

using testing::Children;
using testing::Element;
using ::testing::HasSubstr;
using testing::Parsed;
using testing::ParseXml;

RunReport SampleReport() {
  RunReport r;
  r.suite_path = "bench/regress/cpu_suite.yaml";
  r.label = "abc123 <&\"'>"; // characters XML must escape
  r.seconds = 12.5;
  KernelResult ok;
  ok.name = "add-small";
  ok.device_id = "cpu";
  ok.device_model = "x86_64";
  ok.trial_medians_us = {100, 101, 99};
  ok.baseline_label = "old";
  ok.baseline_us = {100, 100, 100};
  ok.verdict = Compare(ok.baseline_us, ok.trial_medians_us, {});
  KernelResult slow = ok;
  slow.name = "gemm-slow";
  slow.trial_medians_us = {150, 151, 149};
  slow.verdict = Compare(slow.baseline_us, slow.trial_medians_us, {});
  KernelResult broken;
  broken.name = "broken|kernel";
  broken.error = "kernels/x.py:3:5: unknown name 'foo'";
  KernelResult fresh = ok;
  fresh.name = "new-kernel";
  fresh.baseline_label.clear();
  fresh.baseline_us.clear();
  fresh.verdict = Compare({}, fresh.trial_medians_us, {});
  r.kernels = {ok, slow, broken, fresh};
  return r;
}

TEST(JUnitXml, ParsesBackWithTheRightStructure) {
  const RunReport report = SampleReport();
  ASSERT_EQ(report.kernels[1].verdict.kind, VerdictKind::kRegression);
  const Parsed x = ParseXml(JUnitXml(report));
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.root.name, "testsuites");
  EXPECT_EQ(x.root.attrs.at("tests"), "4");
  EXPECT_EQ(x.root.attrs.at("failures"), "1");
  EXPECT_EQ(x.root.attrs.at("errors"), "1");
  const std::vector<const Element*> suites = Children(x.root, "testsuite");
  ASSERT_EQ(suites.size(), 1u);
  EXPECT_EQ(suites[0]->attrs.at("name"), "cpu_suite");
  const std::vector<const Element*> props =
      Children(*Children(*suites[0], "properties").at(0), "property");
  ASSERT_FALSE(props.empty());
  EXPECT_EQ(props[0]->attrs.at("value"), "abc123 <&\"'>"); // escaped and unescaped back
  const std::vector<const Element*> cases = Children(*suites[0], "testcase");
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[0]->attrs.at("name"), "add-small");
  EXPECT_TRUE(Children(*cases[0], "failure").empty());
  EXPECT_TRUE(Children(*cases[0], "error").empty());
  const std::vector<const Element*> failure = Children(*cases[1], "failure");
  ASSERT_EQ(failure.size(), 1u);
  EXPECT_EQ(failure[0]->attrs.at("type"), "regression");
  EXPECT_THAT(failure[0]->attrs.at("message"), HasSubstr("+50.0%"));
  EXPECT_THAT(failure[0]->text, HasSubstr("trials [150.000, 151.000, 149.000]"));
  const std::vector<const Element*> error = Children(*cases[2], "error");
  ASSERT_EQ(error.size(), 1u);
  EXPECT_EQ(error[0]->attrs.at("type"), "infrastructure");
  EXPECT_THAT(error[0]->attrs.at("message"), HasSubstr("unknown name 'foo'"));
  EXPECT_EQ(cases[2]->attrs.at("classname"), "kiln.regress.cpu_suite");
}

TEST(MarkdownSummary, OneRowPerKernel) {
  const std::string md = MarkdownSummary(SampleReport());
  EXPECT_THAT(md, HasSubstr("## Kiln performance: `abc123"));
  EXPECT_THAT(md, HasSubstr("**1 regression(s).**"));
  EXPECT_THAT(md, HasSubstr("| kernel | device | baseline | old (us) | new (us) | change | p | "
                            "verdict |"));
  std::vector<std::string> rows;
  size_t at = 0;
  while ((at = md.find("\n| ", at)) != std::string::npos) {
    const size_t end = md.find('\n', at + 1);
    rows.push_back(md.substr(at + 1, end - at - 1));
    at = end;
  }
  ASSERT_EQ(rows.size(), 5u); // header + 4 kernels (the |---| line starts "|-")
  EXPECT_THAT(rows[1], HasSubstr("| add-small | x86_64 | old | 100.00 | 100.00 | +0.0% |"));
  EXPECT_THAT(rows[1], HasSubstr("| pass |"));
  EXPECT_THAT(rows[2], HasSubstr("| 100.00 | 150.00 | +50.0% |"));
  EXPECT_THAT(rows[2], HasSubstr("**regression**"));
  EXPECT_THAT(rows[3], HasSubstr("broken\\|kernel")); // the pipe cannot split the row
  EXPECT_THAT(rows[3], HasSubstr("error: kernels/x.py:3:5"));
  EXPECT_THAT(rows[4], HasSubstr("no baseline"));
  for (const std::string& row : rows) {
    // Every row has the header's 8 cells (9 unescaped pipes).
    int pipes = 0;
    for (size_t i = 0; i < row.size(); ++i)
      pipes += row[i] == '|' && (i == 0 || row[i - 1] != '\\');
    EXPECT_EQ(pipes, 9) << row;
  }
}

// A kernel whose baseline ran other bindings: not compared, an error.
RunReport MismatchReport() {
  RunReport r = SampleReport();
  KernelResult k = r.kernels[0];
  k.name = "add-resized";
  k.bindings = {{"M", "2048"}, {"N", "1024"}};
  k.baseline_us.clear();
  k.verdict = {};
  k.verdict.kind = VerdictKind::kBaselineMismatch;
  k.verdict.current_median_us = 100;
  k.mismatch = "the bindings differ from baseline old's (M: 256 -> 2048; baseline M=256 N=1024, "
               "this run M=2048 N=1024)";
  r.kernels = {r.kernels[0], k};
  return r;
}

TEST(JUnitXml, ABaselineMismatchIsAnErrorNamingTheBindings) {
  const Parsed x = ParseXml(JUnitXml(MismatchReport()));
  ASSERT_TRUE(x.ok) << x.error;
  EXPECT_EQ(x.root.attrs.at("errors"), "1");
  EXPECT_EQ(x.root.attrs.at("failures"), "0");
  const std::vector<const Element*> cases =
      Children(*Children(x.root, "testsuite").at(0), "testcase");
  ASSERT_EQ(cases.size(), 2u);
  const std::vector<const Element*> error = Children(*cases[1], "error");
  ASSERT_EQ(error.size(), 1u);
  EXPECT_EQ(error[0]->attrs.at("type"), "baseline_mismatch");
  EXPECT_THAT(error[0]->attrs.at("message"), HasSubstr("M: 256 -> 2048"));
  EXPECT_THAT(error[0]->text, HasSubstr("bindings: M=2048 N=1024"));
}

TEST(MarkdownSummary, ABaselineMismatchIsCountedAndNamed) {
  const std::string md = MarkdownSummary(MismatchReport());
  EXPECT_THAT(md, HasSubstr("**1 kernel(s) not compared: their bindings differ"));
  EXPECT_THAT(md, ::testing::Not(HasSubstr("No regression.")));
  EXPECT_THAT(md, HasSubstr("| add-resized | x86_64 | old | | 100.00 | | | **baseline "
                            "mismatch**: the bindings differ from baseline old's (M: 256 -> "
                            "2048;"));
}

} // namespace
} // namespace kiln::regress
