#include "util/log.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <fcntl.h>
#include <unistd.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "util/utf8.h"

namespace kiln::util {

namespace log_internal {
std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};
} // namespace log_internal

namespace {

// The global sink; nullptr means the default stderr sink.
// Both are leaked on purpose: a thread (or a static destructor) that logs
// while the process exits must still find them alive.
std::mutex& SinkMutex() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::shared_ptr<LogSink>& SinkSlot() {
  static auto* sink = new std::shared_ptr<LogSink>; // guarded by SinkMutex()
  return *sink;
}
const std::shared_ptr<LogSink>& DefaultSink() {
  static const auto* sink =
      new std::shared_ptr<LogSink>(std::make_shared<FdLogSink>(STDERR_FILENO, LogFormat::kText));
  return *sink;
}

void AppendDouble(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
    out.append(buf, end);
  }
}

void AppendHexEscape(std::string& out, const char* prefix, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += prefix;
  out += kHex[c >> 4];
  out += kHex[c & 0xF];
}

// Appends `text` as the inside of a JSON string: RFC 8259 escapes, valid
// UTF-8 (ill-formed bytes become U+FFFD).
void AppendJsonEscaped(std::string& out, std::string_view text) {
  const std::string valid = ToValidUtf8(text);
  for (char ch : valid) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20 || c == 0x7F) {
        AppendHexEscape(out, "\\u00", c);
      } else {
        out += ch;
      }
    }
  }
}

// Appends `text` for a text-format line: control characters escaped so the
// record stays on one line; ill-formed UTF-8 replaced.
void AppendTextEscaped(std::string& out, std::string_view text, bool quoted) {
  const std::string valid = ToValidUtf8(text);
  for (char ch : valid) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\\':
      out += quoted ? "\\\\" : "\\";
      break;
    case '"':
      out += quoted ? "\\\"" : "\"";
      break;
    default:
      if (c < 0x20 || c == 0x7F) {
        AppendHexEscape(out, "\\x", c);
      } else {
        out += ch;
      }
    }
  }
}

// A text value needs quotes when it is empty or would be misread as more
// than one key=value token.
bool NeedsQuotes(std::string_view value) {
  if (value.empty()) return true;
  for (char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= ' ' || c == '=' || c == '"' || c == '\\' || c == 0x7F) return true;
  }
  return false;
}

// Keys are written as given, except that characters outside
// [A-Za-z0-9_.-] become '_' so that a key is always one token.
std::string SanitizeKey(std::string_view key) {
  // An empty key prints as "_". Built in one constructor call: assigning a
  // literal to the copy trips GCC 12's -Wrestrict false positive at -O3.
  std::string out = key.empty() ? std::string(1, '_') : std::string(key);
  for (char& c : out) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') {
      c = '_';
    }
  }
  return out;
}

bool IsReservedKey(std::string_view key) { return key == "ts" || key == "level" || key == "msg"; }

// `text`, or its first bytes (not inside a UTF-8 character) and
// "... [N bytes in all]" when it is longer than kMaxLogValueBytes.
std::string Bounded(std::string_view text) {
  if (text.size() <= kMaxLogValueBytes) return std::string(text);
  const std::string more = absl::StrCat("... [", text.size(), " bytes in all]");
  size_t cut = kMaxLogValueBytes - more.size();
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  std::string out(text.substr(0, cut));
  out += more;
  return out;
}

LogValue ToOwned(const LogField::Value& value) {
  return std::visit(
      [](const auto& v) -> LogValue {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string_view>) {
          return LogValue(std::in_place_type<std::string>, Bounded(v));
        } else {
          return LogValue(v);
        }
      },
      value);
}

// Sets `key` in `fields`, replacing an earlier value of the same key.
void SetField(std::vector<std::pair<std::string, LogValue>>& fields, std::string_view key,
              LogValue value) {
  for (auto& [k, v] : fields) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  fields.emplace_back(std::string(key), std::move(value));
}

