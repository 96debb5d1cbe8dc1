// A small structured logger: a message plus key=value fields, written as one
// line of text or one JSON object per record to a process-wide sink.
//
//   util::LogInfo("compile done", {{"job_id", id}, {"ms", 12.5}});
//   util::Logger log = util::Logger().With({{"request_id", rid}, {"rpc", "Compile"}});
//   log.Warning("toolchain slow", {{"seconds", s}});
//
// Text:  2024-05-01T12:34:56.789012Z INFO  compile done job_id=j-7 ms=12.5
// JSON:  {"ts":"2024-05-01T12:34:56.789012Z","level":"info","msg":"compile done","job_id":"j-7",
//         "ms":12.5}
//
// Every record is one line: control characters in messages and values are
// escaped, invalid UTF-8 is replaced by U+FFFD, and a JSON line is a valid
// JSON object (NaN and infinities become the strings "NaN", "+Inf", "-Inf").
// In JSON, a field named ts, level or msg is written as _ts, _level, _msg so
// that it cannot shadow the record's own keys. When two fields share a key,
// the one given last wins (call-site fields over a Logger's bound fields).
// Text keys are written as given, with characters outside [A-Za-z0-9_.-]
// replaced by '_'.
//
// A message or string value longer than kMaxLogValueBytes is cut (on a UTF-8
// boundary) and ends "... [N bytes in all]": a request field of a megabyte
// echoed in an error would otherwise make a megabyte line per request
// (issue 27, rpc_fuzz), and a line is one write(2) under the sink's lock.
//
// Thread-safety: everything here may be called from any thread. The global
// sink and minimum level can be changed while other threads log; a record is
// written by exactly one sink, and a sink writes each line with one write(2),
// so concurrent lines never interleave.
#pragma once

#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::util {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };
enum class LogFormat { kText, kJson };

// "debug", "info", "warn", "error".
std::string_view LogLevelName(LogLevel level);
// debug | info | warn | warning | error, any case. InvalidArgument otherwise.
absl::StatusOr<LogLevel> ParseLogLevel(std::string_view name);
// "text", "json".
std::string_view LogFormatName(LogFormat format);
// text | json, any case. InvalidArgument otherwise.
absl::StatusOr<LogFormat> ParseLogFormat(std::string_view name);

// The most bytes of a record's message and of each string value.
inline constexpr size_t kMaxLogValueBytes = 4096;

// The value of a field in a record (owned).
using LogValue = std::variant<std::string, int64_t, uint64_t, double, bool>;

// One key=value pair at a call site. It only refers to its key and string
// value, so it is meant for argument lists (the initializer lists below),
// where temporaries outlive the call; do not keep one.
class LogField {
 public:
  using Value = std::variant<std::string_view, int64_t, uint64_t, double, bool>;

  LogField(std::string_view key, std::string_view value) : key_(key), value_(value) {}
  LogField(std::string_view key, const char* value)
      : key_(key), value_(std::string_view{value == nullptr ? "" : value}) {}
  LogField(std::string_view key, const std::string& value)
      : key_(key), value_(std::string_view{value}) {}
#ifndef ABSL_USES_STD_STRING_VIEW
  // Debian's Abseil has its own string_view (absl::Status::message()).
  LogField(std::string_view key, absl::string_view value)
      : key_(key), value_(std::string_view{value.data(), value.size()}) {}
#endif
  LogField(std::string_view key, bool value) : key_(key), value_(value) {}
  LogField(std::string_view key, double value) : key_(key), value_(value) {}
  LogField(std::string_view key, float value) : key_(key), value_(static_cast<double>(value)) {}
  template <std::signed_integral T>
  LogField(std::string_view key, T value) : key_(key), value_(static_cast<int64_t>(value)) {}
  template <std::unsigned_integral T>
  requires(!std::same_as<T, bool>) LogField(std::string_view key, T value)
      : key_(key), value_(static_cast<uint64_t>(value)) {}

  std::string_view key() const { return key_; }
  const Value& value() const { return value_; }

 private:
  std::string_view key_;
  Value value_;
};

// One log record as sinks see it.
struct LogRecord {
  std::chrono::system_clock::time_point time;
  LogLevel level = LogLevel::kInfo;
  std::string message;
  // Unique keys, in the order they were first given.
  std::vector<std::pair<std::string, LogValue>> fields;

  // The value of field `key`, or nullptr.
  const LogValue* Find(std::string_view key) const;
};

// The record as one line, without the trailing newline.
std::string FormatLogText(const LogRecord& record);
std::string FormatLogJson(const LogRecord& record);
std::string FormatLogRecord(const LogRecord& record, LogFormat format);
// RFC 3339 in UTC with microseconds: 2024-05-01T12:34:56.789012Z.
std::string FormatLogTime(std::chrono::system_clock::time_point time);

