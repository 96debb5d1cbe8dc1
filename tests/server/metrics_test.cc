#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "util/subprocess.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(MetricsTest, ValidatesNames) {
  struct Case {
    std::string name;
    bool metric;
    bool label;
  };
  const Case cases[] = {
      {"kiln_rpc_requests_total", true, true},
      {"_leading_underscore", true, true},
      {"with:colon", true, false},
      {":starts_with_colon", true, false},
      {"__reserved", true, false},
      {"x9", true, true},
      {"9x", false, false},
      {"", false, false},
      {"has-dash", false, false},
      {"has space", false, false},
      {"caf\xC3\xA9", false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(IsValidMetricName(c.name), c.metric);
    EXPECT_EQ(IsValidLabelName(c.name), c.label);
  }
}

TEST(MetricsTest, FormatsValuesAsGoParsesThem) {
  struct Case {
    double value;
    std::string text;
  };
  const Case cases[] = {
      {0, "0"},
      {1, "1"},
      {-1.5, "-1.5"},
      {0.1, "0.1"},
      {0.005, "0.005"},
      {0.0001, "0.0001"},
      {0.00001, "1e-05"},
      {0.00025, "0.00025"},
      {100000, "100000"},
      {123456.5, "123456.5"},
      {999999, "999999"},
      {1e6, "1e+06"},
      {123456789, "1.23456789e+08"},
      {9007199254740992.0, "9.007199254740992e+15"},
      {1e21, "1e+21"},
      {1e-7, "1e-07"},
      {-2.5e-300, "-2.5e-300"},
      {std::numeric_limits<double>::max(), "1.7976931348623157e+308"},
      {std::numeric_limits<double>::denorm_min(), "5e-324"},
      {-0.0, "-0"},
      {kInf, "+Inf"},
      {-kInf, "-Inf"},
      {std::nan(""), "NaN"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(FormatMetricValue(c.value), c.text);
    if (std::isfinite(c.value)) {
      EXPECT_EQ(std::strtod(FormatMetricValue(c.value).c_str(), nullptr), c.value);
    }
  }
}

TEST(MetricsTest, EscapesLabelValuesAndHelp) {
  struct Case {
    std::string raw;
    std::string label;
    std::string help;
  };
  const Case cases[] = {
      {"plain", "plain", "plain"},
      {R"(C:\path)", R"(C:\\path)", R"(C:\\path)"},
      {R"(say "hi")", R"(say \"hi\")", R"(say "hi")"},
      {"two\nlines", R"(two\nlines)", R"(two\nlines)"},
      {"tab\tstays", "tab\tstays", "tab\tstays"},
      {R"(\n literal)", R"(\\n literal)", R"(\\n literal)"},
      {"caf\xC3\xA9", "caf\xC3\xA9", "caf\xC3\xA9"},
      {"bad\xFF", "bad\xEF\xBF\xBD", "bad\xEF\xBF\xBD"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.raw);
    EXPECT_EQ(EscapeLabelValue(c.raw), c.label);
    EXPECT_EQ(EscapeHelp(c.raw), c.help);
  }
}

TEST(MetricsTest, ExposesTheTextFormat) {
  MetricRegistry registry;
  CounterFamily* requests =
      *registry.AddCounter("app_requests_total", "Requests.\nBy method.", {"method", "code"});
  GaugeFamily* temperature = *registry.AddGauge("app_temperature", R"(Degrees \ C.)");
  HistogramFamily* latency =
      *registry.AddHistogram("app_latency_seconds", "Latency.", {"method"}, {0.1, 0.5, 1});
  CallbackFamily* depth = *registry.AddCallbackGauge("app_depth", "Depth.", {"queue"}, [] {
    return std::vector<CallbackSample>{{{"b"}, 2}, {{"a"}, 1}};
  });
  ASSERT_NE(depth, nullptr);
  requests->WithLabels({"Compile", "OK"}).Increment(3);
  requests->WithLabels({"Compile", "NOT_FOUND"}).Increment();
  requests->WithLabels({"A\"b\\c\nd", "OK"}).Increment(0.5);
  temperature->Get().Set(-kInf);
  Histogram& compile = latency->WithLabels({"Compile"});
  for (double v : {0.05, 0.1, 0.3, 2.0}) compile.Observe(v);
  latency->WithLabels({"Tune"}); // a series at zero

  EXPECT_EQ(registry.Expose(), R"(# HELP app_depth Depth.
# TYPE app_depth gauge
app_depth{queue="a"} 1
app_depth{queue="b"} 2
# HELP app_latency_seconds Latency.
# TYPE app_latency_seconds histogram
app_latency_seconds_bucket{method="Compile",le="0.1"} 2
app_latency_seconds_bucket{method="Compile",le="0.5"} 3
app_latency_seconds_bucket{method="Compile",le="1"} 3
app_latency_seconds_bucket{method="Compile",le="+Inf"} 4
app_latency_seconds_sum{method="Compile"} 2.45
app_latency_seconds_count{method="Compile"} 4
app_latency_seconds_bucket{method="Tune",le="0.1"} 0
app_latency_seconds_bucket{method="Tune",le="0.5"} 0
app_latency_seconds_bucket{method="Tune",le="1"} 0
app_latency_seconds_bucket{method="Tune",le="+Inf"} 0
app_latency_seconds_sum{method="Tune"} 0
app_latency_seconds_count{method="Tune"} 0
# HELP app_requests_total Requests.\nBy method.
# TYPE app_requests_total counter
app_requests_total{method="A\"b\\c\nd",code="OK"} 0.5
app_requests_total{method="Compile",code="NOT_FOUND"} 1
app_requests_total{method="Compile",code="OK"} 3
# HELP app_temperature Degrees \\ C.
# TYPE app_temperature gauge
app_temperature -Inf
)");
}

TEST(MetricsTest, RefusesBadRegistrations) {
  MetricRegistry registry;
  ASSERT_TRUE(registry.AddCounter("taken_total", "x").ok());
  ASSERT_TRUE(registry.AddHistogram("hist", "x", {}, {1}).ok());
  ASSERT_TRUE(registry.AddGauge("plain_sum", "x").ok());
  struct Case {
    std::string name;
    absl::Status status;
    absl::StatusCode code;
    std::string message;
  };
  const Case cases[] = {
      {"bad metric name", registry.AddCounter("9lives", "x").status(),
       absl::StatusCode::kInvalidArgument, "invalid metric name '9lives'"},
      {"bad label name", registry.AddGauge("g1", "x", {"bad-label"}).status(),
       absl::StatusCode::kInvalidArgument, "invalid label name 'bad-label'"},
      {"reserved label name", registry.AddGauge("g2", "x", {"__name"}).status(),
       absl::StatusCode::kInvalidArgument, "'__name'"},
      {"repeated label", registry.AddGauge("g3", "x", {"a", "a"}).status(),
       absl::StatusCode::kInvalidArgument, "label 'a' given twice"},
      {"le on a histogram", registry.AddHistogram("h1", "x", {"le"}, {1}).status(),
       absl::StatusCode::kInvalidArgument, "'le' is reserved"},
      {"duplicate name", registry.AddGauge("taken_total", "x").status(),
       absl::StatusCode::kAlreadyExists, "already registered"},
      {"name a histogram writes", registry.AddCounter("hist_count", "x").status(),
       absl::StatusCode::kAlreadyExists, "would write 'hist_count', which metric 'hist' writes"},
      {"histogram that would write a taken name",
       registry.AddHistogram("plain", "x", {}, {1}).status(), absl::StatusCode::kAlreadyExists,
       "would write 'plain_sum'"},
      {"decreasing buckets", registry.AddHistogram("h2", "x", {}, {1, 0.5}).status(),
       absl::StatusCode::kInvalidArgument, "increase strictly, got 1 then 0.5"},
      {"repeated bucket", registry.AddHistogram("h3", "x", {}, {1, 1}).status(),
       absl::StatusCode::kInvalidArgument, "increase strictly"},
      {"NaN bucket", registry.AddHistogram("h4", "x", {}, {std::nan("")}).status(),
       absl::StatusCode::kInvalidArgument, "finite, got NaN"},
      {"inner infinity", registry.AddHistogram("h5", "x", {}, {kInf, kInf}).status(),
       absl::StatusCode::kInvalidArgument, "finite, got +Inf"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(c.status.code(), c.code) << c.status;
    EXPECT_THAT(c.status.message(), HasSubstr(c.message));
  }
  // A trailing +Inf is implied anyway.
  absl::StatusOr<HistogramFamily*> ok = registry.AddHistogram("h6", "x", {}, {1, kInf});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_THAT(registry.Expose(), HasSubstr("h6_bucket{le=\"1\"} 0\nh6_bucket{le=\"+Inf\"} 0\n"));
  // Nothing half-registered by the failures.
  EXPECT_THAT(registry.Expose(), Not(HasSubstr("g1")));
}

TEST(MetricsTest, SeriesFollowTheirTypesRules) {
  Counter counter;
  counter.Increment();
  counter.Increment(2.5);
  counter.Increment(-10);          // counters never go down
  counter.Increment(std::nan("")); // nor become NaN
  EXPECT_EQ(counter.value(), 3.5);

  Gauge gauge;
  gauge.Set(10);
  gauge.Add(-12.5);
  gauge.Increment();
  gauge.Decrement();
  EXPECT_EQ(gauge.value(), -2.5);

  const std::vector<double> bounds = {0.1, 1, 10};
  Histogram histogram(bounds);
  // le is inclusive: 0.1 lands in the le="0.1" bucket.
  for (double v : {-5.0, 0.1, 0.10000001, 1.0, 10.0, 10.5, kInf}) histogram.Observe(v);
  histogram.Observe(std::nan("")); // ignored
  const Histogram::Snapshot snap = histogram.snapshot();
  EXPECT_EQ(snap.cumulative_counts, (std::vector<uint64_t>{2, 4, 5, 7}));
  EXPECT_EQ(snap.count, 7u);
  EXPECT_EQ(snap.sum, kInf);

  EXPECT_EQ(ExponentialBuckets(0.001, 10, 4), (std::vector<double>{0.001, 0.01, 0.1, 1}));
  EXPECT_EQ(LinearBuckets(1, 2, 3), (std::vector<double>{1, 3, 5}));
}

TEST(MetricsTest, WrongLabelCountGetsADetachedSeries) {
  MetricRegistry registry;
  CounterFamily* family = *registry.AddCounter("c_total", "x", {"a", "b"});
  family->WithLabels({"only one"}).Increment(5);
  family->Get().Increment(7);
  EXPECT_EQ(family->mismatched_label_calls(), 2u);
  EXPECT_EQ(registry.Expose(), "# HELP c_total x\n# TYPE c_total counter\n");
  // The same labels give the same series.
  Counter& first = family->WithLabels({"x", "y"});
  EXPECT_EQ(&first, &family->WithLabels(std::vector<std::string>{"x", "y"}));
  EXPECT_NE(&first, &family->WithLabels({"y", "x"}));
}

TEST(MetricsTest, CallbackSamplesAreSortedAndCleaned) {
  MetricRegistry registry;
  CallbackFamily* family = *registry.AddCallbackCounter("cb_total", "x", {"k"}, [] {
    return std::vector<CallbackSample>{{{"z"}, 1}, {{"a"}, 2},           {{"a"}, 3},
                                       {{}, 4},    {{"too", "many"}, 5}, {{"m\"q"}, 6}};
  });
  EXPECT_EQ(registry.Expose(),
            "# HELP cb_total x\n# TYPE cb_total counter\n"
            "cb_total{k=\"a\"} 2\ncb_total{k=\"m\\\"q\"} 6\ncb_total{k=\"z\"} 1\n");
  family->SetCallback(nullptr);
  EXPECT_EQ(registry.Expose(), "# HELP cb_total x\n# TYPE cb_total counter\n");
}

// SetCallback waits for a scrape that is running the old callback, so its
// captures can be destroyed right after.
TEST(MetricsTest, SetCallbackWaitsForARunningCallback) {
  MetricRegistry registry;
  std::atomic<bool> entered{false};
  std::atomic<bool> finished{false};
  CallbackFamily* family = *registry.AddCallbackGauge("slow", "x", {}, [&] {
    entered = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    finished = true;
    return std::vector<CallbackSample>{{{}, 1}};
  });
  std::thread scrape([&] { registry.Expose(); });
  while (!entered) std::this_thread::yield();
  family->SetCallback(nullptr);
  EXPECT_TRUE(finished);
  scrape.join();
}

// Updates from many threads while another scrapes: nothing lost, and every
// scrape's histograms are self-consistent.
TEST(MetricsTest, ConcurrentUpdatesAreExact) {
  MetricRegistry registry;
  CounterFamily* counters = *registry.AddCounter("n_total", "x", {"t"});
  HistogramFamily* hist = *registry.AddHistogram("h", "x", {}, {1, 2, 3});
  constexpr int kThreads = 8;
  constexpr int kIterations = 50000;
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done) {
      const std::string text = registry.Expose();
      const size_t inf = text.find("h_bucket{le=\"+Inf\"} ");
      const size_t count = text.find("h_count ");
      ASSERT_NE(inf, std::string::npos);
      ASSERT_NE(count, std::string::npos);
      const std::string inf_value = text.substr(inf + 20, text.find('\n', inf) - inf - 20);
      const std::string count_value = text.substr(count + 8, text.find('\n', count) - count - 8);
      ASSERT_EQ(inf_value, count_value);
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Counter& mine = counters->WithLabels({std::to_string(t % 2)});
      Histogram& h = hist->Get();
      for (int i = 0; i < kIterations; ++i) {
        mine.Increment();
        h.Observe(i % 4); // 0, 1, 2, 3
      }
    });
  }
  for (std::thread& t : threads) t.join();
  done = true;
  scraper.join();
  EXPECT_EQ(counters->WithLabels({"0"}).value() + counters->WithLabels({"1"}).value(),
            kThreads * kIterations);
  const Histogram::Snapshot snap = hist->Get().snapshot();
  const uint64_t n = kThreads * kIterations;
  EXPECT_EQ(snap.cumulative_counts, (std::vector<uint64_t>{n / 2, 3 * n / 4, n, n}));
  EXPECT_EQ(snap.sum, 1.5 * n);
}

