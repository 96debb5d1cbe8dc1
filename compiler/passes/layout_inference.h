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
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"
#include "compiler/passes/layout.h"

namespace kiln::passes {

// The attrs value of a swizzled shared buffer: 16-byte chunks XOR-permuted
// within 128-byte lines (see SwizzledOffset in lower_tile_ops).
inline constexpr char kSwizzleLayout[] = "swizzle128";

// The attrs value of a shared wgmma operand (sm_90a): the tile (R x C,
// row-major logically) is stored in column blocks of W = 64, 32 or 16
// elements (R rows of W each, block after block) with the 128-, 64- or
// 32-byte swizzle of wgmma's descriptors on the byte offset (16-byte chunk
// bits XOR the bits from 128 bytes up). "wgmma64" etc.; see
// Lowering::SharedPhys.
inline constexpr char kWgmmaLayoutPrefix[] = "wgmma";
// Program attr "kiln.gemm" = "wgmma": every gemm lowers to wgmma.
inline constexpr char kGemmAttr[] = "kiln.gemm";
// Program attr "kiln.pipeline": how a wgmma program's GEMM main loop is
// fed. Before lowering, "tma-ws" asks for TMA and warp specialization (pass
// option pipeline=tma-ws; warp_specialize.cc), which lowering uses where it
// can; it leaves "tma-ws" when it did and "cp.async" when it fell back.
// Absent: the cp.async pipeline.
inline constexpr char kPipelineAttr[] = "kiln.pipeline";
inline constexpr char kPipelineCpAsync[] = "cp.async";
inline constexpr char kPipelineWarpSpecialized[] = "tma-ws";
// Program attr "kiln.min_blocks": the blocks per SM the kernel is compiled
// for (CUDA's __launch_bounds__ minimum), set by warp specialization where
// two blocks share an SM (warp_specialize.cc, PlanRegisters). Absent: 1.
inline constexpr char kMinBlocksAttr[] = "kiln.min_blocks";
// Program attr "kiln.ws_blocks": PassContext::ws_blocks where it is not 0,
// for warp specialization's register plan.
inline constexpr char kWsBlocksAttr[] = "kiln.ws_blocks";
// Program attr "kiln.ws_overlap": "1" where PassContext::ws_overlap asks for
// the intra-warpgroup overlap of warp-specialized two-gemm loops.
inline constexpr char kWsOverlapAttr[] = "kiln.ws_overlap";

// Program attr "kiln.cluster": the cluster size PassContext::cluster asks
// for (set where it is above 1; lower-tile-ops reads and erases it, and a
// program it cannot pair is a located error). On the lowered program,
// "kiln.cluster_dims" = "2" where the main loop runs in pairs of blocks
// along grid x: the emitter declares __cluster_dims__(2, 1, 1), the CTA's
// rank in its pair (kiln_cta_rank) and the pair's other block's block
// variables (kiln_peer_<var>).
inline constexpr char kClusterAttr[] = "kiln.cluster";
// Program attr "kiln.tma_store": "1" where PassContext::epilogue asks for
// TMA-store epilogues, "auto" where it leaves them to the blocks per SM
// (lower-tile-ops reads and erases it).
inline constexpr char kTmaStoreAttr[] = "kiln.tma_store";
inline constexpr char kClusterDimsAttr[] = "kiln.cluster_dims";
inline constexpr char kClusterRankVar[] = "kiln_cta_rank";
inline constexpr char kClusterPeerPrefix[] = "kiln_peer_";
// Program attr "kiln.min_dynamic_smem": the dynamic shared memory the launch
// asks for at least (codegen), more than the kernel uses where a plan for one
// block per SM must keep a second block off the SM (ws-blocks=1).
inline constexpr char kMinDynamicSmemAttr[] = "kiln.min_dynamic_smem";

using LayoutMap = std::map<std::string, FragmentLayout>;

// Layout choices that depend on the program the lowering targets.
struct LayoutOptions {
  // Lower for sm_90a's warpgroup MMA where every gemm allows it.
  bool wgmma = false;
};

// True when lowering for `target` ("cuda:sm_90a") uses wgmma.
bool TargetUsesWgmma(std::string_view target);

// The column-block width W (elements) of a wgmma operand of `elem_bytes`
// (2: f16/bf16, 1: fp8) bytes per element whose contiguous dimension has
// `cols` elements: the 128-byte swizzle's 128 / elem_bytes when a row is a
// multiple of 128 bytes, else cols when a row is exactly 64 or 32 bytes; 0
// when no swizzle mode fits.
int64_t WgmmaBlockElems(int64_t cols, int64_t elem_bytes);

// True for the element types wgmma takes from shared memory (Kiln's
// choice): f16, bf16 (k-step 16, either major) and fp8 e4m3 / e5m2
// (k-step 32, both operands K-major).
bool WgmmaInputType(ir::DType t);

// The K of one wgmma instruction for input type `t` (WgmmaInputType): 32
// bytes of elements, 16 for f16/bf16 and 32 for fp8.
int64_t WgmmaKStep(ir::DType t);

// Whether wgmma takes operands of type `t` in these forms: fp8 only with A
// in shared memory and both operands K-major (A M x K, B N x K), the PTX
// instruction having no transpose for it.
bool WgmmaOperandForms(ir::DType t, bool register_a, bool transpose_a, bool transpose_b);

// The warpgroup grid (groups_m, groups_n) of a wgmma gemm with an m x n
// accumulator over `threads`; `n_block` > 0 requires each warpgroup's
// column offset to be a multiple of it (an N-major B operand's column
// blocks). nullopt when wgmma cannot tile it (threads not a multiple of 128,
// M not a multiple of 64 per warpgroup, N per warpgroup above 256 or not a
// multiple of 8).
std::optional<std::pair<int64_t, int64_t>> WgmmaGroups(int64_t m, int64_t n, int64_t threads,
                                                       int64_t n_block);

// Threads of the kernel's block (product of its thread extents).
int64_t BlockThreads(const ir::Program& program);

// Warp grid (warps_m, warps_n) for an m x n accumulator under `policy`, or
// an error message when no split of `warps` fits the 16x8 MMA atom.
absl::StatusOr<std::pair<int64_t, int64_t>> GemmWarps(int64_t m, int64_t n, int64_t warps,
                                                      ir::GemmPolicy policy);

// The layout a T.Parallel loop runs with: the layout of the first fragment
// whose indices are exactly the loop variables (permuted onto the loop's
// dimensions; a fully replicated fragment the loop only reads comes last),
// else a default layout over the loop extents (vectorized by
// the dtype of `vector_hint`, when given) over `threads` (0: the block's;
// a T.ws region's loop runs on the region's threads). Error when extents are
// not constant or disagree with that fragment's shape.
absl::StatusOr<FragmentLayout> LoopLayout(const ir::Program& program, const ir::Stmt& loop,
                                          const LayoutMap& known,
                                          std::optional<ir::DType> vector_hint = std::nullopt,
                                          int64_t threads = 0);

// True when every thread holds every element (no thread digit belongs to a
// dimension): any thread may read any element, by any index.
bool FullyReplicated(const FragmentLayout& layout);

// The layout in which each of `threads` threads holds the whole fragment,
// row-major in its registers (normalized). Layout inference gives it to
// fragments indexed element by element outside a T.Parallel loop, or inside
// one by indices that are not distinct loop variables.
FragmentLayout ReplicatedLayout(const std::vector<int64_t>& shape, int64_t threads);

// dims[k] = the loop dimension that index k names, when `indices` are
// distinct plain variables of `vars`; nullopt otherwise.
std::optional<std::vector<int>> LoopDims(const std::vector<ir::Expr>& indices,
                                         const std::vector<std::string>& vars);

// True for a T.Parallel loop whose whole body is one T.Parallel loop.
bool IsParallelNest(const ir::Stmt& s);

// A T.Parallel loop with its perfectly nested T.Parallel loops (each the
// whole body of the one around it) merged into one multi-dimensional loop
// (outer variables first): the same iterations, run with one layout.
ir::Stmt FuseParallelNest(ir::Stmt loop);

// Infers all fragment layouts (and records shared swizzles) of `program`,
// writing attrs; perfect nests of T.Parallel loops are first fused
// (FuseParallelNest) in place. Errors are located diagnostics (conflicting
// layouts, a
// fragment indexed element by element that another statement spreads over
// threads,
// non-constant fragment shapes, gemm shapes the MMA atoms cannot tile).
// With options.wgmma, gemms whose operands are all 16-bit shared tiles with
// an f32 accumulator (every gemm of the program, or none) get the wgmma
// accumulator and operand layouts and attr kiln.gemm = "wgmma".
absl::Status InferLayouts(ir::Program& program, const LayoutOptions& options = {});

// Reads the layouts recorded by InferLayouts back from attrs.
absl::StatusOr<LayoutMap> ReadLayouts(const ir::Program& program);

} // namespace kiln::passes
