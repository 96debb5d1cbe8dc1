// `kiln health`: asks a kilnd's grpc.health.v1.Health service whether it is
// serving, for container health checks and scripts:
//
//   kiln health [--server HOST:PORT] [--timeout SECONDS] [--service NAME]
//               [--tls-ca-file FILE [--tls-cert-file FILE --tls-key-file FILE]]
//               [--tls-server-name NAME] [--json]
//
// --service "" (the default) asks about the whole server. --tls-ca-file
// speaks TLS and trusts that CA bundle; --tls-cert-file and --tls-key-file
// add a client certificate (a kilnd with tls.client_ca_file); with
// --tls-server-name the server's certificate is checked against NAME instead
// of the host of --server (probing 127.0.0.1 with a certificate issued for a
// DNS name). No token is needed: kilnd leaves the health service open.
//
// Prints the status (SERVING, NOT_SERVING, SERVICE_UNKNOWN, UNKNOWN) and
// exits 0 only for SERVING; 1 for any other answer (also NOT_FOUND for a
// service the server does not know); 5 when the server cannot be reached or
// does not answer within --timeout (default 5 s); 2 for a usage error or an
// unreadable TLS file.
// Thread-compatible.
#pragma once

#include "clients/cpp/command_table.h"

namespace kiln::cli {

Command HealthCommand();

} // namespace kiln::cli
