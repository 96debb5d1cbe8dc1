// How deep the messages of a serialized protobuf nest, found without parsing
// it. Protobuf refuses a message whose fields nest deeper than its recursion
// limit (100 levels by default: CodedInputStream's default, which
// ParseFromArray uses) with a bare "does not parse", the same answer as for
// truncated bytes; a request's wire IR (ProgramSource.ir: an Expr's args
// nest) can reach it. This tells the two apart, so the client is told the
// real reason and the limit.
//
// The scan is iterative (an explicit stack, no recursion), reads each byte
// at most once and stops at the first field past the limit, so it is safe on
// any input, however deep or malformed.
// Thread-safe (a pure function).
#pragma once

#include <google/protobuf/descriptor.h>

#include "absl/strings/string_view.h"

namespace kiln::server {

// The recursion limit protobuf parses requests with (100).
int ProtobufRecursionLimit();

// True when `bytes`, read as a `type` message, holds a message field nested
// more than `limit` levels deep (a field of the top-level message is level
// 1; groups count as messages, as protobuf counts them). Fields that are not
// in `type`'s schema are skipped like protobuf skips unknown fields. False
// when no field is that deep, and for bytes that stop parsing before one is
// found.
bool NestsDeeperThan(const google::protobuf::Descriptor& type, absl::string_view bytes, int limit);

} // namespace kiln::server