// Where records go. Write may be called from several threads at once.
class LogSink {
 public:
  virtual ~LogSink() = default;
  virtual void Write(const LogRecord& record) = 0;
};

// Formats each record and writes it, newline included, with one write(2) to
// a file descriptor (stderr, or a file opened for appending). Write errors
// are dropped: logging never fails the caller.
class FdLogSink final : public LogSink {
 public:
  // Does not take ownership of `fd`.
  FdLogSink(int fd, LogFormat format) : fd_(fd), format_(format) {}
  ~FdLogSink() override;
  FdLogSink(const FdLogSink&) = delete;
  FdLogSink& operator=(const FdLogSink&) = delete;

  // Opens (creating, mode 0640) `path` for appending; the sink owns the file.
  // Internal error naming the path when it cannot be opened.
  static absl::StatusOr<std::shared_ptr<FdLogSink>> OpenFile(const std::string& path,
                                                             LogFormat format);

  void Write(const LogRecord& record) override;

 private:
  int fd_;
  bool owns_fd_ = false;
  LogFormat format_;
  std::mutex mu_; // serializes writes, so lines of one process never interleave
};

// Keeps every record in memory, for tests.
class CaptureLogSink final : public LogSink {
 public:
  explicit CaptureLogSink(LogFormat format = LogFormat::kText) : format_(format) {}

  void Write(const LogRecord& record) override;
  std::vector<LogRecord> records() const;
  // The records formatted in this sink's format, one per line.
  std::vector<std::string> lines() const;
  void Clear();

 private:
  const LogFormat format_;
  mutable std::mutex mu_;
  std::vector<LogRecord> records_; // guarded by mu_
};

// The process-wide sink; nullptr restores the default (text on stderr).
// Returns the previous sink.
std::shared_ptr<LogSink> SetLogSink(std::shared_ptr<LogSink> sink);
std::shared_ptr<LogSink> GetLogSink();
// Records below the minimum level (default info) are dropped before they are
// formatted. Returns the previous level.
LogLevel SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();
inline bool LogEnabled(LogLevel level);

// Points the global sink at stderr (`file` empty) or at `file` (appended) in
// `format`, and sets the minimum level. On error nothing changes.
absl::Status ConfigureLogging(LogFormat format, LogLevel min_level, const std::string& file);

// Logs a record to the global sink.
void Log(LogLevel level, std::string_view message, std::initializer_list<LogField> fields = {});
inline void LogDebug(std::string_view message, std::initializer_list<LogField> fields = {}) {
  Log(LogLevel::kDebug, message, fields);
}
inline void LogInfo(std::string_view message, std::initializer_list<LogField> fields = {}) {
  Log(LogLevel::kInfo, message, fields);
}
inline void LogWarning(std::string_view message, std::initializer_list<LogField> fields = {}) {
  Log(LogLevel::kWarning, message, fields);
}
inline void LogError(std::string_view message, std::initializer_list<LogField> fields = {}) {
  Log(LogLevel::kError, message, fields);
}

// Fields bound once (request_id, job_id, rpc, ...) and added to every record
// logged through this object. Cheap to copy; immutable, so one Logger may be
// shared by threads.
class Logger {
 public:
  Logger() = default;

  // A copy with `fields` added (a key already bound takes the new value).
  Logger With(std::initializer_list<LogField> fields) const;

  void Log(LogLevel level, std::string_view message,
           std::initializer_list<LogField> fields = {}) const;
  void Debug(std::string_view message, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kDebug, message, fields);
  }
  void Info(std::string_view message, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kInfo, message, fields);
  }
  void Warning(std::string_view message, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kWarning, message, fields);
  }
  void Error(std::string_view message, std::initializer_list<LogField> fields = {}) const {
    Log(LogLevel::kError, message, fields);
  }

  const std::vector<std::pair<std::string, LogValue>>& fields() const { return fields_; }

 private:
  std::vector<std::pair<std::string, LogValue>> fields_;
};

// Test helper: routes the global log into a CaptureLogSink at `min_level`
// for the object's lifetime, then restores the previous sink and level.
class ScopedLogCapture {
 public:
  explicit ScopedLogCapture(LogLevel min_level = LogLevel::kDebug,
                            LogFormat format = LogFormat::kText);
  ~ScopedLogCapture();
  ScopedLogCapture(const ScopedLogCapture&) = delete;
  ScopedLogCapture& operator=(const ScopedLogCapture&) = delete;

  CaptureLogSink& sink() { return *sink_; }
  std::vector<LogRecord> records() const { return sink_->records(); }
  std::vector<std::string> lines() const { return sink_->lines(); }

 private:
  std::shared_ptr<CaptureLogSink> sink_;
  std::shared_ptr<LogSink> previous_sink_;
  LogLevel previous_level_;
};

namespace log_internal {
extern std::atomic<int> min_level;
} // namespace log_internal

inline bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= log_internal::min_level.load(std::memory_order_relaxed);
}

} // namespace kiln::util