void Emit(LogLevel level, std::string_view message,
          const std::vector<std::pair<std::string, LogValue>>* bound,
          std::initializer_list<LogField> fields) {
  LogRecord record;
  record.time = std::chrono::system_clock::now();
  record.level = level;
  record.message = Bounded(message);
  if (bound != nullptr) record.fields = *bound;
  for (const LogField& field : fields) SetField(record.fields, field.key(), ToOwned(field.value()));
  GetLogSink()->Write(record);
}

void WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return; // dropped: logging never fails the caller
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

} // namespace

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
  case LogLevel::kDebug:
    return "debug";
  case LogLevel::kInfo:
    return "info";
  case LogLevel::kWarning:
    return "warn";
  case LogLevel::kError:
    return "error";
  }
  return "info";
}

absl::StatusOr<LogLevel> ParseLogLevel(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(std::string(name));
  if (lower == "debug") return LogLevel::kDebug;
  if (lower == "info") return LogLevel::kInfo;
  if (lower == "warn" || lower == "warning") return LogLevel::kWarning;
  if (lower == "error") return LogLevel::kError;
  return absl::InvalidArgumentError(absl::StrCat("unknown log level '", std::string(name),
                                                 "' (expected debug, info, warn or error)"));
}

std::string_view LogFormatName(LogFormat format) {
  return format == LogFormat::kJson ? "json" : "text";
}

absl::StatusOr<LogFormat> ParseLogFormat(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(std::string(name));
  if (lower == "text") return LogFormat::kText;
  if (lower == "json") return LogFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown log format '", std::string(name), "' (expected text or json)"));
}

const LogValue* LogRecord::Find(std::string_view key) const {
  for (const auto& [k, v] : fields) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string FormatLogTime(std::chrono::system_clock::time_point time) {
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
  // Floor division, so times before 1970 still format correctly.
  time_t seconds = static_cast<time_t>(micros / 1000000);
  int64_t fraction = micros % 1000000;
  if (fraction < 0) {
    fraction += 1000000;
    seconds -= 1;
  }
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(fraction));
  return buf;
}

std::string FormatLogText(const LogRecord& record) {
  static constexpr std::string_view kLevels[] = {"DEBUG", "INFO ", "WARN ", "ERROR"};
  std::string out = FormatLogTime(record.time);
  out += ' ';
  out += kLevels[static_cast<int>(record.level) & 3];
  out += ' ';
  AppendTextEscaped(out, record.message, /*quoted=*/false);
  for (const auto& [key, value] : record.fields) {
    out += ' ';
    out += SanitizeKey(key);
    out += '=';
    std::visit(
        [&out](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            if (NeedsQuotes(v)) {
              out += '"';
              AppendTextEscaped(out, v, /*quoted=*/true);
              out += '"';
            } else {
              AppendTextEscaped(out, v, /*quoted=*/false);
            }
          } else if constexpr (std::is_same_v<T, bool>) {
            out += v ? "true" : "false";
          } else if constexpr (std::is_same_v<T, double>) {
            AppendDouble(out, v);
          } else {
            absl::StrAppend(&out, v);
          }
        },
        value);
  }
  return out;
}

std::string FormatLogJson(const LogRecord& record) {
  std::string out = "{\"ts\":\"";
  out += FormatLogTime(record.time);
  out += "\",\"level\":\"";
  out += LogLevelName(record.level);
  out += "\",\"msg\":\"";
  AppendJsonEscaped(out, record.message);
  out += '"';
  for (const auto& [key, value] : record.fields) {
    out += ",\"";
    if (IsReservedKey(key)) out += '_';
    AppendJsonEscaped(out, key);
    out += "\":";
    std::visit(
        [&out](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            out += '"';
            AppendJsonEscaped(out, v);
            out += '"';
          } else if constexpr (std::is_same_v<T, bool>) {
            out += v ? "true" : "false";
          } else if constexpr (std::is_same_v<T, double>) {
            if (std::isfinite(v)) {
              AppendDouble(out, v);
            } else {
              out += '"';
              AppendDouble(out, v);
              out += '"';
            }
          } else {
            absl::StrAppend(&out, v);
          }
        },
        value);
  }
  out += '}';
  return out;
}

