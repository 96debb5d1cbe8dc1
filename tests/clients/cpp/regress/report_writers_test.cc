// The regress outputs parsed back: JUnit XML (expat; the element tree, the
// counts, a failure for the regression and an error for the broken kernel),
// the Markdown table (one row per kernel, the verdict column), and the SVG
// history plot (well-formed XML, one median point per label).
#include <map>
#include <string>
#include <vector>

#include <expat.h>

#include "clients/cpp/regress/junit_writer.h"
#include "clients/cpp/regress/markdown_writer.h"
#include "clients/cpp/regress/svg_plot.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::regress {
namespace {

using ::testing::HasSubstr;

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;
  std::vector<Element> children;
};

// A small DOM over expat; `ok` false for malformed XML.
struct Parsed {
  bool ok = false;
  std::string error;
  Element root;
};

Parsed ParseXml(const std::string& xml) {
  struct State {
    std::vector<Element*> stack;
    Element root;
    bool started = false;
  } st;
  XML_Parser p = XML_ParserCreate("UTF-8");
  XML_SetUserData(p, &st);
  XML_SetElementHandler(
      p,
      [](void* data, const XML_Char* name, const XML_Char** attrs) {
        auto* s = static_cast<State*>(data);
        Element e;
        e.name = name;
        for (int i = 0; attrs[i] != nullptr; i += 2) e.attrs[attrs[i]] = attrs[i + 1];
        if (!s->started) {
          s->root = e;
          s->started = true;
          s->stack.push_back(&s->root);
        } else {
          s->stack.back()->children.push_back(e);
          s->stack.push_back(&s->stack.back()->children.back());
        }
      },
      [](void* data, const XML_Char*) { static_cast<State*>(data)->stack.pop_back(); });
  XML_SetCharacterDataHandler(p, [](void* data, const XML_Char* s, int len) {
    auto* st = static_cast<State*>(data);
    if (!st->stack.empty()) st->stack.back()->text.append(s, static_cast<size_t>(len));
  });
  Parsed out;
  out.ok = XML_Parse(p, xml.data(), static_cast<int>(xml.size()), 1) == XML_STATUS_OK;
  if (!out.ok) out.error = XML_ErrorString(XML_GetErrorCode(p));
  XML_ParserFree(p);
  out.root = st.root;
  return out;
}

std::vector<const Element*> Children(const Element& e, const std::string& name) {
  std::vector<const Element*> out;
  for (const Element& c : e.children) {
    if (c.name == name) out.push_back(&c);
  }
  return out;
}

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

TEST(HistorySvg, IsWellFormedWithAPointPerLabel) {
  std::vector<LabelRuns> trend = {{"sha-1", {100, 101, 99}, 1000},
                                  {"sha-2", {102, 100}, 2000},
                                  {"sha-3 <x>", {150, 151}, 3000}};
  const std::string svg = HistorySvg("gemm & co", trend, "sha-3 <x>");
  const Parsed x = ParseXml(svg);
  ASSERT_TRUE(x.ok) << x.error << "\n" << svg;
  EXPECT_EQ(x.root.name, "svg");
  EXPECT_EQ(x.root.attrs.at("xmlns"), "http://www.w3.org/2000/svg");
  int medians = 0, runs = 0, highlighted = 0;
  for (const Element* c : Children(x.root, "circle")) {
    if (c->attrs.count("class") && c->attrs.at("class") == "median") {
      ++medians;
      if (c->attrs.at("fill") == "#d62728") ++highlighted;
    } else {
      ++runs;
    }
  }
  EXPECT_EQ(medians, 3);
  EXPECT_EQ(runs, 7);
  EXPECT_EQ(highlighted, 1);
  ASSERT_EQ(Children(x.root, "path").size(), 1u);
  EXPECT_EQ(Children(x.root, "path")[0]->attrs.at("d").substr(0, 1), "M");
  // Higher latency is drawn higher up (smaller y).
  std::vector<double> ys;
  for (const Element* c : Children(x.root, "circle")) {
    if (c->attrs.count("class")) ys.push_back(std::stod(c->attrs.at("cy")));
  }
  ASSERT_EQ(ys.size(), 3u);
  EXPECT_LT(ys[2], ys[0]);
  EXPECT_TRUE(ParseXml(HistorySvg("empty", {}, "x")).ok);
}

} // namespace
} // namespace kiln::regress
