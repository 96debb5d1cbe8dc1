// The libraries' own log lines reach kilnd's structured log
// (server/library_logs.h): here Abseil's, whose ABSL_INTERNAL_LOG messages
// went to stderr as plain "[file : line] RAW: ..." text before.
#include <string>
#include <variant>

#include "absl/base/internal/raw_logging.h"
#include "gtest/gtest.h"
#include "server/library_logs.h"
#include "util/log.h"

namespace kiln::server {
namespace {

class LibraryLogsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RouteLibraryLogs();
    sink_ = std::make_shared<util::CaptureLogSink>();
    previous_ = util::SetLogSink(sink_);
  }
  void TearDown() override { util::SetLogSink(previous_); }

  std::shared_ptr<util::CaptureLogSink> sink_;
  std::shared_ptr<util::LogSink> previous_;
};

std::string Field(const util::LogRecord& r, const char* key) {
  const util::LogValue* v = r.Find(key);
  if (v == nullptr) return "";
  if (const auto* s = std::get_if<std::string>(v)) return *s;
  if (const auto* i = std::get_if<int64_t>(v)) return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(v)) return *b ? "true" : "false";
  return "?";
}

TEST_F(LibraryLogsTest, AbseilInternalLogsAreStructuredRecords) {
  ABSL_INTERNAL_LOG(WARNING, "abseil says something");
  ABSL_INTERNAL_LOG(ERROR, std::string("abseil reports an error"));
  const std::vector<util::LogRecord> records = sink_->records();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].message, "abseil says something");
  EXPECT_EQ(records[0].level, util::LogLevel::kWarning);
  EXPECT_EQ(Field(records[0], "library"), "abseil");
  EXPECT_NE(Field(records[0], "file").find("library_logs_test.cc"), std::string::npos);
  EXPECT_FALSE(Field(records[0], "line").empty());
  EXPECT_EQ(Field(records[0], "fatal"), "false");
  EXPECT_EQ(records[1].message, "abseil reports an error");
  EXPECT_EQ(records[1].level, util::LogLevel::kError);
}

TEST_F(LibraryLogsTest, AbseilFatalLogsAreRecordedBeforeTheAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The default sink (text on stderr) in the child.
  util::SetLogSink(nullptr);
  EXPECT_DEATH(ABSL_INTERNAL_LOG(FATAL, "internal fatal"),
               "ERROR +internal fatal library=abseil .*fatal=true");
  // ABSL_RAW_LOG's plain line cannot be routed (its only hook before the
  // message is formatted cannot see it), but a FATAL one reaches the log
  // through the abort hook.
  EXPECT_DEATH(ABSL_RAW_LOG(FATAL, "raw fatal %d", 7),
               "ERROR +raw fatal 7 library=abseil .*fatal=true");
}

} // namespace
} // namespace kiln::server
