// Routes the log output of the libraries kilnd links into its own structured
// log (util/log.h), so that in JSON mode every line on stderr is one JSON
// object: protobuf's (google::protobuf::SetLogHandler; Debian 12's protobuf
// 3.21 logs through it, not through Abseil), gRPC's (gpr_set_log_function;
// gRPC 1.51 logs through gpr_log) and Abseil's ABSL_INTERNAL_LOG
// (raw_logging_internal::RegisterInternalLogFunction). A record carries the
// library's message and "library" (protobuf | grpc | abseil), "file" and
// "line" fields; Abseil's also "fatal".
//
// Not routed: Abseil's ABSL_RAW_LOG lines stay plain text on stderr. Debian
// 12's Abseil (20220623) offers no hook that sees a raw message: the filter
// and prefix hook runs before the message is formatted (it can add a prefix
// or drop the line, nothing else). A FATAL raw line is logged structured as
// well, from the abort hook (which sees the whole line), before the abort.
// These hooks are in Abseil's internal namespace, the only place it has them.
//
// Levels: gRPC's are kept (debug, info, error), and Abseil's (a FATAL one
// is an error, then the process aborts as Abseil's own would). protobuf's
// ERROR is logged as a warning: what protobuf reports at run time is a
// message a client sent that does not parse (e.g. a string field that is
// not UTF-8), which is the client's error, answered to it, not the
// daemon's. FATAL stays an error.
//
// Call once, early, before other threads use protobuf or gRPC (the hooks are
// process-wide and setting them is not thread-safe in either library).
#pragma once

namespace kiln::server {

void RouteLibraryLogs();

} // namespace kiln::server
