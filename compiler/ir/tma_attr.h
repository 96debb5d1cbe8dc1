// The tensor maps of a lowered (thread IR) program that loads tiles with
// Hopper TMA: lowering records map k as the program attr `kiln.tma.<k>` =
// "<param>:<box>:<swizzle>", e.g. "A:128x64:128" (the tensor parameter's IR
// name, the box outermost first, the swizzle in bytes: 0, 32, 64 or 128),
// and the `tma_load_*` / `prefetch_tma_desc` intrinsics name the map by k.
// The emitter turns each into a kernel argument (CUDA) or a descriptor built
// in the kernel (CPU), and the launch metadata into a TensorMapSpec.
// Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kiln::ir {

struct TmaMapAttr {
  std::string param;
  std::vector<int64_t> box; // outermost first
  int swizzle_bytes = 0;
};

inline std::string TmaAttrKey(size_t k) { return absl::StrCat("kiln.tma.", k); }

inline std::string FormatTmaAttr(const TmaMapAttr& m) {
  return absl::StrCat(m.param, ":", absl::StrJoin(m.box, "x"), ":", m.swizzle_bytes);
}

inline std::optional<TmaMapAttr> ParseTmaAttr(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() != 3 || parts[0].empty()) return std::nullopt;
  TmaMapAttr m;
  m.param = parts[0];
  for (absl::string_view b : absl::StrSplit(parts[1], 'x')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(b, &v) || v < 1 || v > 256) return std::nullopt;
    m.box.push_back(v);
  }
  if (m.box.empty() || m.box.size() > 5 || !absl::SimpleAtoi(parts[2], &m.swizzle_bytes) ||
      (m.swizzle_bytes != 0 && m.swizzle_bytes != 32 && m.swizzle_bytes != 64 &&
       m.swizzle_bytes != 128)) {
    return std::nullopt;
  }
  return m;
}

// The maps of `attrs` in index order (kiln.tma.0, kiln.tma.1, ...), stopping
// at the first index that is missing; nullopt when one does not parse.
inline std::optional<std::vector<TmaMapAttr>>
TmaMaps(const std::map<std::string, std::string>& attrs) {
  std::vector<TmaMapAttr> out;
  for (size_t k = 0;; ++k) {
    auto it = attrs.find(TmaAttrKey(k));
    if (it == attrs.end()) return out;
    std::optional<TmaMapAttr> m = ParseTmaAttr(it->second);
    if (!m) return std::nullopt;
    out.push_back(std::move(*m));
  }
}

} // namespace kiln::ir
