// Suite files (clients/cpp/regress/suite.h): defaults and overrides, config
// as a mapping or "best", paths relative to the suite, and clear errors.
#include <string>

#include "absl/strings/str_cat.h"
#include "clients/cpp/regress/suite.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::regress {
namespace {

using ::testing::HasSubstr;

TEST(ParseSuite, DefaultsOverridesAndConfig) {
  absl::StatusOr<Suite> s = ParseSuite(R"(
defaults:
  target: cuda:sm_90
  trials: 4
  threshold: 5%
kernels:
  - name: gemm-4096
    file: ../examples/gemm/gemm.py
    bindings: {M: 4096, N: 4096, K: 4096, dtype: float16}
    config: {block_M: 128, block_N: 256}
    trials: 8
  - name: add
    file: /abs/add.py
    config: best
    target: cpu
    significance: 0.01
)",
                                       "/ci/suites/perf.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->kernels.size(), 2u);
  const SuiteKernel& g = s->kernels[0];
  EXPECT_EQ(g.file, "/ci/examples/gemm/gemm.py");
  EXPECT_EQ(g.target, "cuda:sm_90");
  EXPECT_EQ(g.trials, 8);
  EXPECT_TRUE(g.has_threshold);
  EXPECT_DOUBLE_EQ(g.tolerance.threshold, 0.05);
  EXPECT_EQ(g.bindings.at("M").int_value(), 4096);
  EXPECT_EQ(g.bindings.at("dtype").string_value(), "float16");
  EXPECT_EQ(g.config.at("block_N").int_value(), 256);
  EXPECT_FALSE(g.best_config);
  const SuiteKernel& a = s->kernels[1];
  EXPECT_EQ(a.file, "/abs/add.py");
  EXPECT_TRUE(a.best_config);
  EXPECT_EQ(a.target, "cpu");
  EXPECT_EQ(a.trials, 4);
  EXPECT_DOUBLE_EQ(a.tolerance.significance, 0.01);
}

TEST(ParseSuite, ErrorsNameTheFileAndTheKernel) {
  struct Case {
    const char* yaml;
    const char* message;
  };
  const Case cases[] = {
      {"kernels: [", "not valid YAML"},
      {"kernels: []", "non-empty list"},
      {"other: 1\nkernels: [{name: a, file: a.py}]", "unknown top-level field 'other'"},
      {"kernels: [{file: a.py}]", "needs a name and a file"},
      {"kernels: [{name: 'a b', file: a.py}]", "must be [A-Za-z0-9_.-]+"},
      {"kernels: [{name: a, file: a.py}, {name: a, file: b.py}]", "used twice"},
      {"kernels: [{name: a, file: a.py, trials: 0}]", "kernels[0] (a): trials must be"},
      {"kernels: [{name: a, file: a.py, threshold: lots}]", "threshold must be like 3%"},
      {"kernels: [{name: a, file: a.py, config: fastest}]", "mapping or the word best"},
      {"kernels: [{name: a, file: a.py, tirals: 3}]", "unknown field 'tirals'"},
      {"kernels: [{name: a, file: a.py, bindings: [1, 2]}]", "bindings must be a mapping"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.yaml);
    absl::StatusOr<Suite> s = ParseSuite(c.yaml, "suite.yaml");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(absl::StrCat(s.status().message()), HasSubstr("suite.yaml: "));
    EXPECT_THAT(absl::StrCat(s.status().message()), HasSubstr(c.message));
  }
  EXPECT_EQ(LoadSuite("/nonexistent/suite.yaml").status().code(), absl::StatusCode::kNotFound);
}

// The suite's threshold and significance win, the command's flags fill in
// what a kernel leaves out (the flag's --significance was dropped before).
TEST(ToleranceOf, TheSuiteWinsAndTheFlagsFillIn) {
  absl::StatusOr<Suite> s = ParseSuite(R"(
kernels:
  - name: plain
    file: k.py
  - name: strict
    file: k.py
    threshold: 1%
    significance: 0.01
)",
                                       "/ci/s.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  const Tolerance flags{0.10, 0.2};
  const Tolerance plain = ToleranceOf(s->kernels[0], flags);
  EXPECT_DOUBLE_EQ(plain.threshold, 0.10);
  EXPECT_DOUBLE_EQ(plain.significance, 0.2);
  const Tolerance strict = ToleranceOf(s->kernels[1], flags);
  EXPECT_DOUBLE_EQ(strict.threshold, 0.01);
  EXPECT_DOUBLE_EQ(strict.significance, 0.01);
}

} // namespace
} // namespace kiln::regress
