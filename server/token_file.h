// The bearer-token file named by auth.tokens_file: the tokens a client may
// present as "authorization: Bearer TOKEN", each with the client name that
// jobs, logs, metrics and fair share use for it (never the token itself) and
// the role that says which RPCs it may call.
//
//   # one token per line: TOKEN [CLIENT_NAME] [role=ROLE]; '#' starts a comment
//   3q2+7w8AAbcdEFgh1234ijkl  ci-runners  role=compile
//   Zm9vYmFyYmF6cXV4cXV1eA==  role=admin
//   a-b.c_d~e+f/g0123456789   trainer
//
// A token is RFC 6750's b64token ([A-Za-z0-9-._~+/]+=*) of at least 16
// characters; a line without a name gets "token-" + the first 8 hex digits
// of the token's SHA-256. Roles, each allowing what the ones before it do:
//   read     lookups (GetArtifact, LookupBest, ListMeasurements, CacheStats,
//            ListDevices, GetVersion, Echo) and its own jobs (GetJob,
//            WatchJob, ListJobs, CancelJob)
//   compile  + Compile and Benchmark
//   tune     + Tune, and CacheStats' zero (every client's statistics baseline)
//   admin    + every client's jobs (see, watch, list, cancel)
// A line without role= gets kDefaultRole (tune): everything a token could
// do before roles existed except another client's jobs, so that a token
// file written then keeps working. Pure functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::server {

enum class Role : int { kRead = 0, kCompile = 1, kTune = 2, kAdmin = 3 };
inline constexpr Role kDefaultRole = Role::kTune;
// "read", "compile", "tune", "admin".
std::string_view RoleName(Role role);
// One of RoleName's names; nullopt otherwise.
std::optional<Role> ParseRole(std::string_view name);
// Whether `have` allows what `need` does (roles are ordered).
inline bool RoleAllows(Role have, Role need) {
  return static_cast<int>(have) >= static_cast<int>(need);
}

struct BearerToken {
  std::string token;
  std::string client;
  Role role = kDefaultRole;
};

// Errors (InvalidArgument, "FILE:LINE: ..."): a malformed or short token, a
// line with more fields than TOKEN [CLIENT_NAME] [role=ROLE], an unknown role, a token or client
// name given twice, and a file without any token (which would lock every client out). NotFound /
// PermissionDenied when the file cannot be read.
absl::StatusOr<std::vector<BearerToken>> LoadTokenFile(const std::string& path);
absl::StatusOr<std::vector<BearerToken>> ParseTokenFile(std::string_view text,
                                                        std::string_view file_name);

// The entry whose token equals `presented`, or nullptr. Compares digests of
// every entry in constant time, so the time taken says nothing about which
// token (or how much of one) matched.
const BearerToken* FindBearerToken(const std::vector<BearerToken>& tokens,
                                   std::string_view presented);

} // namespace kiln::server
