// Layout inference: gives every fragment buffer of a tile program a
// FragmentLayout (compiler/passes/layout.h) and every shared buffer that
// feeds ldmatrix a swizzle, and records them in Program::attrs as
// "layout.<buffer>" so that later passes (and golden tests) read them.
//
// The functions here are the library behind pass "layout-inference"; the
// tile-op lowering calls the same ones (GemmWarps, LoopLayout) so the two
// passes cannot disagree. Thread-safe (pure functions).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"
#include "compiler/passes/layout.h"

namespace kiln::passes {

// The attrs value of a swizzled shared buffer: 16-byte chunks XOR-permuted
// within 128-byte lines (see SwizzledOffset in lower_tile_ops).
inline constexpr char kSwizzleLayout[] = "swizzle128";

using LayoutMap = std::map<std::string, FragmentLayout>;

// Threads of the kernel's block (product of its thread extents).
int64_t BlockThreads(const ir::Program& program);

// Warp grid (warps_m, warps_n) for an m x n accumulator under `policy`, or
// an error message when no split of `warps` fits the 16x8 MMA atom.
absl::StatusOr<std::pair<int64_t, int64_t>> GemmWarps(int64_t m, int64_t n, int64_t warps,
                                                      ir::GemmPolicy policy);

// The layout a T.Parallel loop runs with: the layout of the first fragment
// whose indices are exactly the loop variables (permuted onto the loop's
// dimensions), else a default layout over the loop extents (vectorized by
// the dtype of `vector_hint`, when given). Error when extents are not
// constant or disagree with that fragment's shape.
absl::StatusOr<FragmentLayout> LoopLayout(const ir::Program& program, const ir::Stmt& loop,
                                          const LayoutMap& known,
                                          std::optional<ir::DType> vector_hint = std::nullopt);

// dims[k] = the loop dimension that index k names, when `indices` are
// distinct plain variables of `vars`; nullopt otherwise.
std::optional<std::vector<int>> LoopDims(const std::vector<ir::Expr>& indices,
                                         const std::vector<std::string>& vars);

// Infers all fragment layouts (and records shared swizzles) of `program`,
// writing attrs. Errors are located diagnostics (conflicting layouts,
// non-constant fragment shapes, gemm shapes the MMA atoms cannot tile).
absl::Status InferLayouts(ir::Program& program);

// Reads the layouts recorded by InferLayouts back from attrs.
absl::StatusOr<LayoutMap> ReadLayouts(const ir::Program& program);

} // namespace kiln::passes
