// Who is calling: checks a call's bearer token (when the daemon has a token
// file) and names the client that fair share, logs and metrics count the
// call against.
//
// With tokens: a call without "authorization: Bearer TOKEN" or with an
// unknown token is UNAUTHENTICATED (the message never echoes the token);
// the client is the token's name, whatever FairShareConfig::ClientKey says
// (kPeer and kMetadata only split one token's calls further). Without
// tokens: every call passes; the client is, by FairShareConfig::ClientKey,
// the peer's address (kAuto, kPeer: every client behind one NAT shares one
// queue share) or the "x-kiln-client" metadata (kMetadata, for trusted
// networks).
// The health service is not behind tokens (probes carry none).
// Thread-safe (immutable after construction).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/server_context.h>

#include "absl/status/statusor.h"
#include "server/server_config.h"
#include "server/token_file.h"

namespace kiln::server {

// Who a call comes from (Authenticator::Authenticate).
struct Caller {
  // The identity that owns the jobs the call creates: the token's client
  // name, or "" (one anonymous identity) when the daemon has no tokens.
  std::string identity;
  // What the call may do; every caller is an admin without tokens.
  Role role = Role::kAdmin;
  // The name fair share counts the call against (Check's answer).
  std::string client;

  bool Allows(Role need) const { return RoleAllows(role, need); }
  bool admin() const { return role == Role::kAdmin; }
};

class Authenticator {
 public:
  // Loads the token file, if any. Errors: those of LoadTokenFile.
  static absl::StatusOr<std::unique_ptr<Authenticator>> Create(const AuthConfig& auth,
                                                               const FairShareConfig& fair_share);
  // Tokens given directly (tests).
  Authenticator(std::vector<BearerToken> tokens, FairShareConfig::ClientKey key);

  // The caller's client name, or Unauthenticated.
  absl::StatusOr<std::string> Check(const grpc::ServerContextBase& ctx) const;
  bool tokens_required() const { return !tokens_.empty(); }

  // The caller: Check's client plus the token's identity and role. Errors:
  // those of Check (Unauthenticated).
  absl::StatusOr<Caller> Authenticate(const grpc::ServerContextBase& ctx) const;
  // Authenticate, then PermissionDenied ("... `rpc` needs role compile ...",
  // naming the caller's client and role, never the token) unless the
  // caller's role allows `need`.
  absl::StatusOr<Caller> Authorize(const grpc::ServerContextBase& ctx, Role need,
                                   std::string_view rpc) const;
  // For calls outside kiln.v1.Kiln (reflection), from the value of their
  // "authorization" metadata ("": none): OK when the daemon has no tokens or
  // the bearer token is one of them; Unauthenticated otherwise.
  absl::Status CheckBearer(std::string_view authorization) const;

 private:
  std::vector<BearerToken> tokens_;
  FairShareConfig::ClientKey key_;
};

// The client name Check returns for a call with `token` (null: no tokens),
// from the peer's host ("ipv4:10.0.0.1") and its x-kiln-client metadata ("":
// none). With a token: the token's name, "name@peer" (kPeer) or
// "name/metadata" (kMetadata, when given); without: the metadata (kMetadata,
// when given, at most 128 bytes) or the peer's host.
std::string FairShareClient(const BearerToken* token, FairShareConfig::ClientKey key,
                            std::string_view peer_host, std::string_view metadata_client);

} // namespace kiln::server
