// The cache's short error vocabulary and its mapping onto absl::Status codes.
//
// Every fallible cache call returns absl::Status / absl::StatusOr. The code
// says which of five things went wrong, so a caller (the daemon's gRPC
// adapter, the CLI) can switch on it without parsing messages:
//
//   CacheError     absl code            meaning
//   kNotFound      kNotFound            no such entry (a miss)
//   kCorrupt       kDataLoss            stored bytes or the index are damaged
//   kTimeout       kDeadlineExceeded    the index stayed locked past the retry budget
//   kIo            kInternal            an I/O error other than a full disk
//   kExhausted     kResourceExhausted   disk full or the cache's hard size limit
//
// Argument errors (a malformed key) are kInvalidArgument and a cache written
// by a newer schema is kFailedPrecondition; both are programming or
// deployment errors rather than storage states, so they have no CacheError.
// Thread-safe (pure functions).
#pragma once

#include <optional>
#include <string_view>

#include "absl/status/status.h"

namespace kiln::cache {

enum class CacheError { kNotFound, kCorrupt, kTimeout, kIo, kExhausted };

// The absl code that carries `error`.
absl::StatusCode StatusCodeOf(CacheError error);
// A status with the code of `error` and `message`.
absl::Status MakeError(CacheError error, std::string_view message);
// Which CacheError `status` carries; nullopt for OK and for codes outside the
// table above.
std::optional<CacheError> CacheErrorOf(const absl::Status& status);
// Debian's Abseil has its own string_view; StrCat arguments go through this.
inline absl::string_view AsAbsl(std::string_view s) { return {s.data(), s.size()}; }

// "not_found", "corrupt", "timeout", "io", "exhausted".
std::string_view CacheErrorName(CacheError error);

// The status for a failed system call: ENOSPC and EDQUOT are kExhausted
// ("disk full"), everything else kIo; the message is "<what>: <strerror>".
absl::Status ErrnoError(int err, std::string_view what);

} // namespace kiln::cache
