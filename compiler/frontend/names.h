// Name tables of the TileLang surface the frontend understands: dtype names
// and aliases, the T.* builtins, Python builtins, module paths, pass-config
// keys, and the checks that keep client text out of IR names and messages.
// Thread-safe (immutable tables).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "compiler/frontend/ast.h"
#include "compiler/ir/ir.h"

namespace kiln::frontend {

// [A-Za-z_][A-Za-z0-9_]*, at most 256 characters.
bool IsIdentifier(std::string_view s);

// Words the textual IR reserves (the verifier rejects them as names).
bool IsReservedIrName(std::string_view s);

// A dtype by TileLang name or alias: canonical names, "float" -> float32,
// "half", "double", "int", "long", "short", "uint", "float8_e4m3fn", ...
std::optional<ir::DType> ParseDTypeAlias(std::string_view name);

// A dtype by its name in torch (torch.float16, torch.half, torch.bfloat16...).
std::optional<ir::DType> TorchDType(std::string_view name);

// Names of Python builtins the evaluator knows (range, len, min, ...).
bool IsPythonBuiltin(std::string_view name);

// Host helpers of tilelang.math (also tilelang.<name>) the frontend
// evaluates at compile time: next_power_of_2, cdiv.
bool IsHostMathHelper(std::string_view name);
// Calls of TileLang's in-kernel event tracer (tilelang.tools.cuda.iket:
// range, mark, payload), which only profile: Kiln runs them as no-ops.
bool IsIketCall(std::string_view name);

// T.<name> functions and namespaces the frontend knows (without "T.").
bool IsTBuiltin(std::string_view name);

// A T.<name> (without "T.") that TileLang has and Kiln does not implement
// yet: the rewrite that works in Kiln, or "" when there is none. nullopt
// for a name Kiln does not know TileLang to have.
std::optional<std::string_view> MissingTileLangName(std::string_view name);

// A TileLang dtype name Kiln has no type for yet (int4, tfloat32, ...).
bool IsMissingTileLangDType(std::string_view name);

// The layout kind a tilelang layout function makes ("swizzled", ...), or
// nullopt when `fn` (e.g. "make_swizzled_layout") is not a supported one.
std::optional<std::string> LayoutKind(std::string_view fn);

// "tilelang.language" -> "T"; other module paths are returned unchanged.
std::string CanonicalModule(std::string_view path);

// The string value of tilelang.PassConfigKey.<member>, if known.
std::optional<std::string> PassConfigKeyValue(std::string_view member);

// Strings allowed as pass-config keys: [A-Za-z0-9_.]+, at most 128 chars.
bool IsConfigKey(std::string_view s);

// Short strings of [A-Za-z0-9_.+-:/=, ] (safe to store and echo).
bool IsSafeText(std::string_view s);

// Printable ASCII without control characters (assert messages).
bool IsPrintableText(std::string_view s);

// The dotted text of a decorator's callee ("tilelang.jit", "T.prim_func"),
// empty when it is not a dotted name.
std::string DottedName(const PyExpr& e);

// @tilelang.jit / @jit (with or without arguments) and @T.prim_func.
bool IsJitDecorator(const PyExpr& d);
bool IsPrimFuncDecorator(const PyExpr& d);

} // namespace kiln::frontend
