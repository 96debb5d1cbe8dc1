#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/log.h"
#include "util/subprocess.h"
#include "util/temp_dir.h"

namespace kiln::util {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// 2024-05-01T12:34:56.789012Z
const std::chrono::system_clock::time_point kTime{std::chrono::microseconds(1714566896789012)};

LogRecord Record(std::string message, std::vector<std::pair<std::string, LogValue>> fields,
                 LogLevel level = LogLevel::kInfo) {
  LogRecord r;
  r.time = kTime;
  r.level = level;
  r.message = std::move(message);
  r.fields = std::move(fields);
  return r;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(LogTest, ParsesLevelsAndFormats) {
  struct Case {
    std::string text;
    bool ok;
    LogLevel level;
  };
  const Case levels[] = {
      {"debug", true, LogLevel::kDebug},  {"INFO", true, LogLevel::kInfo},
      {"warn", true, LogLevel::kWarning}, {"Warning", true, LogLevel::kWarning},
      {"error", true, LogLevel::kError},  {"", false, LogLevel::kInfo},
      {"fatal", false, LogLevel::kInfo},  {"info ", false, LogLevel::kInfo},
  };
  for (const Case& c : levels) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<LogLevel> level = ParseLogLevel(c.text);
    ASSERT_EQ(level.ok(), c.ok);
    if (c.ok) {
      EXPECT_EQ(*level, c.level);
      EXPECT_EQ(*ParseLogLevel(LogLevelName(*level)), *level); // names round-trip
    } else {
      EXPECT_THAT(level.status().message(), HasSubstr("debug, info, warn or error"));
    }
  }
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  EXPECT_EQ(*ParseLogFormat("Text"), LogFormat::kText);
  EXPECT_EQ(ParseLogFormat(LogFormatName(LogFormat::kJson)).value(), LogFormat::kJson);
  EXPECT_FALSE(ParseLogFormat("yaml").ok());
}

TEST(LogTest, FormatsTimesInUtcWithMicroseconds) {
  using std::chrono::microseconds;
  using std::chrono::system_clock;
  EXPECT_EQ(FormatLogTime(kTime), "2024-05-01T12:34:56.789012Z");
  EXPECT_EQ(FormatLogTime(system_clock::time_point{}), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(FormatLogTime(system_clock::time_point{microseconds(-1)}),
            "1969-12-31T23:59:59.999999Z");
}

TEST(LogTest, FieldsKeepTheirTypes) {
  const std::string owned = "owned";
  const std::string_view view = "view";
  const absl::Status status = absl::InvalidArgumentError("bad");
  const std::vector<LogField> fields = {{"int", 7},
                                        {"neg", int64_t{-3}},
                                        {"size", size_t{9}},
                                        {"u8", uint8_t{200}},
                                        {"bool", true},
                                        {"double", 0.5},
                                        {"float", 0.25f},
                                        {"literal", "lit"},
                                        {"string", owned},
                                        {"view", view},
                                        {"null", static_cast<const char*>(nullptr)},
                                        {"absl", status.message()}};
  std::vector<size_t> kinds;
  for (const LogField& f : fields) kinds.push_back(f.value().index());
  // string_view, int64_t, uint64_t, double, bool
  EXPECT_THAT(kinds, ElementsAre(1, 1, 2, 2, 4, 3, 3, 0, 0, 0, 0, 0));
  EXPECT_EQ(std::get<std::string_view>(fields[10].value()), "");
  EXPECT_EQ(std::get<std::string_view>(fields[11].value()), "bad");
}

TEST(LogTest, JsonLinesEscapeEverythingJsonRequires) {
  struct Case {
    std::string name;
    LogRecord record;
    std::string json;
  };
  const std::string prefix = R"({"ts":"2024-05-01T12:34:56.789012Z","level":"info","msg":)";
  const Case cases[] = {
      {"plain", Record("hello", {}), prefix + R"("hello"})"},
      {"quote and backslash", Record(R"(say "hi" \o/)", {}), prefix + R"("say \"hi\" \\o/"})"},
      {"controls", Record("a\nb\tc\rd\be\ff\x01g\x1fh\x7f", {}),
       prefix + R"("a\nb\tc\rd\be\ff\u0001g\u001fh\u007f"})"},
      {"unicode passes, invalid UTF-8 becomes U+FFFD",
       Record("caf\xC3\xA9 \xFF", {{"k\xFE", std::string("\xC3")}}),
       prefix + "\"caf\xC3\xA9 \xEF\xBF\xBD\",\"k\xEF\xBF\xBD\":\"\xEF\xBF\xBD\"}"},
      {"typed values",
       Record("m", {{"s", std::string("x")},
                    {"i", int64_t{-42}},
                    {"u", std::numeric_limits<uint64_t>::max()},
                    {"d", 0.1},
                    {"big", 1e21},
                    {"t", true},
                    {"f", false}}),
       prefix + R"("m","s":"x","i":-42,"u":18446744073709551615,"d":0.1,"big":1e+21,)" +
           R"("t":true,"f":false})"},
      {"non-finite doubles are strings",
       Record("m", {{"nan", std::nan("")},
                    {"inf", std::numeric_limits<double>::infinity()},
                    {"ninf", -std::numeric_limits<double>::infinity()}}),
       prefix + R"("m","nan":"NaN","inf":"+Inf","ninf":"-Inf"})"},
      {"reserved keys cannot shadow the record's",
       Record("m", {{"msg", std::string("x")}, {"ts", int64_t{1}}, {"level", std::string("y")}}),
       prefix + R"("m","_msg":"x","_ts":1,"_level":"y"})"},
      {"levels", Record("m", {}, LogLevel::kWarning),
       R"({"ts":"2024-05-01T12:34:56.789012Z","level":"warn","msg":"m"})"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(FormatLogJson(c.record), c.json);
  }
}

TEST(LogTest, TextLinesStayOneLineAndQuoteWhenNeeded) {
  struct Case {
    std::string name;
    LogRecord record;
    std::string text;
  };
  const std::string prefix = "2024-05-01T12:34:56.789012Z INFO  ";
  const Case cases[] = {
      {"plain", Record("started", {{"port", int64_t{7070}}}), prefix + "started port=7070"},
      {"multi-line message", Record("line1\nline2\x01", {}), prefix + R"(line1\nline2\x01)"},
      {"values that need quotes",
       Record("m", {{"empty", std::string()},
                    {"space", std::string("a b")},
                    {"eq", std::string("k=v")},
                    {"quote", std::string("say \"x\"")},
                    {"newline", std::string("a\nb")},
                    {"path", std::string("/tmp/x.yaml:3")}}),
       prefix + R"(m empty="" space="a b" eq="k=v" quote="say \"x\"" newline="a\nb" )" +
           "path=/tmp/x.yaml:3"},
      {"keys are one token", Record("m", {{"bad key=", std::string("v")}, {"", true}}),
       prefix + "m bad_key_=v _=true"},
      {"levels", Record("m", {{"d", 2.5}}, LogLevel::kError),
       "2024-05-01T12:34:56.789012Z ERROR m d=2.5"},
      {"debug", Record("m", {}, LogLevel::kDebug), "2024-05-01T12:34:56.789012Z DEBUG m"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(FormatLogText(c.record), c.text);
    EXPECT_EQ(FormatLogText(c.record).find('\n'), std::string::npos);
  }
}

// The JSON lines read back with a real JSON parser (Python's json module).
TEST(LogTest, JsonLinesParseAsJson) {
  std::vector<LogRecord> records = {
      Record("controls \x01\x02\x1f\x7f \"q\" \\ \n\t", {{"k", std::string("\xFF\xFE")}}),
      Record("numbers", {{"d", 1e-7}, {"n", std::nan("")}, {"u", uint64_t{1} << 63}}),
      Record("\xE2\x80\xA8 line separator and \xF0\x9F\x94\xA5", {{"msg", true}}),
  };
  std::string lines;
  for (const LogRecord& r : records) lines += FormatLogJson(r) + "\n";
  const std::string script = R"(
import json, sys
# split("\n"), not splitlines(): U+2028 inside a JSON string is not a line end
for line in sys.stdin.read().split("\n")[:-1]:
    obj = json.loads(line)
    assert set(["ts", "level", "msg"]) <= set(obj), obj
    print(json.dumps(obj["msg"]))
)";
  util::SubprocessOptions options;
  options.stdin_data = lines;
  options.timeout = std::chrono::seconds(60);
  absl::StatusOr<SubprocessResult> run = RunSubprocess({"python3", "-c", script}, options);
  if (!run.ok()) run = RunSubprocess({"/usr/bin/python3", "-c", script}, options);
  if (!run.ok()) GTEST_SKIP() << "no python3: " << run.status();
  ASSERT_TRUE(run->success()) << run->stderr_data;
  EXPECT_EQ(run->stdout_data, "\"controls \\u0001\\u0002\\u001f\\u007f \\\"q\\\" \\\\ \\n\\t\"\n"
                              "\"numbers\"\n"
                              "\"\\u2028 line separator and \\ud83d\\udd25\"\n");
}

TEST(LogTest, MinimumLevelDropsRecordsBeforeTheSink) {
  ScopedLogCapture capture(LogLevel::kWarning);
  LogDebug("debug");
  LogInfo("info");
  LogWarning("warning");
  LogError("error");
  EXPECT_FALSE(LogEnabled(LogLevel::kInfo));
  EXPECT_TRUE(LogEnabled(LogLevel::kError));
  std::vector<std::string> messages;
  for (const LogRecord& r : capture.records()) messages.push_back(r.message);
  EXPECT_THAT(messages, ElementsAre("warning", "error"));
}

TEST(LogTest, CaptureRestoresThePreviousSinkAndLevel) {
  const LogLevel before = MinLogLevel();
  const std::shared_ptr<LogSink> sink_before = GetLogSink();
  {
    ScopedLogCapture outer(LogLevel::kError);
    {
      ScopedLogCapture inner(LogLevel::kDebug);
      LogDebug("to inner");
      EXPECT_EQ(inner.records().size(), 1u);
    }
    LogError("to outer");
    LogInfo("dropped");
    EXPECT_EQ(outer.records().size(), 1u);
    EXPECT_EQ(outer.records()[0].message, "to outer");
  }
  EXPECT_EQ(MinLogLevel(), before);
  EXPECT_EQ(GetLogSink(), sink_before);
}

// Issue 27 (rpc_fuzz): errors echoing a 1 MB request field made 1 MB lines.
TEST(LogTest, LongMessagesAndValuesAreCut) {
  ScopedLogCapture capture(LogLevel::kDebug, LogFormat::kJson);
  const std::string big = std::string(1 << 20, 'x') + "\xc3\xa9";
  LogInfo(big, {{"error", big}, {"short", "ok"}, {"n", int64_t{1}}});
  const std::vector<LogRecord> records = capture.records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_LE(records[0].message.size(), kMaxLogValueBytes);
  EXPECT_THAT(records[0].message, HasSubstr("... [1048578 bytes in all]"));
  ASSERT_NE(records[0].Find("error"), nullptr);
  EXPECT_LE(std::get<std::string>(*records[0].Find("error")).size(), kMaxLogValueBytes);
  EXPECT_EQ(std::get<std::string>(*records[0].Find("short")), "ok");
  EXPECT_LE(capture.lines()[0].size(), 3 * kMaxLogValueBytes);
}

TEST(LogTest, LoggerBindsFieldsAndCallSiteFieldsWin) {
  ScopedLogCapture capture(LogLevel::kDebug, LogFormat::kJson);
  const Logger request = Logger().With({{"request_id", "r-1"}, {"rpc", "Compile"}});
  const Logger job = request.With({{"job_id", int64_t{7}}, {"rpc", "Tune"}});
  request.Info("hit", {{"key", "abc"}});
  job.Warning("slow", {{"request_id", "r-2"}, {"ms", 12.5}, {"ms", 13.5}});
  Logger().Error("bare");
  const std::vector<std::string> lines = capture.lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_THAT(lines[0],
              HasSubstr(R"("msg":"hit","request_id":"r-1","rpc":"Compile","key":"abc"})"));
  EXPECT_THAT(lines[1], HasSubstr(R"("level":"warn","msg":"slow","request_id":"r-2","rpc":"Tune",)"
                                  R"("job_id":7,"ms":13.5})"));
  EXPECT_THAT(lines[2], HasSubstr(R"("level":"error","msg":"bare"})"));
  // The bound loggers did not change.
  EXPECT_EQ(request.fields().size(), 2u);
  const LogRecord second = capture.records()[1];
  ASSERT_NE(second.Find("job_id"), nullptr);
  EXPECT_EQ(std::get<int64_t>(*second.Find("job_id")), 7);
  EXPECT_EQ(second.Find("missing"), nullptr);
}

TEST(LogTest, FileSinkAppendsAndNamesAPathItCannotOpen) {
  absl::StatusOr<TempDir> dir = TempDir::Create("kiln-log-test");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->path() + "/kilnd.log";
  { std::ofstream(path) << "existing line\n"; }
  {
    absl::StatusOr<std::shared_ptr<FdLogSink>> sink = FdLogSink::OpenFile(path, LogFormat::kJson);
    ASSERT_TRUE(sink.ok()) << sink.status();
    (*sink)->Write(Record("one", {}));
  }
  ASSERT_TRUE(ConfigureLogging(LogFormat::kText, LogLevel::kInfo, path).ok());
  LogInfo("two", {{"k", 1}});
  LogDebug("not at info");
  ASSERT_TRUE(ConfigureLogging(LogFormat::kText, LogLevel::kInfo, "").ok()); // back to stderr
  const std::string text = ReadFile(path);
  EXPECT_THAT(text, HasSubstr("existing line\n{\"ts\":"));
  EXPECT_THAT(text, HasSubstr("\"msg\":\"one\"}\n"));
  EXPECT_THAT(text, HasSubstr(" INFO  two k=1\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("not at info")));

  absl::StatusOr<std::shared_ptr<FdLogSink>> bad =
      FdLogSink::OpenFile(dir->path() + "/no/such/dir/x.log", LogFormat::kText);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("/no/such/dir/x.log"));
  const std::shared_ptr<LogSink> before = GetLogSink();
  EXPECT_FALSE(ConfigureLogging(LogFormat::kJson, LogLevel::kDebug, dir->path() + "/no/x").ok());
  EXPECT_EQ(GetLogSink(), before); // nothing changed
  EXPECT_EQ(MinLogLevel(), LogLevel::kInfo);
}

// Lines from many threads at once never interleave.
TEST(LogTest, ConcurrentLinesStayWhole) {
  absl::StatusOr<TempDir> dir = TempDir::Create("kiln-log-test");
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->path() + "/concurrent.log";
  absl::StatusOr<std::shared_ptr<FdLogSink>> sink = FdLogSink::OpenFile(path, LogFormat::kJson);
  ASSERT_TRUE(sink.ok());
  const std::shared_ptr<LogSink> previous = SetLogSink(*sink);
  constexpr int kThreads = 8;
  constexpr int kLines = 500;
  const std::string payload(300, 'x');
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &payload] {
      const Logger log = Logger().With({{"thread", t}});
      for (int i = 0; i < kLines; ++i) log.Info(payload, {{"i", i}});
    });
  }
  for (std::thread& t : threads) t.join();
  SetLogSink(previous);
  std::istringstream text(ReadFile(path));
  int count = 0;
  for (std::string line; std::getline(text, line); ++count) {
    ASSERT_EQ(line.front(), '{') << line;
    ASSERT_EQ(line.back(), '}') << line;
    ASSERT_NE(line.find("\"msg\":\"" + payload + "\",\"thread\":"), std::string::npos) << line;
  }
  EXPECT_EQ(count, kThreads * kLines);
}

} // namespace
} // namespace kiln::util
