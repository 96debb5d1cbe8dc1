// Names and properties of IR element types.
//
// Canonical names are TileLang's: "bool", "int8".."int64", "uint8".."uint64",
// "float16", "bfloat16", "float32", "float64", "float8_e4m3", "float8_e5m2".
// Thread-safe (pure functions).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::ir {

// The canonical name of `t`.
std::string_view DTypeName(DType t);

// Parses a canonical name. Returns nullopt for anything else (aliases such as
// "float", "half" or "float8_e4m3fn" are the frontend's business).
std::optional<DType> ParseDType(std::string_view name);

int DTypeBits(DType t);
bool IsFloat(DType t);    // includes float16, bfloat16 and float8 kinds
bool IsInteger(DType t);  // signed or unsigned, not bool
bool IsUnsigned(DType t); // uint8..uint64
bool IsBool(DType t);

// All dtypes, in enum order (for tests and tables).
const std::vector<DType>& AllDTypes();

std::string_view ScopeName(Scope s); // "global", "shared", "shared.dyn", "fragment", "local", "var"
std::optional<Scope> ParseScope(std::string_view name);

} // namespace kiln::ir
