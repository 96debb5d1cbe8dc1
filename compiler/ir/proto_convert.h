// Conversion between the in-memory tile IR and its wire form, the
// kiln.v1.Program message (proto/kiln/v1/program.proto).
// FromProto never trusts its input: unknown enum values, missing operands,
// bad identifiers and excessive nesting are errors, not crashes.
// Thread-safe (pure functions).
#pragma once

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"
#include "kiln/v1/program.pb.h"

namespace kiln::ir {

void ToProto(const Program& program, kiln::v1::Program* out);
absl::StatusOr<Program> FromProto(const kiln::v1::Program& proto);

} // namespace kiln::ir
