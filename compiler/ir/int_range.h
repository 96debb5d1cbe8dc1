// Range checks for integers a user controls (tile sizes, extents, shapes,
// stage counts) before the compiler narrows them or multiplies them.
//
// Why: the IR's loop and block variables are int32 and lowering flattens
// loops and buffers into int32 index arithmetic, so a value that does not
// fit would wrap (a loop over 2**32 + 32 elements runs 32 times) and the
// kernel would be wrong without a word. Every site that narrows a user
// value, or multiplies user values into a size, checks it here and returns
// a located error (ir::ErrorAt: "file:line:col: message") instead.
//
// Thread-safe (pure functions). Errors: InvalidArgument only.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"

namespace kiln::ir {

inline constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
inline constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

// The most iterations of a loop or region that lowering spreads over the
// threads or pipelines: their int32 indices go past the extent, to the
// thread layout's padding (r * threads + tid up to extent + threads - 1,
// times a vector width) or to the stages a pipeline loads ahead (up to 64),
// so the extent keeps a factor of two of headroom below int32's limit.
inline constexpr int64_t kMaxTileSpace = int64_t{1} << 30;

// OK when lo <= v <= hi; otherwise
//   "file:line:col: <what> must be in [lo, hi], got v[ (<why>)]".
absl::Status CheckIntRange(int64_t v, int64_t lo, int64_t hi, std::string_view file, Loc loc,
                           std::string_view what, std::string_view why = {});

// CheckIntRange, then the value as an int32 (lo and hi must lie within
// int32; the caller's range is the one the user sees in the message).
absl::StatusOr<int32_t> NarrowToInt32(int64_t v, int64_t lo, int64_t hi, std::string_view file,
                                      Loc loc, std::string_view what, std::string_view why = {});

// a + b and a * b, or nullopt where int64 would overflow.
std::optional<int64_t> CheckedAdd(int64_t a, int64_t b);
std::optional<int64_t> CheckedMul(int64_t a, int64_t b);

// Whether literal `v` is a value of integer (or bool) dtype `t`, as the IR
// stores it in Expr::ival: signed types sign-extended, uint8..uint32
// zero-extended, uint64 any bit pattern, bool 0 or 1. Float dtypes: false.
bool FitsDType(int64_t v, DType t);

} // namespace kiln::ir
