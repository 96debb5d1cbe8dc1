#include "cache/zstd_codec.h"

#include <zstd.h>

#include "absl/strings/str_cat.h"

namespace kiln::cache {

absl::StatusOr<std::string> ZstdCompress(std::string_view bytes, int level) {
  std::string out(ZSTD_compressBound(bytes.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), level);
  if (ZSTD_isError(n) != 0U) {
    return absl::InternalError(absl::StrCat("zstd compression failed: ", ZSTD_getErrorName(n)));
  }
  out.resize(n);
  return out;
}

absl::StatusOr<std::string> ZstdDecompress(std::string_view frame, uint64_t raw_size) {
  const unsigned long long declared = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (declared != raw_size) {
    return absl::DataLossError(
        absl::StrCat("zstd frame declares ", declared, " bytes, expected ", raw_size));
  }
  std::string out(raw_size, '\0');
  const size_t n = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
  if (ZSTD_isError(n) != 0U) {
    return absl::DataLossError(absl::StrCat("zstd frame is corrupt: ", ZSTD_getErrorName(n)));
  }
  if (n != raw_size) {
    return absl::DataLossError(
        absl::StrCat("zstd frame expands to ", n, " bytes, expected ", raw_size));
  }
  return out;
}

} // namespace kiln::cache