// --- a real parser -----------------------------------------------------------

// An interpreter that can import prometheus_client: $KILN_PYTHON, python3,
// /usr/bin/python3 (Debian's python3-prometheus-client).
std::string PythonWithPrometheusClient() {
  std::vector<std::string> candidates;
  if (const char* env = getenv("KILN_PYTHON"); env != nullptr && env[0] != '\0') {
    candidates.emplace_back(env);
  }
  candidates.insert(candidates.end(), {"python3", "/usr/bin/python3"});
  for (const std::string& python : candidates) {
    util::SubprocessOptions options;
    options.timeout = std::chrono::seconds(60);
    absl::StatusOr<util::SubprocessResult> run =
        util::RunSubprocess({python, "-c", "import prometheus_client.parser"}, options);
    if (run.ok() && run->success()) return python;
  }
  return "";
}

// Scrapes a real HttpServer with prometheus_client's parser (and the
// script's own line-by-line grammar check) and compares what it read.
TEST(MetricsTest, PrometheusClientParsesAScrape) {
  const std::string python = PythonWithPrometheusClient();
  ASSERT_FALSE(python.empty())
      << "no python3 with prometheus_client: apt-get install python3-prometheus-client "
         "(scripts/install_deps.sh)";

  MetricRegistry registry;
  CounterFamily* rpcs = *registry.AddCounter(
      "kiln_rpc_requests_total", "RPCs handled.\nSecond line, a \\ backslash.", {"method", "code"});
  rpcs->WithLabels({"Compile", "OK"}).Increment(41);
  rpcs->WithLabels({"Compile", "OK"}).Increment();
  rpcs->WithLabels({"quote\" back\\slash\nnewline, comma=} brace", "UNKNOWN"}).Increment(2);
  rpcs->WithLabels({"caf\xC3\xA9 \xE2\x9C\x93", "OK"}).Increment(1e-9);
  GaugeFamily* gauges = *registry.AddGauge("kiln_special_values", "Non-finite values.", {"v"});
  gauges->WithLabels({"pinf"}).Set(kInf);
  gauges->WithLabels({"ninf"}).Set(-kInf);
  gauges->WithLabels({"nan"}).Set(std::nan(""));
  gauges->WithLabels({"big"}).Set(1.5e300);
  gauges->WithLabels({"small"}).Set(-2.5e-300);
  gauges->WithLabels({"empty"}).Set(0);
  (*registry.AddGauge("kiln_unlabelled", ""))->Get().Set(7);
  HistogramFamily* latency = *registry.AddHistogram("kiln_rpc_duration_seconds", "Latency.",
                                                    {"method"}, {0.001, 0.01, 0.1});
  for (double v : {0.0005, 0.001, 0.002, 0.05, 3.0}) latency->WithLabels({"Compile"}).Observe(v);
  ASSERT_TRUE(registry
                  .AddCallbackGauge(
                      "kiln_queue_depth", "Queued jobs.", {"priority"},
                      [] {
                        return std::vector<CallbackSample>{{{"interactive"}, 3}, {{"tuning"}, 0}};
                      })
                  .ok());
  ASSERT_TRUE(registry
                  .AddCallbackCounter("kiln_cache_hits_total", "Hits.", {},
                                      [] {
                                        return std::vector<CallbackSample>{{{}, 12}};
                                      })
                  .ok());

  HttpServerOptions options;
  options.routes = OpsHttpRoutes(registry, [] { return true; });
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string url = "http://" + (*server)->address() + "/metrics";

  util::SubprocessOptions run_options;
  run_options.timeout = std::chrono::seconds(60);
  absl::StatusOr<util::SubprocessResult> run = util::RunSubprocess(
      {python, std::string(KILN_SOURCE_DIR) + "/tests/server/parse_metrics.py", url}, run_options);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(run->success()) << run->DescribeTermination() << "\n"
                              << run->stdout_data << run->stderr_data << "\nexposition:\n"
                              << registry.Expose();
  std::set<std::string> lines;
  std::istringstream out(run->stdout_data);
  for (std::string line; std::getline(out, line);) lines.insert(line);

  const std::vector<std::string> expected = {
      "content-type text/plain; version=0.0.4; charset=utf-8",
      // Counters: the parser strips _total from the family name.
      R"(family ["kiln_rpc_requests", "counter", "RPCs handled.\nSecond line, a \\ backslash."])",
      R"(sample ["kiln_rpc_requests_total", {"code": "OK", "method": "Compile"}, 42.0])",
      R"(sample ["kiln_rpc_requests_total", {"code": "UNKNOWN", "method": "quote\" back\\slash\nnewline, comma=} brace"}, 2.0])",
      R"(sample ["kiln_rpc_requests_total", {"code": "OK", "method": "caf\u00e9 \u2713"}, 1e-09])",
      R"(family ["kiln_special_values", "gauge", "Non-finite values."])",
      R"(sample ["kiln_special_values", {"v": "pinf"}, Infinity])",
      R"(sample ["kiln_special_values", {"v": "ninf"}, -Infinity])",
      R"(sample ["kiln_special_values", {"v": "nan"}, NaN])",
      R"(sample ["kiln_special_values", {"v": "big"}, 1.5e+300])",
      R"(sample ["kiln_special_values", {"v": "small"}, -2.5e-300])",
      R"(sample ["kiln_special_values", {"v": "empty"}, 0.0])",
      R"(family ["kiln_unlabelled", "gauge", ""])",
      R"(sample ["kiln_unlabelled", {}, 7.0])",
      R"(family ["kiln_rpc_duration_seconds", "histogram", "Latency."])",
      R"(sample ["kiln_rpc_duration_seconds_bucket", {"le": "0.001", "method": "Compile"}, 2.0])",
      R"(sample ["kiln_rpc_duration_seconds_bucket", {"le": "0.01", "method": "Compile"}, 3.0])",
      R"(sample ["kiln_rpc_duration_seconds_bucket", {"le": "0.1", "method": "Compile"}, 4.0])",
      R"(sample ["kiln_rpc_duration_seconds_bucket", {"le": "+Inf", "method": "Compile"}, 5.0])",
      R"(sample ["kiln_rpc_duration_seconds_count", {"method": "Compile"}, 5.0])",
      R"(family ["kiln_queue_depth", "gauge", "Queued jobs."])",
      R"(sample ["kiln_queue_depth", {"priority": "interactive"}, 3.0])",
      R"(sample ["kiln_queue_depth", {"priority": "tuning"}, 0.0])",
      R"(family ["kiln_cache_hits", "counter", "Hits."])",
      R"(sample ["kiln_cache_hits_total", {}, 12.0])",
  };
  for (const std::string& line : expected) {
    EXPECT_EQ(lines.count(line), 1u) << "missing: " << line << "\nparser output:\n"
                                     << run->stdout_data;
  }
  // Every family once, and nothing the parser saw as untyped.
  int families = 0;
  for (const std::string& line : lines) {
    if (line.rfind("family ", 0) == 0) ++families;
    EXPECT_THAT(line, Not(HasSubstr("\"untyped\""))) << line;
    EXPECT_THAT(line, Not(HasSubstr("error"))) << line;
  }
  EXPECT_EQ(families, 6);
  // The sum is a float sum: check it separately and loosely.
  EXPECT_NE(run->stdout_data.find(
                R"(sample ["kiln_rpc_duration_seconds_sum", {"method": "Compile"}, 3.0535)"),
            std::string::npos)
      << run->stdout_data;
}

} // namespace
} // namespace kiln::server
