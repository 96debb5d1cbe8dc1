// Fragment layouts: which thread holds which element of a register tile, in
// which of its registers.
//
// A layout is a pair of mixed-radix numbers. The thread index and the
// register index are each split into digits (least significant first); every
// digit belongs to one logical dimension of the fragment, with a size and a
// stride, and contributes `digit * stride` to that dimension's index. A
// thread digit that belongs to no dimension (dim == -1) replicates: threads
// that differ only in it hold the same elements. Digits may cover more than
// the shape (padding): such positions exist in registers but are outside
// the fragment, and lowering guards them.
//
// This family covers both the MMA fragment tables of the PTX ISA (a lane
// splits into groupID / threadID_in_group digits) and the default
// thread-over-innermost-dimension layouts of `Parallel` loops, and it makes
// the questions lowering asks cheap: "which registers of this thread are
// reduced together", "which lane bits does a reduction cross", "is this
// fragment's layout the projection of that loop's layout".
//
// Layouts print as text, e.g. `threads(1:4@2 0:8@1 0:4@16) regs(1:2@1 0:2@8)`
// (dim:size@stride, least significant first; `-:N` is replication), which is
// how layout-inference records them in Program::attrs ("layout.<buffer>").
// Thread-safe (plain values and pure functions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"

namespace kiln::passes {

struct LayoutDigit {
  int dim = -1; // logical dimension, or -1 for replication (thread digits only)
  int64_t size = 1;
  int64_t stride = 1;
  bool operator==(const LayoutDigit&) const = default;
};

struct FragmentLayout {
  std::vector<int64_t> shape;
  std::vector<LayoutDigit> thread; // least significant first
  std::vector<LayoutDigit> reg;    // least significant first
  bool operator==(const FragmentLayout&) const = default;

  int64_t NumThreads() const;
  int64_t NumRegs() const;
  // True if some register position lies outside `shape`.
  bool HasPadding() const;
  // True if some thread digit replicates.
  bool HasReplication() const;
  // Place value of thread digit k / register digit k.
  int64_t ThreadPlace(size_t k) const;
  int64_t RegPlace(size_t k) const;

  std::string ToString() const;
};

absl::StatusOr<FragmentLayout> ParseLayout(std::string_view text, std::vector<int64_t> shape);

// Merges adjacent digits of one dimension with contiguous strides, drops
// size-1 digits and merges adjacent replication digits, so that equal
// mappings compare equal.
FragmentLayout Normalize(FragmentLayout layout);

// Threads over the innermost dimension first (after `vector` consecutive
// elements of the innermost dimension kept in one thread's registers, when
// it divides the extent), then outward; what threads cannot cover exactly
// goes to registers, the outermost dimension may be padded, and leftover
// threads replicate.
// With `row_warps`, the innermost dimension takes one warp's lanes and the
// warps go to outer dimensions when those are big enough (reductions along
// rows then stay within a warp); without, threads fill the innermost
// dimension first (best for element-wise loops over global memory).
FragmentLayout DefaultLayout(const std::vector<int64_t>& shape, int64_t threads, int64_t vector,
                             bool row_warps = true);

// The m16n8 accumulator layout of an (m x n) tile over warps_m x warps_n
// warps (warp w covers rows (w % warps_m) * m / warps_m and columns
// (w / warps_m) * n / warps_n): per the PTX ISA, lane l register k of each
// 16x8 atom holds row l/4 + 8*(k/2), column 2*(l%4) + k%2. Atoms are ordered
// row-major (mi, ni) within a warp, four registers each. `threads` beyond
// the warps replicate. Requires m % (16 * warps_m) == 0, n % (8 * warps_n)
// == 0.
FragmentLayout MmaAccumulatorLayout(int64_t m, int64_t n, int64_t warps_m, int64_t warps_n,
                                    int64_t threads);

// The layout of an (m x k) fragment that is a gemm's register A operand on
// mma.sync over warps_m warp rows (the warps along N replicate it), for
// inputs of `bits` bits, in the order of the instruction's A registers per
// the PTX ISA: 16-bit inputs (m16n8k16) are the accumulator layout of (m x
// k); tf32 (32, m16n8k8) has lane l hold rows l/4 and l/4 + 8 of columns
// l%4 and l%4 + 4; int8 (8, m16n8k32) holds 4 consecutive columns from
// 4*(l%4) and from 4*(l%4) + 16, in rows l/4 and l/4 + 8. Atoms of 16 rows
// by one k-step follow each other along K, then along M. Requires m % (16 *
// warps_m) == 0 and k a multiple of the k-step (16, 8, 32).
FragmentLayout MmaOperandALayout(int64_t m, int64_t k, int64_t warps_m, int64_t threads, int bits);

// The wgmma D-fragment layout (sm_90a) of an (m x n) tile over
// groups_m x groups_n warpgroups of 128 threads, each covering an
// (m / groups_m) x (n / groups_n) tile in m64 atoms: warp w of a warpgroup
// holds rows 16w..16w+15 of each atom; within a warp, register 4j + r of an
// atom holds the m16n8 accumulator element r of columns 8j..8j+7. Atoms
// follow each other in registers (atom i at registers i * n_group / 2).
// Requires m % (64 * groups_m) == 0, n % (8 * groups_n) == 0.
FragmentLayout WgmmaAccumulatorLayout(int64_t m, int64_t n, int64_t groups_m, int64_t groups_n);

// The layout of a fragment indexed by a subset of a loop's dimensions:
// `dims[k]` is the loop dimension that the fragment's dimension k takes.
// Thread digits of other dimensions replicate; their register digits are
// dropped. The result is normalized.
FragmentLayout Project(const FragmentLayout& loop, const std::vector<int>& dims,
                       const std::vector<int64_t>& shape);

// Index expressions (over `tid` and `reg`, int32) of the element that
// thread `tid` holds in register `reg`, one per dimension.
std::vector<ir::Expr> ElementIndex(const FragmentLayout& layout, const ir::Expr& tid,
                                   const ir::Expr& reg);

// The value of thread digit k / register digit k.
ir::Expr ThreadDigit(const FragmentLayout& layout, size_t k, const ir::Expr& tid);
ir::Expr RegDigit(const FragmentLayout& layout, size_t k, const ir::Expr& reg);

// The register holding logical element `index` (valid on a thread that
// holds it).
ir::Expr RegisterOf(const FragmentLayout& layout, const std::vector<ir::Expr>& index);

// True when the element in register `reg` of thread `tid` is inside the
// shape (only needed when HasPadding()).
ir::Expr InBounds(const FragmentLayout& layout, const std::vector<ir::Expr>& index);

// True on exactly one thread of every replication group.
ir::Expr IsFirstReplica(const FragmentLayout& layout, const ir::Expr& tid);

} // namespace kiln::passes
