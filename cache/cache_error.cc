#include "cache/cache_error.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace kiln::cache {

absl::StatusCode StatusCodeOf(CacheError error) {
  switch (error) {
  case CacheError::kNotFound:
    return absl::StatusCode::kNotFound;
  case CacheError::kCorrupt:
    return absl::StatusCode::kDataLoss;
  case CacheError::kTimeout:
    return absl::StatusCode::kDeadlineExceeded;
  case CacheError::kIo:
    return absl::StatusCode::kInternal;
  case CacheError::kExhausted:
    return absl::StatusCode::kResourceExhausted;
  }
  return absl::StatusCode::kInternal;
}

absl::Status MakeError(CacheError error, std::string_view message) {
  return {StatusCodeOf(error), absl::string_view(message.data(), message.size())};
}

std::optional<CacheError> CacheErrorOf(const absl::Status& status) {
  switch (status.code()) {
  case absl::StatusCode::kNotFound:
    return CacheError::kNotFound;
  case absl::StatusCode::kDataLoss:
    return CacheError::kCorrupt;
  case absl::StatusCode::kDeadlineExceeded:
    return CacheError::kTimeout;
  case absl::StatusCode::kInternal:
    return CacheError::kIo;
  case absl::StatusCode::kResourceExhausted:
    return CacheError::kExhausted;
  default:
    return std::nullopt;
  }
}

std::string_view CacheErrorName(CacheError error) {
  switch (error) {
  case CacheError::kNotFound:
    return "not_found";
  case CacheError::kCorrupt:
    return "corrupt";
  case CacheError::kTimeout:
    return "timeout";
  case CacheError::kIo:
    return "io";
  case CacheError::kExhausted:
    return "exhausted";
  }
  return "io";
}

absl::Status ErrnoError(int err, std::string_view what) {
  char buf[256];
  const std::string text = strerror_r(err, buf, sizeof(buf));
  if (err == ENOSPC || err == EDQUOT) {
    return MakeError(
        CacheError::kExhausted,
        absl::StrCat("disk full: ", absl::string_view(what.data(), what.size()), ": ", text));
  }
  return MakeError(CacheError::kIo,
                   absl::StrCat(absl::string_view(what.data(), what.size()), ": ", text));
}

} // namespace kiln::cache
