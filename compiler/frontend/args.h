// Matching of evaluated call arguments against the signature of a builtin
// (T.copy, T.alloc_shared, range, ...), with Python's error messages for
// surplus, missing, unknown and duplicated arguments.
// Thread-safe (pure functions).
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/frontend/value.h"
#include "compiler/ir/ir.h"

namespace kiln::frontend {

struct Arg;

// The arguments of one call, by parameter position; nullopt when not given.
// `names` lists the parameters in order; the first `required` must be given.
// Parameters from index `positional` on are keyword-only (SIZE_MAX: none).
// Errors are located at the offending argument, or at `loc` for a missing one.
absl::StatusOr<std::vector<std::optional<Value>>>
MatchArgs(std::string_view file, ir::Loc loc, std::string_view fn, const std::vector<Arg>& args,
          const std::vector<std::string_view>& names, size_t required,
          size_t positional = ~size_t{0});

// The location of the argument bound to parameter `index` (call loc if none).
ir::Loc ArgLoc(const std::vector<Arg>& args, const std::vector<std::string_view>& names,
               size_t index, ir::Loc call_loc);

// Whether an optional argument was given a value that means something: not
// absent, None, or an empty dict or sequence (TileLang's `annotations={}`).
// Arguments that only tune code generation are accepted and ignored; any
// other argument given such a value would change semantics.
bool IsGiven(const std::optional<Value>& v);

} // namespace kiln::frontend