std::string FormatLogRecord(const LogRecord& record, LogFormat format) {
  return format == LogFormat::kJson ? FormatLogJson(record) : FormatLogText(record);
}

FdLogSink::~FdLogSink() {
  if (owns_fd_) ::close(fd_);
}

absl::StatusOr<std::shared_ptr<FdLogSink>> FdLogSink::OpenFile(const std::string& path,
                                                               LogFormat format) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open log file ", path, ": ", std::strerror(errno)));
  }
  auto sink = std::make_shared<FdLogSink>(fd, format);
  sink->owns_fd_ = true;
  return sink;
}

void FdLogSink::Write(const LogRecord& record) {
  std::string line = FormatLogRecord(record, format_);
  line += '\n';
  std::lock_guard<std::mutex> lock(mu_);
  WriteAll(fd_, line);
}

void CaptureLogSink::Write(const LogRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  records_.push_back(record);
}

std::vector<LogRecord> CaptureLogSink::records() const {
  std::lock_guard<std::mutex> lock(mu_);
  return records_;
}

std::vector<std::string> CaptureLogSink::lines() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> lines;
  lines.reserve(records_.size());
  for (const LogRecord& record : records_) lines.push_back(FormatLogRecord(record, format_));
  return lines;
}

void CaptureLogSink::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  records_.clear();
}

std::shared_ptr<LogSink> SetLogSink(std::shared_ptr<LogSink> sink) {
  std::lock_guard<std::mutex> lock(SinkMutex());
  std::shared_ptr<LogSink> previous = std::move(SinkSlot());
  SinkSlot() = std::move(sink);
  return previous;
}

std::shared_ptr<LogSink> GetLogSink() {
  std::lock_guard<std::mutex> lock(SinkMutex());
  return SinkSlot() != nullptr ? SinkSlot() : DefaultSink();
}

LogLevel SetMinLogLevel(LogLevel level) {
  return static_cast<LogLevel>(
      log_internal::min_level.exchange(static_cast<int>(level), std::memory_order_relaxed));
}

LogLevel MinLogLevel() {
  return static_cast<LogLevel>(log_internal::min_level.load(std::memory_order_relaxed));
}

absl::Status ConfigureLogging(LogFormat format, LogLevel min_level, const std::string& file) {
  std::shared_ptr<LogSink> sink;
  if (file.empty()) {
    sink = std::make_shared<FdLogSink>(STDERR_FILENO, format);
  } else {
    absl::StatusOr<std::shared_ptr<FdLogSink>> opened = FdLogSink::OpenFile(file, format);
    if (!opened.ok()) return opened.status();
    sink = *std::move(opened);
  }
  SetLogSink(std::move(sink));
  SetMinLogLevel(min_level);
  return absl::OkStatus();
}

void Log(LogLevel level, std::string_view message, std::initializer_list<LogField> fields) {
  if (!LogEnabled(level)) return;
  Emit(level, message, nullptr, fields);
}

Logger Logger::With(std::initializer_list<LogField> fields) const {
  Logger copy = *this;
  for (const LogField& field : fields) SetField(copy.fields_, field.key(), ToOwned(field.value()));
  return copy;
}

void Logger::Log(LogLevel level, std::string_view message,
                 std::initializer_list<LogField> fields) const {
  if (!LogEnabled(level)) return;
  Emit(level, message, &fields_, fields);
}

ScopedLogCapture::ScopedLogCapture(LogLevel min_level, LogFormat format)
    : sink_(std::make_shared<CaptureLogSink>(format)), previous_sink_(SetLogSink(sink_)),
      previous_level_(SetMinLogLevel(min_level)) {}

ScopedLogCapture::~ScopedLogCapture() {
  SetLogSink(std::move(previous_sink_));
  SetMinLogLevel(previous_level_);
}

} // namespace kiln::util
