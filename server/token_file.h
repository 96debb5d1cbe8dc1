// The bearer-token file named by auth.tokens_file: the tokens a client may
// present as "authorization: Bearer TOKEN", each with the client name that
// logs, metrics and fair share use for it (never the token itself).
//
//   # one token per line: TOKEN [CLIENT_NAME]; '#' starts a comment
//   3q2+7w8AAbcdEFgh1234ijkl  ci-runners
//   Zm9vYmFyYmF6cXV4cXV1eA==
//
// A token is RFC 6750's b64token ([A-Za-z0-9-._~+/]+=*) of at least 16
// characters; a line without a name gets "token-" + the first 8 hex digits
// of the token's SHA-256. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::server {

struct BearerToken {
  std::string token;
  std::string client;
};

// Errors (InvalidArgument, "FILE:LINE: ..."): a malformed or short token, a
// line with more than two fields, a token or client name given twice, and a
// file without any token (which would lock every client out). NotFound /
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
