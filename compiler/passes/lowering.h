// Internal to the tile-op lowering (lower_tile_ops.h): the state shared by
// the files that lower one kind of op each (lowering.cc: statements, loops,
// barriers; lower_copy.cc: copy and fill; lower_gemm.cc; lower_reduce.cc;
// pipeline.cc). Not a public API.
//
// Invariants while lowering:
//  - `env_` maps tile-level loop variables that no longer exist (Parallel
//    loop variables, a pipelined loop variable inside producers) to their
//    thread-level values; every expression is substituted through it.
//  - `dirty_` holds the shared buffers written since the last barrier and
//    `read_` those read since; Touch() inserts a barrier before an access
//    that would race with them (read after write, write after read or
//    write).
//  - Shared, local and fragment buffers are 1-D after lowering; global
//    buffers keep their shape (the emitter flattens them).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"
#include "compiler/ir/tma_attr.h"
#include "compiler/passes/layout.h"
#include "compiler/passes/layout_inference.h"
#include "compiler/passes/target.h"

namespace kiln::passes::lowering {

struct Buf {
  std::string name;
  ir::DType dtype = ir::DType::kFloat32;
  ir::Scope scope = ir::Scope::kGlobal;
  std::vector<int64_t> shape;       // constant shape (non-global)
  std::vector<ir::Expr> shape_expr; // every buffer
  int64_t size = 0;                 // flat elements of one stage (padded when swizzled)
  bool swizzle = false;
  int64_t wgmma_block = 0; // > 0: a wgmma operand in column blocks of this width (elements)
  int stages = 1;
  const FragmentLayout* layout = nullptr; // fragments
  ir::Loc loc;
  // Tensors with a T.Layout (global_layout.h): the layout and the shape of
  // the physical array it maps into; accessed one element at a time.
  const ir::IndexLayout* index_layout = nullptr;
  std::vector<ir::Expr> physical_shape;
  // A reducer (T.alloc_reducer, compiler/ir/reducer.h): its op, and whether
  // the statements lowered so far finalized it.
  std::optional<ir::ReduceKind> reducer;
  bool reducer_final = false;
};

// The Parallel loop being lowered: its layout and the register loop var.
struct LoopCtx {
  FragmentLayout layout;
  ir::Expr reg;
  std::vector<std::string> vars;
};

// A copy between two regions, squeezed to the dimensions of extent > 1.
struct CopyPlan {
  const Buf* src = nullptr;
  const Buf* dst = nullptr;
  std::vector<ir::Expr> src_min, dst_min; // lowered region minimums
  std::vector<int64_t> src_ext, dst_ext;  // region extents
  std::vector<int> src_dims, dst_dims;    // buffer dims that take copy coordinates
  std::vector<int64_t> extents;           // copy shape
};

// An mma.sync gemm in pieces, so that a pipeline can interleave them with its
// own statements (lower_gemm.cc, pipeline.cc). `load(step, slot, out)`
// emits the loads of k-step `step`'s operand fragments into register slot
// `slot` (0 or 1) from the stage of each shared operand that stage_ names
// when it is called; `compute(step, slot, out)` the MMAs of that k-step.
struct MmaGemm {
  int64_t steps = 0;            // k-steps of the instruction over the gemm's K
  std::set<std::string> reads;  // shared buffers the loads read
  std::vector<ir::Stmt> allocs; // the fragment registers (two slots each)
  std::function<void(int64_t, int64_t, std::vector<ir::Stmt>*)> load, compute;
};

// A wgmma gemm (sm_90a): `issue(step, out)` emits k-step `step`'s
// wgmma.mma_async instructions (one per m64 atom of the warpgroup) reading
// the stage of each operand that stage_ names when it is called. The caller
// brackets them with wgmma_fence / wgmma_commit / wgmma_wait.
struct WgmmaGemm {
  int64_t steps = 0;
  std::set<std::string> reads;
  std::function<void(int64_t, std::vector<ir::Stmt>*)> issue;
};

// A producer copy that TMA serves (warp_specialize.cc): `blocks` loads of a
// (rows x block) box of tensor map `map`, column block j at j * rows *
// block elements of the destination stage.
struct TmaCopy {
  const ir::Stmt* copy = nullptr;
  std::string dst;
  int row_dim = 0, col_dim = 0; // the source dimensions of the tile's rows and columns
  int64_t rows = 0, block = 0, blocks = 0;
  int64_t bytes = 0;  // per stage, out-of-bounds elements included
  int64_t map = 0;    // index of its kiln.tma.<map> attr
  ir::TmaMapAttr tma; // that map
  // A copy into whole column blocks of the tile (T.tma_copy into
  // KV_s[:, j * 64:(j + 1) * 64]): the first column (tile IR, a multiple of
  // the block); nullopt for the whole tile.
  std::optional<ir::Expr> dst_col0;
};

// One ring of a warp-specialized loop's mbarriers: `stages` full barriers
// (arrival count full_count), then `stages` empty ones (empty_count).
struct WsRing {
  int64_t stages = 0;
  int64_t full_count = 1;
  int64_t empty_count = 1;
};

class Lowering {
 public:
  Lowering(ir::Program& program, const Target& target, LayoutMap layouts);
  absl::Status Run();

