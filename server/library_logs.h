// Routes the log output of the libraries kilnd links into its own structured
// log (util/log.h), so that in JSON mode every line on stderr is one JSON
// object: protobuf's (google::protobuf::SetLogHandler; Debian 12's protobuf
// 3.21 logs through it, not through Abseil) and gRPC's (gpr_set_log_function;
// gRPC 1.51 logs through gpr_log). A record carries the library's message
// and "library" (protobuf | grpc), "file" and "line" fields.
//
// Levels: gRPC's are kept (debug, info, error). protobuf's ERROR is logged
// as a warning: what protobuf reports at run time is a message a client sent
// that does not parse (e.g. a string field that is not UTF-8), which is the
// client's error, answered to it, not the daemon's. FATAL stays an error.
//
// Call once, early, before other threads use protobuf or gRPC (the hooks are
// process-wide and setting them is not thread-safe in either library).
#pragma once

namespace kiln::server {

void RouteLibraryLogs();

} // namespace kiln::server
