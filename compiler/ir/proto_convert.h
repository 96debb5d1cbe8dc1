// Conversion between the in-memory tile IR and its wire form, the
// kiln.v1.Program message (proto/kiln/v1/program.proto).
// FromProto never trusts its input: unknown enum values, missing operands,
// bad identifiers and excessive nesting are errors, not crashes.
// Thread-safe (pure functions).
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"
#include "kiln/v1/program.pb.h"

namespace kiln::ir {

// The wire form of `program`. Fails with a located InvalidArgument
// ("thread-level IR (call NAME) cannot be serialized; ...") when the program
// contains thread IR (kCall statements, kAddress operands), which exists
// only after lowering: the wire carries tile IR only.
absl::StatusOr<kiln::v1::Program> ToProto(const Program& program);

// The same into *out, for callers that hold tile IR only (any program
// before lowering). Thread IR leaves *out cleared, an empty message that
// FromProto rejects, rather than half encoded; prefer the form above.
void ToProto(const Program& program, kiln::v1::Program* out);
absl::StatusOr<Program> FromProto(const kiln::v1::Program& proto);

// The wire enum of a dtype (launch metadata uses it too).
kiln::v1::DType DTypeToProto(DType dtype);

} // namespace kiln::ir
