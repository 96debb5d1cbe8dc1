// A gRPC server interceptor that observes every call the daemon serves
// (kiln.v1.Kiln, health, reflection): its method, status code and latency go
// to the per-RPC metrics (daemon_metrics.h), and a log record with a request
// id (the client's "x-request-id" metadata, or a fresh one) is written at
// debug level, or at warning level for calls that fail with a server-side
// code (INTERNAL, UNKNOWN, DATA_LOSS, UNAVAILABLE).
// Thread-safe; one interceptor object per call, as gRPC requires.
#pragma once

#include <memory>
#include <vector>

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_interceptor.h>

#include "server/daemon_metrics.h"

namespace kiln::server {

// Interceptor creators for grpc::ServerBuilder::experimental().
// SetInterceptorCreators(). `metrics` may be null (logging only); it must
// outlive the server.
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
RpcObserverFactories(DaemonMetrics* metrics);

} // namespace kiln::server
