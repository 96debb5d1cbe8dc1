// A gRPC server interceptor for what no kiln.v1.Kiln handler can do itself:
//  - Reflection (grpc.reflection.*) is behind the bearer tokens like every
//    other RPC: without an accepted token the call ends UNAUTHENTICATED and
//    no reflection response leaves the daemon (each one is dropped before it
//    is sent). `open_reflection` (auth.open_reflection) serves it to anyone,
//    for development; a daemon without tokens serves it to anyone anyway.
//  - A request that does not parse as its kiln.v1 message (truncated bytes, a
//    string field that is not UTF-8, messages nested deeper than protobuf's
//    recursion limit of 100, ...) is answered INVALID_ARGUMENT naming the
//    message type and these causes. gRPC parses these requests before any
//    Kiln code sees their bytes, so the cause cannot be told apart here;
//    The methods that take a program (Compile, Benchmark, Tune, LookupBest)
//    read their own bytes and name the cause themselves (wire_scan.h).
//    gRPC's callback handlers answer it
//    UNIMPLEMENTED with an empty message, which a client cannot tell from
//    "this daemon lacks the method"; the Kiln handlers never answer
//    UNIMPLEMENTED without a message, so that pair means a parse failure.
//  - Every status message leaves bounded (grpc_status.h,
//    kMaxStatusMessageBytes), whichever handler made it.
// Health checks are untouched (probes carry no token).
// Thread-safe; one interceptor object per call, as gRPC requires.
#pragma once

#include <memory>

#include <grpcpp/support/server_interceptor.h>

#include "server/authenticator.h"

namespace kiln::server {

// `auth` must outlive the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
CallPolicyFactory(const Authenticator* auth, bool open_reflection);

} // namespace kiln::server
