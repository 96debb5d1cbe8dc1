// Python's text of compile-time values, for f-strings and str(): str() and
// repr() of numbers, strings, None, dtypes and (nested) tuples, lists and
// dicts, and the format-spec mini-language of format() for strings, ints
// and floats ([[fill]align][sign][#][0][width][.precision][type]).
//
// Errors: a message without location (the caller adds it) for a value that
// has no text here (a symbolic expression, a buffer, ...), a spec the value
// does not take, or a result longer than the caller's limit.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "compiler/frontend/value.h"

namespace kiln::frontend {

// Widths and precisions above this are refused (they only allocate).
inline constexpr int kMaxFormatWidth = 4096;

// str(v) (repr(v) when `repr`), at most `max_bytes` long.
absl::StatusOr<std::string> PyStr(const Value& v, bool repr, size_t max_bytes);

// format(v, spec).
absl::StatusOr<std::string> PyFormat(const Value& v, std::string_view spec, size_t max_bytes);

// Python's repr of a float: the shortest text that reads back the same
// ("0.1", "1.0", "1e+16", "inf").
std::string PyFloatRepr(double d);

} // namespace kiln::frontend
