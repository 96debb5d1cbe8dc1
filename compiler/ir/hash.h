// Cache keys: SHA-256 over the canonical program plus the target, the
// compile options and the toolchain fingerprint (each a length-prefixed
// field, with a key-format version), as 64 lowercase hex digits.
// Every node kind is hashed, thread IR (kCall, kAddress) included: cache keys
// for client programs are taken on tile IR, but a lowered program hashes
// just as well (e.g. to key generated code).
// Thread-safe (pure functions).
#pragma once

#include <string>

#include "compiler/ir/ir.h"

namespace kiln::ir {

struct KeyContext {
  std::string target = "cpu";        // "cuda:sm_90", ...
  std::string options;               // canonical serialized compile options
  std::string toolchain_fingerprint; // codegen version + compiler version
};

// Canonicalizes `program` and hashes it with `ctx`.
std::string ProgramKey(const Program& program, const KeyContext& ctx = {});

// Hash of an already-canonical program (no canonicalization).
std::string HashCanonical(const Program& canonical, const KeyContext& ctx = {});

} // namespace kiln::ir
