// One-shot zstd compression of blob payloads (libzstd).
// Thread-safe: each call uses its own context.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kiln::cache {

// Compresses `bytes` at `level` (1..19). Internal error if libzstd fails.
absl::StatusOr<std::string> ZstdCompress(std::string_view bytes, int level);

// Decompresses one frame that must expand to exactly `raw_size` bytes; a
// malformed frame or a size mismatch is kDataLoss (a corrupt blob).
absl::StatusOr<std::string> ZstdDecompress(std::string_view frame, uint64_t raw_size);

} // namespace kiln::cache
