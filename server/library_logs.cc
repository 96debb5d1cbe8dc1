#include "server/library_logs.h"

#include <cstdlib>
#include <string>

#include <google/protobuf/stubs/logging.h>
#include <grpc/support/log.h>

#include "absl/base/internal/raw_logging.h"
#include "absl/base/log_severity.h"
#include "util/log.h"

namespace kiln::server {
namespace {

void ProtobufLog(google::protobuf::LogLevel level, const char* file, int line,
                 const std::string& message) {
  util::LogLevel ours = util::LogLevel::kInfo;
  switch (level) {
  case google::protobuf::LOGLEVEL_INFO:
    ours = util::LogLevel::kInfo;
    break;
  case google::protobuf::LOGLEVEL_WARNING:
  case google::protobuf::LOGLEVEL_ERROR:
    ours = util::LogLevel::kWarning;
    break;
  case google::protobuf::LOGLEVEL_FATAL:
    ours = util::LogLevel::kError;
    break;
  }
  if (!util::LogEnabled(ours)) return;
  util::Log(ours, message,
            {{"library", "protobuf"}, {"file", file != nullptr ? file : ""}, {"line", line}});
}

void GrpcLog(gpr_log_func_args* args) {
  util::LogLevel ours = util::LogLevel::kInfo;
  switch (args->severity) {
  case GPR_LOG_SEVERITY_DEBUG:
    ours = util::LogLevel::kDebug;
    break;
  case GPR_LOG_SEVERITY_INFO:
    ours = util::LogLevel::kInfo;
    break;
  case GPR_LOG_SEVERITY_ERROR:
    ours = util::LogLevel::kError;
    break;
  }
  if (!util::LogEnabled(ours)) return;
  util::Log(ours, args->message != nullptr ? args->message : "",
            {{"library", "grpc"},
             {"file", args->file != nullptr ? args->file : ""},
             {"line", args->line}});
}

// ABSL_INTERNAL_LOG's dispatch (the message is whole here). A FATAL one
// must not return: it is logged, then the process aborts as Abseil's own
// function would.
void AbseilLog(absl::LogSeverity severity, const char* file, int line, const std::string& message) {
  util::LogLevel ours = util::LogLevel::kInfo;
  switch (severity) {
  case absl::LogSeverity::kInfo:
    ours = util::LogLevel::kInfo;
    break;
  case absl::LogSeverity::kWarning:
    ours = util::LogLevel::kWarning;
    break;
  case absl::LogSeverity::kError:
  case absl::LogSeverity::kFatal:
    ours = util::LogLevel::kError;
    break;
  }
  if (util::LogEnabled(ours) || severity == absl::LogSeverity::kFatal) {
    util::Log(ours, message,
              {{"library", "abseil"},
               {"file", file != nullptr ? file : ""},
               {"line", line},
               {"fatal", severity == absl::LogSeverity::kFatal}});
  }
  if (severity == absl::LogSeverity::kFatal) std::abort();
}

// ABSL_RAW_LOG(FATAL, ...) calls this with the whole line it wrote to
// stderr as plain text (its only hook that sees the message), just before
// it aborts: the reason reaches the structured log too.
void AbseilRawFatal(const char* file, int line, const char* buf_start, const char* prefix_end,
                    const char* buf_end) {
  std::string message(prefix_end != nullptr ? prefix_end : buf_start);
  while (!message.empty() && message.back() == '\n') message.pop_back();
  util::Log(util::LogLevel::kError, message,
            {{"library", "abseil"},
             {"file", file != nullptr ? file : ""},
             {"line", line},
             {"fatal", true}});
}

} // namespace

void RouteLibraryLogs() {
  google::protobuf::SetLogHandler(&ProtobufLog);
  gpr_set_log_function(&GrpcLog);
  absl::raw_logging_internal::RegisterInternalLogFunction(&AbseilLog);
  absl::raw_logging_internal::RegisterAbortHook(&AbseilRawFatal);
}

} // namespace kiln::server