  // --- lowering.cc ---------------------------------------------------------
  absl::Status LowerStmts(const std::vector<ir::Stmt>& in, std::vector<ir::Stmt>* out);
  absl::Status LowerStmt(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  absl::Status LowerParallel(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  absl::Status LowerSerialFor(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  absl::StatusOr<ir::Expr> LowerExpr(const ir::Expr& e);
  absl::Status LowerStore(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  absl::Status LowerAtomicElement(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  // A located error when `s` (a tile op) uses a reducer other than as
  // T.fill's destination or, once finalized, as a source.
  absl::Status CheckReducerOperands(const ir::Stmt& s) const;
  // A located error for T.fill of a sum reducer with a value other than 0,
  // and for a reducer store that is not `r[i] = r[i] (op) v`.
  absl::Status CheckReducerFill(const ir::Stmt& s) const;
  absl::Status CheckReducerUpdate(const Buf& b, const ir::Stmt& s) const;

  // Index of `idx` (lowered, one per dimension) into buffer `b` after
  // lowering: shared (flat, swizzled, staged), local/var (flat), fragment
  // (register; only inside a Parallel loop, from the original indices).
  absl::StatusOr<ir::Expr> FlatIndex(const Buf& b, const std::vector<ir::Expr>& idx);
  ir::Expr GlobalFlat(const Buf& b, const std::vector<ir::Expr>& idx);
  ir::Expr SharedPhys(const Buf& b, const std::vector<ir::Expr>& idx);
  // The register of fragment element `original` (tile-level indices): by
  // the enclosing Parallel loop's layout when they are distinct loop
  // variables and the fragment follows that layout, else (a fully
  // replicated fragment) by the element's place in the layout. A located
  // error for a fragment spread over threads, and for a `write` that would
  // update some threads' copies only.
  absl::StatusOr<ir::Expr> FragmentReg(const Buf& b, const std::vector<ir::Expr>& original,
                                       ir::Loc loc, bool write);
  // A load/store expression of element `idx` (lowered indices).
  absl::StatusOr<ir::Expr> ElementLoad(const Buf& b, const std::vector<ir::Expr>& idx);
  absl::StatusOr<ir::Stmt> ElementStore(const Buf& b, const std::vector<ir::Expr>& idx,
                                        ir::Expr value);
  ir::Expr Address(const Buf& b, const ir::Expr& flat);

  // The largest value `e` takes (every variable the lowering knows of is
  // >= 0 with a known maximum: block indices, thread index, loop
  // variables), or nullopt when unknown. Used to drop bounds checks that
  // always hold (tiles that divide the problem).
  std::optional<int64_t> MaxOf(const ir::Expr& e) const;
  ir::Expr InBoundsOf(const Buf& b, const std::vector<ir::Expr>& idx) const;

  // Barrier bookkeeping: a barrier before an access that another thread's
  // unbarriered access conflicts with. `atomic`: the writes are element
  // atomics, which need none after other atomics (atomic_only_).
  void Touch(const std::set<std::string>& reads, const std::set<std::string>& writes,
             std::vector<ir::Stmt>* out, bool atomic = false);
  void SharedAccesses(const ir::Stmt& s, std::set<std::string>* reads,
                      std::set<std::string>* writes) const;
  void Barrier(std::vector<ir::Stmt>* out);

  // --- lower_copy.cc -------------------------------------------------------
  absl::Status LowerCopy(const ir::Stmt& s, std::vector<ir::Stmt>* out, bool atomic = false);
  absl::Status LowerFill(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  absl::StatusOr<CopyPlan> PlanCopy(const ir::Stmt& s);
  absl::Status CopyWithFragment(const ir::Stmt& s, const CopyPlan& plan, bool atomic,
                                std::vector<ir::Stmt>* out);
  absl::Status CopyDistributed(const ir::Stmt& s, const CopyPlan& plan, bool atomic,
                               std::vector<ir::Stmt>* out);
  // Elements per vector moved between a fragment's consecutive registers
  // and global/shared memory (1: element by element).
  int64_t FragmentVector(const CopyPlan& plan, bool frag_src) const;
  absl::Status CopyFragmentVectors(const ir::Stmt& s, const CopyPlan& plan, bool frag_src,
                                   int64_t v, std::vector<ir::Stmt>* out);
  // Elements per vector (1 when not vectorizable) for a global/shared copy.
  int64_t CopyVector(const CopyPlan& plan) const;

  // --- lower_gemm.cc / lower_reduce.cc / pipeline.cc -----------------------
  absl::Status LowerGemm(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  // TileLang's asynchronous wgmma (Stmt::wg_wait, T.wait_wgmma): a wait,
  // then the fences of the accumulators that may have been in flight.
  absl::Status LowerWaitWgmma(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  void WaitWgmma(int64_t left, std::vector<ir::Stmt>* out);
  // The accumulators of the gemms in `body` that a wgmma gemm would leave
  // in flight (wg_wait != 0), outside Kiln's own pipelines.
  std::set<std::string> AsyncAccumulators(const std::vector<ir::Stmt>& body) const;
  // T.finalize_reducer (a kReduce with dim kReducerFinalizeDim): every
  // thread's copy combined, the result in every thread's registers.
  absl::Status LowerFinalizeReducer(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  // The K range of gemm operand `k` (0: A, 1: B) that the plans read: the
  // region may cover part of the buffer along K (A_s[:, 0:32], a K split of
  // the tile) starting at a multiple of `quantum` elements (the plan's
  // k-step); every other dimension, a fragment operand and C (checked with
  // k = 2) must be whole. Located errors otherwise.
  struct GemmK {
    ir::Expr offset; // lowered
    int64_t extent = 0;
  };
  absl::StatusOr<GemmK> GemmOperandK(const ir::Stmt& s, size_t k, int64_t quantum);
  // The mma.sync plan of a gemm, or nullopt for the scalar path (dtypes
  // without a tensor instruction).
  absl::StatusOr<std::optional<MmaGemm>> PlanMmaGemm(const ir::Stmt& s);
  absl::Status LowerGemmScalar(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  // The wgmma plan of a gemm when the program lowers for wgmma (attr
  // kiln.gemm), else nullopt.
  absl::StatusOr<std::optional<WgmmaGemm>> PlanWgmmaGemm(const ir::Stmt& s);
  // A pipelined loop of producers and one wgmma gemm (pipeline.cc): false
  // when `s` is not one.
  absl::StatusOr<bool>
  LowerWgmmaLoop(const ir::Stmt& s, const std::vector<size_t>& producers,
                 const std::set<std::string>& dsts, const ir::Expr& n,
                 const std::function<absl::Status(const ir::Expr&, std::vector<ir::Stmt>*)>& issue,
                 std::vector<ir::Stmt>* out);
  // --- warp_specialize.cc ---------------------------------------------------
  // Whether the program may run its main loop warp-specialized with TMA
  // (decided once the buffers are known; the loop itself may still decline).
  bool WarpSpecializable() const;
  // The serial loops and ifs (then-branch) that hold the kernel's one
  // T.Pipelined loop, outermost first (empty: it is at the top), or nullopt
  // where it sits elsewhere or a header reads memory (the producer evaluates
  // the headers too).
  std::optional<std::vector<const ir::Stmt*>> PipelinedNest() const;
  // Lowers `s`'s body into `body` with `header` (s lowered, body empty) on
  // ws_nest_headers_ while it is, where `s` is in ws_nest_.
  absl::Status LowerNestBody(const ir::Stmt& s, const ir::Stmt& header,
                             const std::vector<ir::Stmt>& in, std::vector<ir::Stmt>* body);
  // The TMA plan of a producer copy (registers its tensor map), or nullopt.
  std::optional<TmaCopy> PlanTmaCopy(const ir::Stmt& s);
  // One block's half of a copy the two blocks of a cluster pair share
  // (IssueTmaPair): half of each box's rows, issued multicast to both.
  struct PairHalf {
    ir::Expr rank;   // the block's rank in its pair (0 or 1)
    int64_t map = 0; // the tensor map of half the rows
  };
  // The lowered element coordinates (int32) of a TMA box at region `r`'s
  // minimum.
  absl::StatusOr<std::vector<ir::Expr>> TmaCoords(const ir::Region& r);
  // Emits the TMA loads of `plan` into stage `stage`, completing on `bar`
  // (with `half`: that half only, multicast).
  absl::Status IssueTma(const TmaCopy& plan, const ir::Expr& stage, const ir::Expr& bar,
                        std::vector<ir::Stmt>* out, const PairHalf* half = nullptr);
  // The consumers' main loop into `out`, the producer's into ws_producer_;
  // false when `s` is not a loop this path takes.
  absl::StatusOr<bool> LowerWarpSpecializedLoop(const ir::Stmt& s,
                                                const std::vector<size_t>& producers,
                                                const std::set<std::string>& dsts,
                                                const ir::Expr& n, std::vector<ir::Stmt>* out);
  // The same for a body with more than one gemm or other statements beside
  // them (attention): one full/empty barrier ring per producer copy.
  absl::StatusOr<bool> LowerWarpSpecializedBody(const ir::Stmt& s,
                                                const std::vector<size_t>& producers,
                                                const std::set<std::string>& dsts,
                                                const ir::Expr& n, std::vector<ir::Stmt>* out);
  // LowerWarpSpecializedBody's loop with FlashAttention-3's intra-warpgroup
  // overlap (ws-overlap=on): for a body "... gemm1 ... gemm2" whose second
  // gemm is its last statement, tile k's gemm1 and tile k-1's gemm2 are in
  // flight together while the statements between them that do not touch
  // gemm2's operands run; nullopt (nothing emitted) where the body does not
  // have that form. The last tile's gemm2 goes to `epilogue`; `pingpong`
  // says whether the two consumer warpgroups take turns (the caller adds
  // the first arrival and the last sync around the loop).
  absl::StatusOr<std::optional<ir::Stmt>>
  OverlappedLoop(const ir::Stmt& s, const std::vector<size_t>& producers,
                 const std::vector<TmaCopy>& plans, const std::vector<size_t>& first,
                 const std::vector<size_t>& last, const ir::Expr& n, int64_t stages,
                 std::vector<ir::Stmt>* epilogue, bool* pingpong);
  // The producers' TMA plans (registering their tensor maps), or nullopt
  // (and no maps) when one is not a whole-tile TMA copy.
  std::optional<std::vector<TmaCopy>> PlanTmaProducers(const ir::Stmt& s,
                                                       const std::vector<size_t>& producers);
  bool ws_overlap_ = false; // program attr kiln.ws_overlap (PassContext::ws_overlap)
  // Clusters (PassContext::cluster, program attr kiln.cluster): the size
  // asked for, and whether the main loop runs in pairs of blocks.
  int64_t cluster_ = 1;
  bool clustered_ = false;
  // TMA-store epilogues (PassContext::epilogue, program attr
  // kiln.tma_store; auto: only where the blocks per SM stay), and whether
  // one was lowered (consumer thread 0 then waits for its stores before the
  // block exits).
  bool tma_store_ = false;
  bool tma_store_auto_ = false;
  bool tma_stored_ = false;
  // After a warp-specialized main loop, a copy of a whole 2-d fragment to a
  // tile of a global tensor TMA can store (16-byte row strides, constant
  // shape, at most 256 rows, whole 128-byte column blocks): the consumers
  // write it converted into a swizzled shared tile of its own, then one
  // thread stores the tile's column blocks with TMA. False (nothing
  // emitted) for any other copy or where shared memory has no room.
  absl::StatusOr<bool> LowerTmaStoreEpilogue(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  // The index of tensor map `map` in the program's kiln.tma.<k> attrs,
  // registering it where it is new.
  int64_t TmaMapIndex(const ir::TmaMapAttr& map);
  // A clustered producer's loads of `plan` (clustered_): where the pair's
  // other block loads the same box (its coordinates, from its block
  // variables, equal this block's), each block issues half of each box's
  // rows multicast to both; elsewhere it loads its own.
  absl::Status IssueTmaPair(const TmaCopy& plan, const ir::Expr& stage, const ir::Expr& bar,
                            std::vector<ir::Stmt>* out);
  // The loop's barrier buffer (ws_bars_): the rings one after another.
  void WsBarriers(const std::vector<WsRing>& rings);
  // The address of ring `ring`'s full (or empty) barrier of stage `stage`.
  ir::Expr WsBarrier(size_t ring, int64_t stages, bool empty, const ir::Expr& stage);
  // The producer thread's loop into ws_producer_: group g's loads complete
  // on ring g.
  absl::Status WsProducer(const ir::Stmt& s, const ir::Expr& n, int64_t stages,
                          const std::vector<std::vector<TmaCopy>>& groups);
  // Where the warp-specialized loop over `ko` is on its mbarrier ring: the
  // stage, the phase parity to wait for (the producer's: the other one), the
  // stage before, and what steps the position at the end of an iteration
  // (empty where the loop is at the top and ko is the position; in a nest,
  // ws_nest_headers_, each side keeps its own in registers, declared on
  // first use).
  struct RingPos {
    ir::Expr stage, round, prev;
    std::vector<ir::Stmt> advance;
  };
  RingPos Ring(const std::string& ko, int64_t stages, bool producer);
  // Wraps the lowered kernel body into the producer/consumer split.
  void SplitWarpGroups(std::vector<ir::Stmt>* body);
  // --- lower_hopper_ops.cc: barriers, T.ws regions, tma_copy ---------------
  absl::Status RequireMbarriers(ir::Loc loc) const;
  absl::StatusOr<ir::Expr> BarrierAddress(const ir::Region& r);
  absl::Status LowerBarrierAlloc(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  // A run of consecutive T.ws regions, in[first, end): what other threads
  // touched before the run is synchronized once, before its first region
  // (every thread reaches that barrier); the regions of a run then run
  // concurrently, ordered among themselves only by the program's own
  // barriers, except where two share threads (a named barrier inside).
  absl::Status LowerRegionRun(const std::vector<ir::Stmt>& in, size_t first, size_t end,
                              std::vector<ir::Stmt>* out);
  absl::Status LowerWarpSpecialize(const ir::Stmt& s, const std::set<std::string>& dirty,
                                   const std::set<std::string>& read, std::vector<ir::Stmt>* out);
  absl::Status LowerTmaCopy(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  absl::Status LowerBarrierOp(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  // A gemm whose shared operand is one 2-d tile of a higher-rank buffer
  // (A_s[k % 2, :, :]): lowered on a view of that tile.
  bool HasSharedSlice(const ir::Stmt& gemm) const;
  absl::Status LowerGemmOnSlices(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  absl::Status LowerReduce(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  absl::Status LowerPipelined(const ir::Stmt& s, std::vector<ir::Stmt>* out);
  // Issues a pipeline's producers for iteration `iter` (pipeline.cc).
  using IssueFn = std::function<absl::Status(const ir::Expr&, std::vector<ir::Stmt>*)>;
  // The rotated GEMM main loop (pipeline.cc): false when `s` is not one.
  absl::StatusOr<bool> LowerRotatedGemmLoop(const ir::Stmt& s, const std::vector<size_t>& producers,
                                            const std::set<std::string>& dsts, const ir::Expr& n,
                                            const IssueFn& issue, std::vector<ir::Stmt>* out);

  // --- helpers ---------------------------------------------------------------
  absl::Status Error(ir::Loc loc, const std::string& message) const;
  std::string Fresh(const std::string& base);
  const Buf* FindBuf(const std::string& name) const;
  ir::Stmt LocalAlloc(const std::string& name, ir::DType dtype, int64_t size);
  ir::Expr Tid() const { return tid_; }
  int64_t Threads() const { return threads_; }

  ir::Program& program_;
  Target target_;
  LayoutMap layouts_;
  std::map<std::string, Buf> bufs_;
  // The reducer whose update `r[i] = r[i] (op) v` is being lowered: the one
  // read of an unfinalized reducer that is allowed.
  std::string reducer_update_;
  std::set<std::string> names_;
  int fresh_ = 0;
  ir::Expr tid_;
  int64_t threads_ = 1;
  std::map<std::string, ir::Expr> env_;
  std::map<std::string, int64_t> var_max_; // see MaxOf
  std::optional<LoopCtx> loop_;
  std::set<std::string> dirty_, read_;
  // Shared buffers whose writes since the last barrier were all element atomics
  // (outside T.Parallel): further atomics need no barrier between them.
  std::set<std::string> atomic_only_;
  std::map<std::string, ir::Expr> stage_;
  bool producer_ = false;            // lowering a pipeline's producer copies
  bool wgmma_ = false;               // attr kiln.gemm = "wgmma" (sm_90a thread program)
  std::vector<ir::Stmt> top_allocs_; // scratch buffers declared at the kernel top
  bool ws_ = false;                  // WarpSpecializable()
  // The serial loops and ifs around the warp-specialized loop (a persistent
  // kernel's tile loop: persistent.h), outermost first, and their lowered
  // headers (bodies empty) while their bodies are lowered: the producer walks
  // the same nest. Empty where the loop is at the top of the kernel.
  std::set<const ir::Stmt*> ws_nest_;
  std::vector<ir::Stmt> ws_nest_headers_;
  // Where ws_nest_ is not empty: the consumers' and the producer's ring
  // position {stage, phase} (Ring), local int32 pairs.
  std::string ws_ring_, ws_pring_;
  std::vector<ir::Stmt> ws_producer_; // the producer thread's code, once the loop is lowered
  std::string ws_bars_;               // the loop's mbarriers (warp_specialize.cc)
  std::vector<WsRing> ws_rings_;      // their rings, in order
  // Shared buffers whose wgmma reads need no proxy fence in the gemm's own
  // lowering (the general warp-specialized loop fences once before it).
  std::set<std::string> no_proxy_fence_;
  // Asynchronous wgmma (lower_gemm.cc). `inflight_` holds the accumulators
  // of gemms that may still be in flight at this point of the program:
  // if/else branches and the regions of a run merge theirs, and a loop
  // starts with those of its own body (a gemm at its end is in flight at
  // the top of the next iteration). A wait fences each of them, so that no
  // use of an accumulator moves above the wait that completes it. It stays
  // empty in programs without such gemms, whose code is unchanged.
  std::set<std::string> inflight_;
  // In a program with its own Hopper synchronization (HasExplicitSync:
  // TileLang's semantics, where a warpgroup that hands shared memory it
  // wrote to another's wgmma fences it itself), a gemm's proxy fence is
  // left out unless this thread may have written shared memory since its
  // last one (`proxy_dirty_`: set by Touch's writes, merged like inflight_).
  // Elsewhere every gemm fences, as before.
  bool own_sync_ = false;
  bool proxy_dirty_ = false;
  // Kiln's own pipelines (LowerPipelined) complete every gemm at once: their
  // barriers and stage reuse assume it.
  bool sync_gemms_ = false;
  // Inside a T.ws region (lower_hopper_ops.cc): the named barrier Barrier()
  // syncs (0: __syncthreads); tid_ and threads_ are the region's.
  int named_barrier_ = 0;
  std::map<std::pair<int64_t, int64_t>, int> ws_barrier_ids_; // thread range -> barrier id
};

// Buffers a pipeline multi-buffers -> their stage count (pipeline.cc).
void CollectPipelineStages(const std::vector<ir::Stmt>& body, std::map<std::string, int>* stages);

// Small expression and statement builders (lowering.cc).
ir::Expr I(int64_t v);
ir::Expr Add(ir::Expr a, ir::Expr b);
ir::Expr Mul(ir::Expr a, ir::Expr b);
ir::Expr Div(ir::Expr a, int64_t b);
ir::Expr Mod(ir::Expr a, int64_t b);
ir::Expr Lt(ir::Expr a, ir::Expr b);
ir::Expr And(ir::Expr a, ir::Expr b);
ir::Expr Var(const std::string& name);
// The zero of dtype `t` (a float or an integer literal).
ir::Expr ZeroOf(ir::DType t);
ir::Stmt For(const std::string& var, const ir::Expr& extent, ir::ForKind kind,
             std::vector<ir::Stmt> body);
ir::Stmt Call(const std::string& name, std::vector<ir::Expr> args);
ir::Stmt Store(const std::string& buffer, std::vector<ir::Expr> idx, const ir::Expr& value);
// The one gemm of a pipelined loop body whose other statements are all
// `producers` (a GEMM main loop), or nullptr (pipeline.cc).
const ir::Stmt* SoleGemm(const ir::Stmt& loop, const std::vector<size_t>& producers);
// The last wgmma wait of a main-loop iteration with `inflight` > 0 groups
// kept in flight: wgmma_wait(inflight) while ko + 1 < n, wgmma_wait(0) in
// the last iteration (pipeline.cc says why a wait after the loop is not
// enough).
ir::Stmt WgmmaIterationWait(const std::string& ko, const ir::Expr& n, int64_t inflight);
// Appends `body` to out, inside `if (cond)` unless cond is literally true.
void Guarded(ir::Expr cond, std::vector<ir::Stmt> body, std::vector<ir::Stmt>* out);
bool IsTrue(const ir::Expr& e);
// True if `e` is a multiple of `v` for every value of its variables.
bool IsMultipleOf(const ir::Expr& e, int64_t v);

} // namespace kiln::passes::lowering
