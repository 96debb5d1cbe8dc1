// Size limits of IR built from outside input (the text parser, FromProto).
// Depth is bounded separately where each recursion happens (256 levels of
// expression and of statement nesting in both readers, 200 statement levels
// in the verifier); these bound the memory one program may take before
// anything looks at it. docs/design/ir-text.md (Limits) says why these
// values. Thread-safe (constants).
#pragma once

namespace kiln::ir {

// Statements in one program, nested ones included. A Stmt is 728 bytes
// before its operands: 2^15 of them are ~23 MiB. Real programs hold a few
// hundred (flash attention lowered to thread IR: ~500).
inline constexpr int kMaxStatements = 1 << 15;

// Expression nodes in one program (~96 bytes each: 2^18 are ~24 MiB). The
// text parser builds at most one per token and reads at most
// text::kMaxTokens = 2^18 tokens; FromProto counts them.
inline constexpr int kMaxExprNodes = 1 << 18;

// Kernels in one program (T.Kernel blocks, launched in order: ir.h) and
// global workspaces (T.alloc_global). TileLang's own examples use at most
// six kernels and two workspaces; every kernel is lowered and compiled on
// its own, so the bound caps a request's compile work.
inline constexpr int kMaxKernels = 16;
inline constexpr int kMaxWorkspaces = 16;

} // namespace kiln::ir
