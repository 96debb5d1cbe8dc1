#include "server/library_logs.h"

#include <string>

#include <google/protobuf/stubs/logging.h>
#include <grpc/support/log.h>

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

} // namespace

void RouteLibraryLogs() {
  google::protobuf::SetLogHandler(&ProtobufLog);
  gpr_set_log_function(&GrpcLog);
}

} // namespace kiln::server
