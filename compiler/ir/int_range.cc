#include "compiler/ir/int_range.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"

namespace kiln::ir {

absl::Status CheckIntRange(int64_t v, int64_t lo, int64_t hi, std::string_view file, Loc loc,
                           std::string_view what, std::string_view why) {
  if (v >= lo && v <= hi) return absl::OkStatus();
  std::string message =
      absl::StrCat(std::string(what), " must be in [", lo, ", ", hi, "], got ", v);
  if (!why.empty()) absl::StrAppend(&message, " (", std::string(why), ")");
  return ErrorAt(file, loc, message);
}

absl::StatusOr<int32_t> NarrowToInt32(int64_t v, int64_t lo, int64_t hi, std::string_view file,
                                      Loc loc, std::string_view what, std::string_view why) {
  if (lo < kInt32Min) lo = kInt32Min;
  if (hi > kInt32Max) hi = kInt32Max;
  if (absl::Status s = CheckIntRange(v, lo, hi, file, loc, what, why); !s.ok()) return s;
  return static_cast<int32_t>(v);
}

std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

bool FitsDType(int64_t v, DType t) {
  if (t == DType::kBool) return v == 0 || v == 1;
  if (!IsInteger(t)) return false;
  const int bits = DTypeBits(t);
  if (bits >= 64) return true;
  if (IsUnsigned(t)) return v >= 0 && v < (int64_t{1} << bits);
  const int64_t half = int64_t{1} << (bits - 1);
  return v >= -half && v < half;
}

} // namespace kiln::ir
