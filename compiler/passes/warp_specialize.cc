// Tile-op lowering, part 6: the Hopper GEMM main loop with TMA loads, an
// mbarrier ring and warp specialization (sm_90a, with wgmma).
//
// A kernel whose only T.Pipelined loop sits at the top of the kernel body,
// holds nothing but producer copies and one wgmma gemm, and whose producers
// TMA can serve (PlanTmaCopy) runs with one extra warpgroup of 128 threads,
// threads T..T+127 after the program's T:
//
//   shared:  the operand stages as before, then 2S mbarriers: full[s]
//            (count 1 + the stage's bytes) and empty[s] (one arrival per
//            consumer warp)
//   all:     thread 0 initializes the barriers; fence; sync_threads
//   tid >= T (producer warpgroup; setmaxnreg_dec where it pays):
//            thread T: for ko < n: s = ko % S
//              wait empty[s] for the phase of parity (ko / S + 1) % 2 (the
//              first round passes at once), arrive on full[s] expecting the
//              stage's bytes, issue the TMA loads of tile ko into stage s
//   tid < T  (consumers; setmaxnreg_inc where it pays): the program with
//            every sync_threads replaced by bar.sync 1, T; its main loop:
//              wait full[s] for parity (ko / S) % 2, wgmma_fence_tma, the
//              tile's wgmmas, commit; wait until F groups are pending (F =
//              1 from 3 stages on with one consumer warpgroup and a grid
//              of more blocks than SMs, else 0; 0 in the last iteration);
//              lane 0 of each
//              warp then releases the stage whose group completed (empty of
//              stage (ko - F) % S).
//
// TMA writes the operands through the async proxy that wgmma reads them
// with, and the full barrier's completion makes them visible, so no proxy
// fence and no block barrier remain in the main loop. A load's box is
// (rows, W) of the operand tile's column block: W = 64, 32 or 16 16-bit
// elements is exactly one 128/64/32-byte swizzle row, so the box lands in
// the wgmma layout SharedPhys describes (column block j at j * rows * W),
// and out-of-bounds elements arrive as zeros, as the cp.async path's zero
// fill gives them.
//
// A loop with more than that (attention: two gemms, the softmax between
// them, K and V copied at different points) runs the same way when every
// gemm in it is wgmma and every producer a whole-tile TMA copy
// (LowerWarpSpecializedBody): each producer gets its own ring of S full and
// S empty barriers, so the first gemm need not wait for the second's
// operand. The consumers' loop is the body in order, with
//   wait full_p[s] before the first statement that reads p's tile and
//   every consumer thread arriving on empty_p[s] after the last one (a
//   wgmma gemm's lowering ends with its wait),
// and the producer thread, per iteration, waits empty_p, arrives on full_p
// expecting p's bytes and issues p's loads, producer by producer. What the
// consumers wrote into shared memory before the loop is fenced toward the
// async proxy and synchronized once before it; a gemm whose shared operands
// the loop does not write needs no fence of its own; a body that writes
// shared memory synchronizes the consumers at the top of each iteration,
// as a serial loop does.
//
// setmaxnreg: the launch gives every thread 65536 / (T + 128) registers
// (rounded down to 8); the producer needs few, so it drops to 40 and the
// consumers rise to what the rest allows (at most 240). Only where one block
// fills the SM's shared memory: a second resident block could hold the
// registers an increase waits for.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/int_range.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/simplify.h"
#include "compiler/ir/tma_attr.h"
#include "compiler/passes/lowering.h"
#include "compiler/passes/persistent.h"
#include "compiler/passes/split_k.h"
#include "compiler/passes/target.h"
#include "util/status_macros.h"

namespace kiln::passes::lowering {

using ir::Expr;
using ir::ExprKind;
using ir::Stmt;
using ir::StmtKind;

namespace {

constexpr int64_t kProducerThreads = 128;
constexpr int64_t kProducerRegs = 40;
constexpr int64_t kMaxConsumerRegs = 240;
constexpr int64_t kRegisterFile = 65536;
constexpr int64_t kSm90SharedBytes = 232448; // one block's opt-in maximum
// What a consumer thread needs beyond its register arrays (addresses, loop
// state, the epilogue's temporaries): ptxas used 26 above the 128
// accumulator registers of a 128x128 tile on one warpgroup (CUDA 13.0).
constexpr int64_t kConsumerOverheadRegs = 48;
// One wgmma instruction holds its whole accumulator fragment in registers,
// and ptxas checks it against the launch's count, not setmaxnreg's: m64n256
// (128 fp32 registers) asked for 154 (CUDA 13.0).
constexpr int64_t kWgmmaInstructionOverheadRegs = 28;
constexpr int kConsumerBarrier = 1; // named barrier id of the consumers
constexpr int kPingPongBarrier = 2; // and 3: the two consumer warpgroups' turns
// The turns are taken by default; false builds the schedule without them
// (an A/B build for bench/hopper_attention.py --kiln-opt-alt).
constexpr bool kPingPong = true;

Expr Eq(Expr a, Expr b) { return ir::Binary(ir::BinOp::kEq, std::move(a), std::move(b)); }

void ReplaceBarriers(std::vector<Stmt>* body, int64_t threads) {
  for (Stmt& s : *body) {
    if (s.kind == StmtKind::kCall && s.name == "sync_threads") {
      s = Call("named_barrier_sync", {I(kConsumerBarrier), I(threads)});
      continue;
    }
    ReplaceBarriers(&s.body, threads);
    ReplaceBarriers(&s.else_body, threads);
  }
}

int CountPipelined(const std::vector<Stmt>& body) {
  int n = 0;
  ir::ForEachStmt(body, [&](const Stmt& s) {
    n += s.kind == StmtKind::kFor && s.for_kind == ir::ForKind::kPipelined;
  });
  return n;
}

// The bytes of the kernel's shared buffers, all stages, each at its
// alignment (1024 for a wgmma operand's swizzle atom, else 128), those of
// 1 KiB first as the lowering allocates them (the operand tiles, then the
// barriers).
int64_t SharedBytes(const std::map<std::string, Buf>& bufs) {
  int64_t bytes = 0;
  for (bool swizzled : {true, false}) {
    for (const auto& [name, b] : bufs) {
      if (b.scope != ir::Scope::kShared || (b.wgmma_block > 0) != swizzled) continue;
      const int64_t align = swizzled ? 1024 : 128;
      bytes = (bytes + align - 1) / align * align;
      bytes += b.size * b.stages * std::max(1, ir::DTypeBits(b.dtype) / 8);
    }
  }
  return bytes;
}

// The 32-bit registers a thread's register arrays (local allocations with a
// constant size) take, anywhere in `body`.
int64_t RegisterArrayWords(const std::vector<Stmt>& body) {
  int64_t words = 0;
  ir::ForEachStmt(body, [&](const Stmt& s) {
    if (s.kind != StmtKind::kAlloc || s.buffer.scope != ir::Scope::kLocal) return;
    int64_t n = 1;
    for (const Expr& e : s.buffer.shape) n *= e.kind == ir::ExprKind::kInt ? e.ival : 1;
    words += (n * ir::DTypeBits(s.buffer.dtype) + 31) / 32;
  });
  return words;
}

// The registers the largest wgmma instruction in `body` needs at once: its
// accumulator fragment (m64nN: N/2 fp32 registers a thread) and its
// operands; 0 without wgmma.
int64_t WgmmaInstructionRegs(const std::vector<Stmt>& body) {
  int64_t regs = 0;
  ir::ForEachStmt(body, [&](const Stmt& s) {
    constexpr std::string_view kPrefix = "wgmma_m64n";
    if (s.kind != StmtKind::kCall || s.name.rfind(kPrefix, 0) != 0) return;
    const int64_t n = std::atoll(s.name.c_str() + kPrefix.size());
    regs = std::max(regs, n / 2 + kWgmmaInstructionOverheadRegs);
  });
  return regs;
}

// How a warp-specialized block splits the register file: the blocks per SM
// it is compiled for (__launch_bounds__'s minimum), the registers a thread
// has at launch, and after reallocation, the consumers' and the producer's.
struct RegisterPlan {
  int64_t blocks = 1;
  int64_t launch = 0;
  int64_t consumer = 0;
  bool realloc = false;
  // Dynamic shared memory the launch asks for at least (0: what the kernel
  // uses): one block asked for (`want` 1) where two would fit.
  int64_t min_shared = 0;
};

// `t` consumer threads needing `needed` registers each (`instruction` of
// them in one instruction, which must fit the launch's count), in blocks of
// `shared` bytes: two blocks per SM where shared memory holds two and the
// producer's registers, given back, leave the consumers enough (a block's
// epilogue and the other's main loop then overlap); else one. ptxas gives
// a kernel that reallocates exactly the launch count, so a block
// reallocates only when the plan needs it: with one block that forecloses
// nothing, since two did not fit.
// `want` (1 or 2; 0: this plan) asks for that many blocks where they fit.
RegisterPlan PlanRegisters(int64_t t, int64_t needed, int64_t instruction, int64_t shared,
                           int64_t want) {
  const int64_t threads = t + kProducerThreads;
  auto plan_for = [&](int64_t blocks) {
    RegisterPlan p;
    p.blocks = blocks;
    p.launch = std::min<int64_t>(kRegisterFile / blocks / threads / 8 * 8, 248);
    // setmaxnreg.inc waits until the block's own pool (its launch count
    // for every thread) holds the registers: asking more than the producer
    // gave back waits forever (128x64 on 256 + 128 threads at 80 a thread
    // asked 104 and hung on an H100).
    p.consumer = std::min<int64_t>(
        (p.launch * threads - kProducerThreads * kProducerRegs) / t / 8 * 8, kMaxConsumerRegs);
    return p;
  };
  const int64_t fit = kSm90SmSharedBytes / (shared + kBlockReservedSharedBytes);
  if (RegisterPlan two = plan_for(2); want != 1 && fit >= 2 && two.launch >= instruction) {
    if (two.launch >= needed) return two;
    if (want == 2) { // asked for: the consumers get what two blocks leave, short or not
      two.realloc = two.consumer > two.launch;
      return two;
    }
    if (two.consumer >= needed && two.consumer > two.launch) {
      two.realloc = true;
      return two;
    }
  }
  RegisterPlan one = plan_for(1);
  one.realloc = one.consumer > one.launch && (fit < 2 || want == 1 || needed > one.launch);
  // The registers alone do not keep a second block off (ptxas gives a lone
  // consumer warpgroup ~90): ask for more than half of the SM's shared memory.
  if (want == 1 && fit >= 2)
    one.min_shared = kSm90SmSharedBytes / 2 - kBlockReservedSharedBytes + 128;
  return one;
}

// Ping-pong between two consumer warpgroups (FlashAttention-3's schedule):
// each gemm of the loop body is a turn; a warpgroup waits for its turn on
// its barrier (kPingPongBarrier + its index) before issuing the gemm and
// passes the turn on (arrives on the other's) once the gemm is committed,
// then waits for its results while the other issues. One warpgroup's
// softmax then runs while the other's gemm holds the tensor cores, instead
// of both computing the softmax at once and the tensor cores idling. Only
// where the lowered loop has no consumer barrier (a barrier between turns
// could deadlock); `ranges` are the gemms' statements in `body`. Returns
// whether it applied.
// One warpgroup's side of a ping-pong barrier: warpgroup 0 uses barrier B
// (its own) or B + 1 (the other's), warpgroup 1 the reverse.
Stmt TurnBarrier(const char* op, bool own, const Expr& tid, int64_t threads) {
  Stmt st;
  st.kind = StmtKind::kIf;
  st.cond = Lt(tid, I(kProducerThreads));
  st.body.push_back(Call(op, {I(kPingPongBarrier + (own ? 0 : 1)), I(threads)}));
  st.else_body.push_back(Call(op, {I(kPingPongBarrier + (own ? 1 : 0)), I(threads)}));
  return st;
}

// Every buffer a statement names: regions, stores, loads and addresses in
// any of its expressions, nested statements included.
std::set<std::string> NamedBuffers(const Stmt& s) {
  std::set<std::string> names;
  std::function<void(const Expr&)> on_expr = [&](const Expr& e) {
    if (e.kind == ExprKind::kLoad || e.kind == ExprKind::kAddress) names.insert(e.name);
    for (const Expr& a : e.args) on_expr(a);
  };
  ir::ForEachStmt({s}, [&](const Stmt& st) {
    if (st.kind == StmtKind::kStore) names.insert(st.name);
    for (const ir::Region& r : st.regions) {
      names.insert(r.buffer);
      for (const ir::Range& rg : r.ranges) {
        on_expr(rg.min);
        on_expr(rg.extent);
      }
    }
    on_expr(st.value);
    on_expr(st.cond);
    for (const Expr& e : st.indices) on_expr(e);
    for (const Expr& e : st.extents) on_expr(e);
  });
  return names;
}

// Whether lowered statements synchronize the consumers (a barrier between
// ping-pong turns could deadlock).
bool HasConsumerBarrier(const std::vector<Stmt>& body) {
  bool barrier = false;
  ir::ForEachStmt(body, [&](const Stmt& x) {
    barrier = barrier || (x.kind == StmtKind::kCall &&
                          (x.name == "sync_threads" || x.name == "named_barrier_sync"));
  });
  return barrier;
}

bool PingPongTurns(std::vector<Stmt>* body, const std::vector<std::pair<size_t, size_t>>& ranges,
                   const Expr& tid, int64_t threads) {
  if (ranges.empty() || threads != 2 * kProducerThreads || HasConsumerBarrier(*body)) {
    return false;
  }
  auto by_group = [&](const char* op, bool own) { return TurnBarrier(op, own, tid, threads); };
  std::vector<Stmt> out;
  size_t r = 0;
  for (size_t i = 0; i < body->size(); ++i) {
    if (r < ranges.size() && i == ranges[r].first)
      out.push_back(by_group("named_barrier_sync", true));
    Stmt& st = (*body)[i];
    const bool commit = r < ranges.size() && i >= ranges[r].first && i < ranges[r].second &&
                        st.kind == StmtKind::kCall && st.name == "wgmma_commit";
    out.push_back(std::move(st));
    if (commit) {
      out.push_back(by_group("named_barrier_arrive", false));
      ++r;
    }
  }
  if (r != ranges.size()) return false; // a gemm without its commit: leave the body alone
  *body = std::move(out);
  return true;
}

// The row dimension of region `r` of global tensor `g` read or written by
// TMA as a tile of rows x cols (at most 256 rows): `g` of rank 2..5 and of
// constant shape whose extents fit int32 and whose rows are 16-byte
// multiples (TMA's stride rule), the region's non-unit dimensions (rows,
// columns) in order, the columns innermost (the last dimension); nullopt
// otherwise.
std::optional<int> TmaTileRowDim(const Buf& g, const ir::Region& r, int64_t rows, int64_t cols) {
  const size_t rank = g.shape_expr.size();
  if (rank < 2 || rank > 5 || r.ranges.size() != rank || rows > 256) return std::nullopt;
  std::vector<int64_t> shape;
  for (const Expr& e : g.shape_expr) {
    std::optional<int64_t> v = ir::ConstInt(ir::Simplify(e));
    if (!v || *v < 1 || *v > ir::kInt32Max) return std::nullopt;
    shape.push_back(*v);
  }
  if (shape.back() * std::max(1, ir::DTypeBits(g.dtype) / 8) % 16 != 0) return std::nullopt;
  std::vector<int> dims;
  for (size_t d = 0; d < rank; ++d) {
    std::optional<int64_t> ex = ir::ConstInt(ir::Simplify(r.ranges[d].extent));
    if (!ex) return std::nullopt;
    if (*ex != 1) dims.push_back(static_cast<int>(d));
  }
  if (dims.size() != 2 || dims[1] != static_cast<int>(rank) - 1 ||
      ir::ConstInt(ir::Simplify(r.ranges[dims[0]].extent)) != rows ||
      ir::ConstInt(ir::Simplify(r.ranges[dims[1]].extent)) != cols) {
    return std::nullopt;
  }
  return dims[0];
}

} // namespace

absl::StatusOr<std::vector<Expr>> Lowering::TmaCoords(const ir::Region& r) {
  std::vector<Expr> coords;
  for (const ir::Range& x : r.ranges) {
    ASSIGN_OR_RETURN(Expr c, LowerExpr(x.min));
    coords.push_back(ir::Simplify(ir::Cast(ir::DType::kInt32, c)));
  }
  return coords;
}

bool Lowering::WarpSpecializable() const {
  if (!wgmma_ || program_.kernel.threads.size() != 1) return false;
  auto p = program_.attrs.find(kPipelineAttr);
  if (p == program_.attrs.end() || p->second != kPipelineWarpSpecialized) return false;
  if (threads_ % 128 != 0 || threads_ + kProducerThreads > 1024) return false;
  if (!PipelinedNest()) return false;
  // Room for the barriers in shared memory.
  return SharedBytes(bufs_) + 1024 <= kSm90SharedBytes;
}

std::optional<std::vector<const Stmt*>> Lowering::PipelinedNest() const {
  const std::vector<Stmt>* body = &program_.kernel.body;
  if (CountPipelined(*body) != 1) return std::nullopt;
  std::vector<const Stmt*> nest;
  for (;;) {
    const Stmt* holder = nullptr;
    for (const Stmt& s : *body) {
      const bool holds = (s.kind == StmtKind::kFor && s.for_kind == ir::ForKind::kPipelined) ||
                         CountPipelined(s.body) + CountPipelined(s.else_body) > 0;
      if (holds) holder = &s;
    }
    if (holder == nullptr) return std::nullopt;
    if (holder->kind == StmtKind::kFor && holder->for_kind == ir::ForKind::kPipelined) {
      if (holder->num_stages < 2) return std::nullopt;
      return nest;
    }
    // The producer evaluates the nest's extents and conditions as well:
    // nothing in them may read memory or differ between threads.
    bool pure = true;
    auto check = [&](const Expr& e) {
      std::function<void(const Expr&)> walk = [&](const Expr& x) {
        pure = pure && x.kind != ExprKind::kLoad && x.kind != ExprKind::kThreadIdx;
        for (const Expr& a : x.args) walk(a);
      };
      walk(e);
    };
    if (holder->kind == StmtKind::kFor && holder->for_kind == ir::ForKind::kSerial &&
        holder->loop_vars.size() == 1 && holder->extents.size() == 1) {
      check(holder->extents[0]);
    } else if (holder->kind == StmtKind::kIf && CountPipelined(holder->else_body) == 0) {
      check(holder->cond);
    } else {
      return std::nullopt;
    }
    if (!pure) return std::nullopt;
    nest.push_back(holder);
    body = &holder->body;
  }
}

absl::Status Lowering::LowerNestBody(const Stmt& s, const Stmt& header, const std::vector<Stmt>& in,
                                     std::vector<Stmt>* body) {
  const bool nested = ws_nest_.count(&s) > 0;
  if (nested) ws_nest_headers_.push_back(header);
  absl::Status status = LowerStmts(in, body);
  if (nested) ws_nest_headers_.pop_back();
  return status;
}

std::optional<TmaCopy> Lowering::PlanTmaCopy(const Stmt& s) {
  if (s.kind != StmtKind::kCopy || s.regions.size() != 2) return std::nullopt;
  const Buf* src = FindBuf(s.regions[0].buffer);
  const Buf* dst = FindBuf(s.regions[1].buffer);
  if (!src || !dst || src->scope != ir::Scope::kGlobal || src->index_layout ||
      dst->scope != ir::Scope::kShared || dst->wgmma_block == 0 || dst->shape.size() != 2 ||
      src->dtype != dst->dtype) {
    return std::nullopt;
  }
  const int64_t elem = std::max(1, ir::DTypeBits(src->dtype) / 8);
  const size_t rank = src->shape_expr.size();
  // The destination is the whole tile, or whole column blocks of it (the
  // first column a multiple of the block width, which may depend on loop
  // variables: each block is rows x block elements of its own); the
  // source's non-unit dimensions are (rows, columns) in order, the columns
  // innermost.
  const ir::Region& dr = s.regions[1];
  const int64_t w = dst->wgmma_block;
  std::optional<int64_t> row0 = ir::ConstInt(ir::Simplify(dr.ranges[0].min));
  std::optional<int64_t> row_ext = ir::ConstInt(ir::Simplify(dr.ranges[0].extent));
  if (!row0 || *row0 != 0 || !row_ext || *row_ext != dst->shape[0]) return std::nullopt;
  std::optional<int64_t> col0 = ir::ConstInt(ir::Simplify(dr.ranges[1].min));
  std::optional<int64_t> col_ext = ir::ConstInt(ir::Simplify(dr.ranges[1].extent));
  if (!col_ext) return std::nullopt;
  std::optional<ir::Expr> dst_col0;
  if (!col0 || *col0 != 0 || *col_ext != dst->shape[1]) {
    if (*col_ext % w != 0 || ir::ConstInt(ir::Simplify(Mod(dr.ranges[1].min, w))) != 0) {
      return std::nullopt;
    }
    dst_col0 = dr.ranges[1].min;
  }
  const int64_t rows = dst->shape[0], cols = *col_ext;
  const std::optional<int> row_dim = TmaTileRowDim(*src, s.regions[0], rows, cols);
  if (!row_dim || cols % w != 0) return std::nullopt;
  const int col_dim = static_cast<int>(rank) - 1;
  ir::TmaMapAttr map;
  map.param = src->name;
  map.box.assign(rank, 1);
  map.box[static_cast<size_t>(*row_dim)] = rows;
  map.box[static_cast<size_t>(col_dim)] = w;
  map.swizzle_bytes = static_cast<int>(w * elem);
  if (map.swizzle_bytes != 32 && map.swizzle_bytes != 64 && map.swizzle_bytes != 128) {
    return std::nullopt;
  }
  TmaCopy plan;
  plan.copy = &s;
  plan.dst = dst->name;
  plan.row_dim = *row_dim;
  plan.col_dim = col_dim;
  plan.rows = rows;
  plan.block = w;
  plan.blocks = cols / w;
  plan.bytes = rows * cols * elem;
  plan.dst_col0 = dst_col0;
  plan.map = TmaMapIndex(map);
  plan.tma = std::move(map);
  return plan;
}

int64_t Lowering::TmaMapIndex(const ir::TmaMapAttr& map) {
  // One map per (tensor, box, swizzle).
  const std::string text = ir::FormatTmaAttr(map);
  for (size_t k = 0;; ++k) {
    auto it = program_.attrs.find(ir::TmaAttrKey(k));
    if (it == program_.attrs.end()) {
      program_.attrs[ir::TmaAttrKey(k)] = text;
      return static_cast<int64_t>(k);
    }
    if (it->second == text) return static_cast<int64_t>(k);
  }
}

absl::Status Lowering::IssueTma(const TmaCopy& plan, const Expr& stage, const Expr& bar,
                                std::vector<Stmt>* out, const PairHalf* half) {
  const Buf& dst = bufs_.at(plan.dst);
  ASSIGN_OR_RETURN(std::vector<Expr> coords, TmaCoords(plan.copy->regions[0]));
  const size_t rank = coords.size();
  // Column blocks are rows x block elements each, one after another.
  Expr base = Mul(stage, I(dst.size));
  if (plan.dst_col0) {
    ASSIGN_OR_RETURN(Expr col0, LowerExpr(*plan.dst_col0));
    base = Add(base, Mul(Div(col0, plan.block), I(plan.rows * plan.block)));
  }
  // A pair's half (IssueTmaPair): rows [rank * rows/2, (rank + 1) * rows/2)
  // of every box.
  int64_t map = plan.map;
  std::string name = absl::StrCat("tma_load_", rank, "d");
  if (half != nullptr) {
    name = absl::StrCat("tma_load_mc_", rank, "d");
    map = half->map;
    const int64_t rows = plan.rows / 2;
    base = Add(base, Mul(half->rank, I(rows * plan.block)));
    coords[static_cast<size_t>(plan.row_dim)] =
        Add(coords[static_cast<size_t>(plan.row_dim)], Mul(half->rank, I(rows)));
  }
  for (int64_t j = 0; j < plan.blocks; ++j) {
    std::vector<Expr> args;
    args.push_back(Address(dst, ir::Simplify(Add(base, I(j * plan.rows * plan.block)))));
    args.push_back(bar);
    args.push_back(I(map));
    for (size_t d = rank; d-- > 0;) {
      Expr c = coords[d];
      if (static_cast<int>(d) == plan.col_dim && j > 0) c = Add(c, I(j * plan.block));
      args.push_back(ir::Simplify(c));
    }
    out->push_back(Call(name, std::move(args)));
  }
  return absl::OkStatus();
}

absl::Status Lowering::IssueTmaPair(const TmaCopy& plan, const Expr& stage, const Expr& bar,
                                    std::vector<Stmt>* out) {
  std::vector<Stmt> own;
  RETURN_IF_ERROR(IssueTma(plan, stage, bar, &own));
  // Half of each box's rows each (a map of half the rows, whole 8-row
  // swizzle atoms, so that a half lands where the tile's layout has it); a
  // copy whose rows do not split so each block loads itself.
  if (plan.rows % 16 != 0) {
    for (Stmt& x : own) out->push_back(std::move(x));
    return absl::OkStatus();
  }
  PairHalf half;
  half.rank = Var(kClusterRankVar);
  ir::TmaMapAttr rows = plan.tma;
  rows.box[static_cast<size_t>(plan.row_dim)] = plan.rows / 2;
  half.map = TmaMapIndex(rows);
  // The two blocks share the copy where its coordinates, with the other
  // block's block variables, are this block's (the same test in both).
  const std::set<std::string> bvs(program_.kernel.block_vars.begin(),
                                  program_.kernel.block_vars.end());
  Expr same = ir::BoolImm(true);
  const Stmt& box0 = own.front(); // tma_load_<r>d(dst, bar, map, coordinates...)
  for (size_t i = 3; i < box0.indices.size(); ++i) {
    Expr other = box0.indices[i];
    ir::RewriteExpr(&other, [&](Expr x) {
      if (x.kind == ExprKind::kVar && bvs.count(x.name)) x.name = kClusterPeerPrefix + x.name;
      return x;
    });
    if (other != box0.indices[i])
      same = ir::Binary(ir::BinOp::kAnd, same, Eq(box0.indices[i], other));
  }
  Stmt choose;
  choose.kind = StmtKind::kIf;
  choose.cond = ir::Simplify(same);
  RETURN_IF_ERROR(IssueTma(plan, stage, bar, &choose.body, &half));
  choose.else_body = std::move(own);
  if (std::optional<int64_t> c = ir::ConstInt(choose.cond)) {
    for (Stmt& x : *c != 0 ? choose.body : choose.else_body) out->push_back(std::move(x));
    return absl::OkStatus();
  }
  out->push_back(std::move(choose));
  return absl::OkStatus();
}

std::optional<std::vector<TmaCopy>>
Lowering::PlanTmaProducers(const Stmt& s, const std::vector<size_t>& producers) {
  const std::map<std::string, std::string> attrs0 = program_.attrs;
  std::vector<TmaCopy> plans;
  for (size_t i : producers) {
    std::optional<TmaCopy> p = PlanTmaCopy(s.body[i]);
    // The pipeline's stages are whole tiles, and the barrier's transaction
    // count holds a stage's bytes below 2^20.
    if (!p || p->dst_col0 || p->bytes >= (int64_t{1} << 20)) {
      program_.attrs = attrs0; // no tensor maps after all
      return std::nullopt;
    }
    plans.push_back(*p);
  }
  return plans;
}

absl::StatusOr<bool> Lowering::LowerWarpSpecializedLoop(const Stmt& s,
                                                        const std::vector<size_t>& producers,
                                                        const std::set<std::string>& dsts,
                                                        const Expr& n, std::vector<Stmt>* out) {
  if (!ws_) return false;
  const Stmt* gemm = SoleGemm(s, producers);
  if (!gemm) return LowerWarpSpecializedBody(s, producers, dsts, n, out);
  ASSIGN_OR_RETURN(std::optional<WgmmaGemm> g, PlanWgmmaGemm(*gemm));
  if (!g) return false;
  const std::map<std::string, std::string> attrs0 = program_.attrs;
  std::optional<std::vector<TmaCopy>> planned = PlanTmaProducers(s, producers);
  if (!planned) return false;
  const std::vector<TmaCopy>& plans = *planned;
  int64_t bytes = 0;
  for (const TmaCopy& p : plans) bytes += p.bytes;
  if (bytes >= (int64_t{1} << 20)) { // the barrier's transaction count
    program_.attrs = attrs0;
    return false;
  }

  const int64_t stages = s.num_stages;
  // One wgmma group left in flight (its stage released an iteration late)
  // keeps a lone consumer warpgroup's tensor cores busy across the wait; two
  // or more cover each other's drains, and for them the stage held back only
  // shortens the producer's lead: waiting for every group and releasing the
  // stage at once ran 1-5 % faster at 128x256 and 256x128 on an H100, and
  // 10 % slower at 64x128 with one warpgroup (bench/hopper_gemm.py, 2026-12-06).
  // A grid of at most one block per SM streams its operands instead: there
  // the stage held back costs loads in flight, and waiting for every group
  // won: 128x128x32 s3 at 128x14336x4096 (112 blocks) ran 266 TFLOP/s
  // against 220 with one group in flight, while at 8192^3 (4096 blocks) one
  // in flight still won, 537 against 511 (H100, 2026-12-07). A grid whose
  // size is not known keeps the group in flight.
  // A persistent kernel's tiles count as the grid it was made from.
  std::optional<int64_t> blocks = ir::ConstGridBlocks(program_.kernel);
  if (auto t = program_.attrs.find(kPersistentTilesAttr); t != program_.attrs.end()) {
    blocks = std::atoll(t->second.c_str());
  }
  const bool streaming = blocks && *blocks <= kHopperSms;
  const int64_t inflight = stages >= 3 && threads_ < 2 * kProducerThreads && !streaming ? 1 : 0;
  const std::string ko = s.loop_vars[0];
  // Cluster pairs (cluster=2): a loop at the top of a kernel whose grid x
  // extent is even (a pair is blocks 2i and 2i + 1 along x). A stage is
  // free for the producers once the consumers of both blocks released it:
  // either block's producer may write it.
  const std::optional<int64_t> grid_x = program_.kernel.grid.empty()
                                            ? std::nullopt
                                            : ir::ConstInt(ir::Simplify(program_.kernel.grid[0]));
  clustered_ = cluster_ == 2 && ws_nest_headers_.empty() && grid_x && *grid_x % 2 == 0;
  const int64_t pair = clustered_ ? 2 : 1;
  WsBarriers({{stages, 1, pair * threads_ / 32}});
  auto full = [&](const Expr& st) { return WsBarrier(0, stages, false, st); };
  auto empty = [&](const Expr& st) { return WsBarrier(0, stages, true, st); };
  auto release = [&](const Expr& st) {
    std::vector<Stmt> r = {Call("mbarrier_arrive", {empty(st)})};
    if (clustered_) r.push_back(Call("mbarrier_arrive_peer", {empty(st)}));
    return r;
  };
  const std::optional<int64_t> n_const = MaxOf(n);
  if (n_const) var_max_[ko] = *n_const - 1;
  const RingPos ring = Ring(ko, stages, /*producer=*/false);
  const Expr& st = ring.stage;
  const Expr& round = ring.round;

  // Consumers.
  Stmt loop = For(ko, n, ir::ForKind::kSerial, {});
  loop.loc = s.loc;
  loop.body.push_back(Call("mbarrier_wait", {full(st), round}));
  for (const std::string& d : dsts) stage_[d] = st;
  loop.body.push_back(Call("wgmma_fence_tma", {}));
  for (int64_t step = 0; step < g->steps; ++step) g->issue(step, &loop.body);
  loop.body.push_back(Call("wgmma_commit", {}));
  for (const std::string& d : dsts) stage_.erase(d);
  const Expr lane0 = Eq(Mod(Tid(), 32), I(0));
  if (inflight == 0) {
    loop.body.push_back(Call("wgmma_wait", {I(0)}));
    Guarded(lane0, release(st), &loop.body);
  } else {
    loop.body.push_back(WgmmaIterationWait(ko, n, inflight));
    Guarded(And(lane0, Lt(I(0), Var(ko))), release(ring.prev), &loop.body);
  }
  for (const Stmt& a : ring.advance) loop.body.push_back(a);
  out->push_back(std::move(loop));
  out->push_back(Call("wgmma_wait", {I(0)}));
  if (!ring.advance.empty() && inflight > 0) {
    // The ring runs on through the nest: the stage held back by the last
    // iteration (the next one would have released it) goes back now.
    Guarded(And(lane0, Lt(I(0), n)), release(ring.prev), out);
  }
  read_.insert(g->reads.begin(), g->reads.end());
  dirty_.insert(dsts.begin(), dsts.end());
  RETURN_IF_ERROR(WsProducer(s, n, stages, {plans}));
  return true;
}

absl::StatusOr<bool> Lowering::LowerWarpSpecializedBody(const Stmt& s,
                                                        const std::vector<size_t>& producers,
                                                        const std::set<std::string>& dsts,
                                                        const Expr& n, std::vector<Stmt>* out) {
  // Not yet inside a nest (a persistent kernel's tile loop): only the
  // one-gemm loop counts its ring across the nest's iterations.
  if (!ws_nest_headers_.empty()) return false;
  auto is_producer = [&](size_t i) {
    return std::find(producers.begin(), producers.end(), i) != producers.end();
  };
  // Every gemm of the body on wgmma (one of them at least), no pipeline or
  // T.ws region inside it, and what the consumers write in the loop.
  int gemms = 0;
  bool ok = true;
  std::set<std::string> written;
  std::vector<std::set<std::string>> reads(s.body.size()); // each statement's shared reads
  for (size_t i = 0; i < s.body.size() && ok; ++i) {
    if (is_producer(i)) continue;
    SharedAccesses(s.body[i], &reads[i], &written);
    ir::ForEachStmt({s.body[i]}, [&](const Stmt& b) {
      if (b.kind == StmtKind::kFor && b.for_kind == ir::ForKind::kPipelined) ok = false;
      if (b.kind == StmtKind::kWarpSpecialize) ok = false;
      if (b.kind != StmtKind::kGemm || !ok) return;
      absl::StatusOr<std::optional<WgmmaGemm>> g = PlanWgmmaGemm(b);
      if (!g.ok() || !*g) ok = false;
      ++gemms;
    });
  }
  if (!ok || gemms == 0) return false;
  std::optional<std::vector<TmaCopy>> planned = PlanTmaProducers(s, producers);
  if (!planned) return false;
  const std::vector<TmaCopy>& plans = *planned;

  // One ring per producer: its full barriers (one arrival, the TMA bytes),
  // then its empty ones (every consumer thread arrives once it is done
  // with the stage).
  const int64_t stages = s.num_stages;
  const std::string ko = s.loop_vars[0];
  std::vector<WsRing> rings(plans.size(), WsRing{stages, 1, threads_});
  WsBarriers(rings);
  const std::optional<int64_t> n_const = MaxOf(n);
  if (n_const) var_max_[ko] = *n_const - 1;
  const Expr st = ir::Simplify(Mod(Var(ko), stages));
  const Expr round = ir::Simplify(Mod(Div(Var(ko), stages), 2));

  // What the consumers wrote before the loop is fenced toward wgmma's async
  // proxy and synchronized once, here; inside the loop only their own writes
  // of shared buffers need either, and the mbarriers order the stages.
  for (const std::string& d : dsts) dirty_.erase(d);
  out->push_back(Call("fence_proxy_async", {}));
  if (!dirty_.empty()) Barrier(out);
  std::set<std::string> fence_free;
  for (const auto& [name, b] : bufs_) {
    if (b.scope == ir::Scope::kShared && !written.count(name)) fence_free.insert(name);
  }

  // Each stage is waited for before its first reader and released after its
  // last (a wgmma gemm's lowering ends with its wait).
  std::vector<size_t> first(plans.size(), s.body.size()), last(plans.size(), s.body.size());
  for (size_t i = 0; i < s.body.size(); ++i) {
    for (size_t p = 0; p < plans.size(); ++p) {
      if (!reads[i].count(plans[p].dst)) continue;
      if (first[p] == s.body.size()) first[p] = i;
      last[p] = i;
    }
  }
  // The consumers' loop (`consumers`: the loop, then what follows it) between
  // the ping-pong's first arrival and last sync, then the producer's loop.
  auto finish = [&](std::vector<Stmt> consumers, bool pingpong) -> absl::StatusOr<bool> {
    if (pingpong) {
      // The second warpgroup lets the first take the first turn.
      Guarded(Lt(I(kProducerThreads - 1), Tid()),
              {Call("named_barrier_arrive", {I(kPingPongBarrier), I(threads_)})}, out);
    }
    for (Stmt& c : consumers) out->push_back(std::move(c));
    if (pingpong) {
      // ... and the first takes the second's last turn back, so both
      // barriers end with no arrival pending.
      Guarded(Lt(Tid(), I(kProducerThreads)),
              {Call("named_barrier_sync", {I(kPingPongBarrier), I(threads_)})}, out);
    }
    // After the loop every stage's loads have completed (each was waited for).
    read_.insert(dsts.begin(), dsts.end());
    for (const std::string& d : dsts) dirty_.erase(d);
    std::vector<std::vector<TmaCopy>> groups;
    for (const TmaCopy& p : plans) groups.push_back({p});
    RETURN_IF_ERROR(WsProducer(s, n, stages, groups));
    return true;
  };

  if (ws_overlap_ && written.empty()) {
    std::vector<Stmt> consumers;
    bool pingpong = false;
    no_proxy_fence_ = fence_free;
    absl::StatusOr<std::optional<Stmt>> overlapped =
        OverlappedLoop(s, producers, plans, first, last, n, stages, &consumers, &pingpong);
    no_proxy_fence_.clear();
    RETURN_IF_ERROR(overlapped.status());
    if (*overlapped) {
      consumers.insert(consumers.begin(), std::move(**overlapped));
      return finish(std::move(consumers), pingpong);
    }
  }
  Stmt loop = For(ko, n, ir::ForKind::kSerial, {});
  loop.loc = s.loc;
  for (const std::string& d : dsts) stage_[d] = st;
  // What one iteration writes, the next may overwrite while a thread still
  // reads it (a serial loop's rule).
  if (!written.empty()) Barrier(&loop.body);
  no_proxy_fence_ = fence_free;
  std::vector<std::pair<size_t, size_t>> gemm_ranges; // each top-level gemm's statements
  absl::Status status;
  for (size_t i = 0; i <= s.body.size() && status.ok(); ++i) {
    for (size_t p = 0; p < plans.size(); ++p) {
      if (first[p] == i) {
        loop.body.push_back(Call("mbarrier_wait", {WsBarrier(p, stages, false, st), round}));
      }
    }
    const size_t begin = loop.body.size();
    if (i < s.body.size() && !is_producer(i)) status = LowerStmt(s.body[i], &loop.body);
    if (i < s.body.size() && s.body[i].kind == StmtKind::kGemm) {
      gemm_ranges.emplace_back(begin, loop.body.size());
    }
    for (size_t p = 0; p < plans.size(); ++p) {
      if (last[p] == i)
        loop.body.push_back(Call("mbarrier_arrive", {WsBarrier(p, stages, true, st)}));
    }
  }
  no_proxy_fence_.clear();
  for (const std::string& d : dsts) stage_.erase(d);
  RETURN_IF_ERROR(status);
  const bool pingpong = static_cast<int>(gemm_ranges.size()) == gemms && kPingPong &&
                        PingPongTurns(&loop.body, gemm_ranges, Tid(), threads_);
  std::vector<Stmt> consumers;
  consumers.push_back(std::move(loop));
  return finish(std::move(consumers), pingpong);
}

absl::StatusOr<std::optional<Stmt>>
Lowering::OverlappedLoop(const Stmt& s, const std::vector<size_t>& producers,
                         const std::vector<TmaCopy>& plans, const std::vector<size_t>& first,
                         const std::vector<size_t>& last, const Expr& n, int64_t stages,
                         std::vector<Stmt>* epilogue, bool* pingpong) {
  auto is_producer = [&](size_t i) {
    return std::find(producers.begin(), producers.end(), i) != producers.end();
  };
  // The form: two gemms, both top-level statements, the second the body's
  // last consumer statement; two rings, each read by one of them alone.
  int nested = 0;
  std::vector<size_t> gemms;
  size_t last_consumer = s.body.size();
  for (size_t i = 0; i < s.body.size(); ++i) {
    if (is_producer(i)) continue;
    last_consumer = i;
    if (s.body[i].kind == StmtKind::kGemm) gemms.push_back(i);
    ir::ForEachStmt({s.body[i]}, [&](const Stmt& b) { nested += b.kind == StmtKind::kGemm; });
  }
  if (gemms.size() != 2 || nested != 2 || last_consumer != gemms[1] || plans.size() != 2) {
    return std::optional<Stmt>();
  }
  const size_t i1 = gemms[0], i2 = gemms[1];
  const Stmt& g1 = s.body[i1];
  const Stmt& g2 = s.body[i2];
  if (g1.wg_wait != 0 || g2.wg_wait != 0) return std::optional<Stmt>();
  size_t r1 = plans.size(), r2 = plans.size();
  for (size_t p = 0; p < plans.size(); ++p) {
    if (first[p] == i1 && last[p] == i1) r1 = p;
    if (first[p] == i2 && last[p] == i2) r2 = p;
  }
  if (r1 == plans.size() || r2 == plans.size()) return std::optional<Stmt>();
  // gemm2's operands besides its tile (its accumulator and its A): nothing
  // before gemm1, nor gemm1, names them; the statements between the gemms
  // up to the first that does (`split`) run while gemm2 of the tile before
  // is in flight, the rest after its wait.
  const std::set<std::string> w2 = {g2.regions[0].buffer, g2.regions[2].buffer};
  auto names_w2 = [&](const Stmt& x) {
    const std::set<std::string> named = NamedBuffers(x);
    return std::any_of(w2.begin(), w2.end(), [&](const std::string& b) { return named.count(b); });
  };
  for (size_t i = 0; i <= i1; ++i) {
    if (!is_producer(i) && names_w2(s.body[i])) return std::optional<Stmt>();
  }
  size_t split = i2;
  for (size_t i = i1 + 1; i < i2; ++i) {
    if (!is_producer(i) && names_w2(s.body[i])) {
      split = i;
      break;
    }
  }

  const std::string ko = s.loop_vars[0];
  // The ping-pong turns go in as markers, made barriers at the end where the
  // lowered statements hold no consumer barrier (PingPongTurns' rule).
  const Stmt turn_sync = Call("kiln.turn_sync", {});
  const Stmt turn_arrive = Call("kiln.turn_arrive", {});
  const Expr st = ir::Simplify(Mod(Var(ko), stages));
  const Expr round = ir::Simplify(Mod(Div(Var(ko), stages), 2));
  const Expr prev = Add(Var(ko), I(-1));
  const Expr pst = ir::Simplify(Mod(prev, stages));
  const Expr pround = ir::Simplify(Mod(Div(prev, stages), 2));
  const Expr later = Lt(I(0), Var(ko)); // a tile before this one: its gemm2 is pending
  const std::string d1 = plans[r1].dst, d2 = plans[r2].dst;
  Stmt g1_async = g1, g2_async = g2;
  g1_async.wg_wait = ir::kGemmNoWait;
  g2_async.wg_wait = ir::kGemmNoWait;
  const bool saved_sync = sync_gemms_;
  sync_gemms_ = false;
  absl::Status status;
  auto lower = [&](size_t from, size_t to, std::vector<Stmt>* out) {
    for (size_t i = from; i < to && status.ok(); ++i) {
      if (!is_producer(i)) status = LowerStmt(s.body[i], out);
    }
  };
  auto gemm = [&](const Stmt& g, const std::string& dst, const Expr& stage,
                  std::vector<Stmt>* out) {
    if (!status.ok()) return;
    stage_[dst] = stage;
    status = LowerGemm(g, out);
    stage_.erase(dst);
  };

  Stmt loop = For(ko, n, ir::ForKind::kSerial, {});
  loop.loc = s.loc;
  std::vector<Stmt>& body = loop.body;
  lower(0, i1, &body);
  // One turn on the tensor cores: this tile's gemm1, then the tile before's
  // gemm2.
  body.push_back(Call("mbarrier_wait", {WsBarrier(r1, stages, false, st), round}));
  body.push_back(turn_sync);
  gemm(g1_async, d1, st, &body);
  std::vector<Stmt> pending;
  pending.push_back(Call("mbarrier_wait", {WsBarrier(r2, stages, false, pst), pround}));
  gemm(g2_async, d2, pst, &pending);
  Guarded(later, std::move(pending), &body);
  body.push_back(turn_arrive);
  // gemm1 done (groups complete in order: one left where gemm2 was issued).
  std::vector<Stmt> wait1;
  WaitWgmma(1, &wait1);
  std::vector<Stmt> wait0 = wait1;
  wait0[0] = Call("wgmma_wait", {I(0)});
  Stmt wait;
  wait.kind = StmtKind::kIf;
  wait.cond = later;
  wait.body = std::move(wait1);
  wait.else_body = std::move(wait0);
  body.push_back(std::move(wait));
  inflight_.erase(g1.regions[2].buffer);
  body.push_back(Call("mbarrier_arrive", {WsBarrier(r1, stages, true, st)}));
  lower(i1 + 1, split, &body);
  // gemm2 of the tile before done: its stage goes back to the producer.
  std::vector<Stmt> done;
  WaitWgmma(0, &done);
  done.push_back(Call("mbarrier_arrive", {WsBarrier(r2, stages, true, pst)}));
  Guarded(later, std::move(done), &body);
  lower(split, i2, &body);

  // The last tile's gemm2, after the loop.
  const Expr lk = Add(n, I(-1));
  const Expr lst = ir::Simplify(Mod(lk, stages));
  const Expr lround = ir::Simplify(Mod(Div(lk, stages), 2));
  std::vector<Stmt> tail;
  tail.push_back(turn_sync);
  tail.push_back(Call("mbarrier_wait", {WsBarrier(r2, stages, false, lst), lround}));
  gemm(g2_async, d2, lst, &tail);
  tail.push_back(turn_arrive);
  WaitWgmma(0, &tail);
  tail.push_back(Call("mbarrier_arrive", {WsBarrier(r2, stages, true, lst)}));
  sync_gemms_ = saved_sync;
  RETURN_IF_ERROR(status);
  *pingpong = threads_ == 2 * kProducerThreads && kPingPong && !HasConsumerBarrier(body);
  for (std::vector<Stmt>* part : {&body, &tail}) {
    std::vector<Stmt> kept;
    for (Stmt& x : *part) {
      const bool sync = x.kind == StmtKind::kCall && x.name == "kiln.turn_sync";
      const bool arrive = x.kind == StmtKind::kCall && x.name == "kiln.turn_arrive";
      if ((sync || arrive) && *pingpong) {
        kept.push_back(TurnBarrier(sync ? "named_barrier_sync" : "named_barrier_arrive", sync,
                                   Tid(), threads_));
      } else if (!sync && !arrive) {
        kept.push_back(std::move(x));
      }
    }
    *part = std::move(kept);
  }
  Guarded(Lt(I(0), n), std::move(tail), epilogue);
  return std::optional<Stmt>(std::move(loop));
}

void Lowering::WsBarriers(const std::vector<WsRing>& rings) {
  ws_bars_ = Fresh("bars");
  ws_rings_ = rings;
  int64_t size = 0;
  for (const WsRing& r : rings) size += 2 * r.stages;
  Buf bb;
  bb.name = ws_bars_;
  bb.dtype = ir::DType::kUInt64;
  bb.scope = ir::Scope::kShared;
  bb.shape = {size};
  bb.shape_expr = {I(size)};
  bb.size = size;
  bufs_[ws_bars_] = bb;
}

Expr Lowering::WsBarrier(size_t ring, int64_t stages, bool empty, const Expr& stage) {
  const auto base = static_cast<int64_t>(ring) * 2 * stages + (empty ? stages : 0);
  return Address(bufs_.at(ws_bars_), ir::Simplify(Add(stage, I(base))));
}

absl::Status Lowering::WsProducer(const Stmt& s, const Expr& n, int64_t stages,
                                  const std::vector<std::vector<TmaCopy>>& groups) {
  // Thread T, for each iteration and group (ring g): wait until the
  // consumers released the stage (the first round passes at once), arrive
  // on its full barrier expecting the group's bytes, issue the loads.
  const std::string ko = s.loop_vars[0];
  const RingPos ring = Ring(ko, stages, /*producer=*/true);
  const Expr& st = ring.stage;
  const Expr& parity = ring.round;
  std::vector<Stmt> producer;
  for (const std::vector<TmaCopy>& g : groups) {
    for (const TmaCopy& p : g) producer.push_back(Call("prefetch_tma_desc", {I(p.map)}));
  }
  Stmt ploop = For(ko, n, ir::ForKind::kSerial, {});
  ploop.loc = s.loc;
  std::map<std::string, Expr> saved_env = env_;
  env_.erase(ko); // the producer loop's own variable
  for (size_t r = 0; r < groups.size(); ++r) {
    int64_t bytes = 0;
    for (const TmaCopy& p : groups[r]) bytes += p.bytes;
    ploop.body.push_back(Call("mbarrier_wait", {WsBarrier(r, stages, true, st), parity}));
    const Expr full = WsBarrier(r, stages, false, st);
    ploop.body.push_back(Call("mbarrier_arrive_expect_tx", {full, I(bytes)}));
    for (const TmaCopy& p : groups[r]) {
      absl::Status status =
          clustered_ ? IssueTmaPair(p, st, full, &ploop.body) : IssueTma(p, st, full, &ploop.body);
      if (!status.ok()) {
        env_ = std::move(saved_env);
        return status;
      }
    }
  }
  env_ = std::move(saved_env);
  for (const Stmt& a : ring.advance) ploop.body.push_back(a);
  if (ring.advance.empty()) {
    producer.push_back(std::move(ploop));
    ws_producer_ = std::move(producer);
    return absl::OkStatus();
  }
  // The consumers' nest around the loop, with the producer's own position.
  std::vector<Stmt> inner = {std::move(ploop)};
  for (size_t h = ws_nest_headers_.size(); h-- > 0;) {
    Stmt wrap = ws_nest_headers_[h];
    wrap.body = std::move(inner);
    inner = {std::move(wrap)};
  }
  producer.push_back(LocalAlloc(ws_pring_, ir::DType::kInt32, 2));
  producer.push_back(Store(ws_pring_, {I(0)}, I(0)));
  producer.push_back(Store(ws_pring_, {I(1)}, I(0)));
  for (Stmt& x : inner) producer.push_back(std::move(x));
  ws_producer_ = std::move(producer);
  return absl::OkStatus();
}

Lowering::RingPos Lowering::Ring(const std::string& ko, int64_t stages, bool producer) {
  RingPos r;
  if (ws_nest_headers_.empty()) {
    // The loop runs the ring once: its variable is the position.
    r.stage = ir::Simplify(Mod(Var(ko), stages));
    r.round = ir::Simplify(Mod(Add(Div(Var(ko), stages), I(producer ? 1 : 0)), 2));
    r.prev = ir::Simplify(Mod(Add(Var(ko), I(stages - 1)), stages));
    return r;
  }
  // In a nest the ring runs on across its iterations: each side keeps
  // {stage, phase} in registers of its own and steps them at the end of
  // each iteration (no division by the stages in the loop).
  if (ws_ring_.empty()) {
    ws_ring_ = Fresh("ws_ring");
    ws_pring_ = Fresh("ws_pring");
    top_allocs_.push_back(LocalAlloc(ws_ring_, ir::DType::kInt32, 2));
    top_allocs_.push_back(Store(ws_ring_, {I(0)}, I(0)));
    top_allocs_.push_back(Store(ws_ring_, {I(1)}, I(0)));
  }
  const std::string& a = producer ? ws_pring_ : ws_ring_;
  const Expr stage = ir::Load(a, ir::DType::kInt32, {I(0)});
  const Expr phase = ir::Load(a, ir::DType::kInt32, {I(1)});
  const Expr next = Add(stage, I(1));
  const Expr wraps = Eq(next, I(stages));
  r.stage = stage;
  r.round = producer ? ir::Binary(ir::BinOp::kBitXor, phase, I(1)) : phase;
  r.prev = ir::Select(Eq(stage, I(0)), I(stages - 1), Add(stage, I(-1)));
  // The phase first: its step reads the stage before the stage's own.
  r.advance.push_back(
      Store(a, {I(1)}, ir::Select(wraps, ir::Binary(ir::BinOp::kBitXor, phase, I(1)), phase)));
  r.advance.push_back(Store(a, {I(0)}, ir::Select(wraps, I(0), next)));
  return r;
}

absl::StatusOr<bool> Lowering::LowerTmaStoreEpilogue(const Stmt& s, std::vector<Stmt>* out) {
  if (s.regions.size() != 2) return false;
  const Buf* src = FindBuf(s.regions[0].buffer);
  const Buf* dst = FindBuf(s.regions[1].buffer);
  if (!src || !dst || src->scope != ir::Scope::kFragment || src->shape.size() != 2 ||
      src->reducer || dst->scope != ir::Scope::kGlobal || dst->index_layout) {
    return false;
  }
  // A workspace (split-K's float32 partials) is Kiln's own: launchers
  // build tensor maps for the program's tensors only.
  for (const ir::Param& p : program_.params) {
    if (p.buffer.name == dst->name && p.is_workspace) return false;
  }
  const int64_t eb = std::max(1, ir::DTypeBits(dst->dtype) / 8);
  if (ir::DTypeBits(dst->dtype) % 8 != 0 || 128 % eb != 0) return false;
  const int64_t rows = src->shape[0], cols = src->shape[1], w = 128 / eb;
  if (rows > 256 || cols % w != 0) return false;
  // The whole fragment...
  const ir::Region& sr = s.regions[0];
  for (size_t d = 0; d < 2; ++d) {
    if (ir::ConstInt(ir::Simplify(sr.ranges[d].min)) != 0 ||
        ir::ConstInt(ir::Simplify(sr.ranges[d].extent)) != src->shape[d]) {
      return false;
    }
  }
  // ...into rows x cols of a tensor TMA can store to.
  const std::optional<int> row_dim = TmaTileRowDim(*dst, s.regions[1], rows, cols);
  if (!row_dim) return false;
  const size_t rank = dst->shape_expr.size();
  const size_t col_dim = rank - 1;
  // The tile gets shared memory of its own (the operand stages may still
  // be filling for a persistent kernel's next tile), at a 1 KiB boundary.
  Buf tile;
  tile.dtype = dst->dtype;
  tile.scope = ir::Scope::kShared;
  tile.shape = {rows, cols};
  tile.shape_expr = {I(rows), I(cols)};
  tile.size = rows * cols;
  tile.wgmma_block = w;
  tile.loc = s.loc;
  std::map<std::string, Buf> with = bufs_;
  with[" ctile"] = tile; // named once taken
  // As PlanRegisters will count them (the barriers' bytes again, at most 64).
  const int64_t shared = SharedBytes(bufs_) + 64, with_tile = SharedBytes(with) + 64;
  if (with_tile + 1024 > kSm90SharedBytes) return false;
  // Auto (the default): not where the tile would cost a second block per
  // SM (PlanRegisters plans one or two).
  auto blocks = [](int64_t bytes) {
    return std::min<int64_t>(2, kSm90SmSharedBytes / (bytes + kBlockReservedSharedBytes));
  };
  if (tma_store_auto_ && blocks(with_tile) < blocks(shared)) return false;
  tile.name = Fresh("ctile");
  ASSIGN_OR_RETURN(std::vector<Expr> coords, TmaCoords(s.regions[1]));
  ir::TmaMapAttr map;
  map.param = dst->name;
  map.box.assign(rank, 1);
  map.box[static_cast<size_t>(*row_dim)] = rows;
  map.box[col_dim] = w;
  map.swizzle_bytes = 128;
  const int64_t map_index = TmaMapIndex(map);

  bufs_[tile.name] = tile;
  program_.attrs[absl::StrCat("kiln.smem_align.", tile.name)] = "1024";
  Stmt alloc;
  alloc.kind = StmtKind::kAlloc;
  alloc.buffer.name = tile.name;
  alloc.buffer.dtype = tile.dtype;
  alloc.buffer.scope = ir::Scope::kShared;
  alloc.buffer.shape = {I(tile.size)};
  top_allocs_.push_back(std::move(alloc));

  const Expr t0 = Eq(Tid(), I(0));
  // In a nest the tile is written again for the next output tile: the
  // store before must have read it.
  if (!ws_nest_headers_.empty()) {
    Guarded(t0, {Call("tma_store_wait_read", {I(0)})}, out);
    out->push_back(Call("sync_threads", {}));
  }
  Stmt to_tile = s;
  to_tile.regions[1].buffer = tile.name;
  to_tile.regions[1].ranges = {ir::Range{I(0), I(rows)}, ir::Range{I(0), I(cols)}};
  RETURN_IF_ERROR(LowerCopy(to_tile, out));
  // The threads' writes, visible to the async proxy, all of them done.
  out->push_back(Call("fence_proxy_async", {}));
  out->push_back(Call("sync_threads", {}));
  std::vector<Stmt> store;
  for (int64_t j = 0; j < cols / w; ++j) {
    std::vector<Expr> args = {Address(bufs_.at(tile.name), I(j * rows * w)), I(map_index)};
    for (size_t d = rank; d-- > 0;) {
      args.push_back(ir::Simplify(d == col_dim ? Add(coords[d], I(j * w)) : coords[d]));
    }
    store.push_back(Call(absl::StrCat("tma_store_", rank, "d"), std::move(args)));
  }
  store.push_back(Call("tma_store_commit", {}));
  Guarded(t0, std::move(store), out);
  tma_stored_ = true;
  return true;
}

void Lowering::SplitWarpGroups(std::vector<Stmt>* body) {
  const int64_t t = threads_;
  std::vector<Stmt> pre, consumer;
  for (Stmt& s : *body) {
    // Shared buffers are carved for both branches; the block rasterization
    // (the emitter reads it at the top level) holds for both too.
    const bool shared = s.kind == StmtKind::kAlloc && (s.buffer.scope == ir::Scope::kSharedDyn ||
                                                       s.buffer.scope == ir::Scope::kShared);
    (shared || s.kind == StmtKind::kUseSwizzle ? pre : consumer).push_back(std::move(s));
  }
  // The block's shared memory outlives the TMA stores of its epilogue.
  if (tma_stored_) Guarded(Eq(Tid(), I(0)), {Call("tma_store_wait", {I(0)})}, &consumer);
  ReplaceBarriers(&consumer, t);

  Stmt alloc;
  alloc.kind = StmtKind::kAlloc;
  alloc.buffer.name = ws_bars_;
  alloc.buffer.dtype = ir::DType::kUInt64;
  alloc.buffer.scope = ir::Scope::kSharedDyn;
  const int64_t n_bars = bufs_.at(ws_bars_).size;
  alloc.buffer.shape = {I(n_bars)};
  pre.push_back(std::move(alloc));
  // Ring by ring, each stage's full barrier, then its empty one.
  std::vector<Stmt> init;
  int64_t first = 0;
  for (const WsRing& r : ws_rings_) {
    for (int64_t st = 0; st < r.stages; ++st) {
      init.push_back(
          Call("mbarrier_init", {Address(bufs_.at(ws_bars_), I(first + st)), I(r.full_count)}));
      init.push_back(Call("mbarrier_init", {Address(bufs_.at(ws_bars_), I(first + r.stages + st)),
                                            I(r.empty_count)}));
    }
    first += 2 * r.stages;
  }
  init.push_back(Call("fence_barrier_init", {}));
  Guarded(Eq(Tid(), I(0)), std::move(init), &pre);
  // A pair's barriers are armed in both blocks before either block's
  // producer multicasts into the other or its consumers arrive there.
  pre.push_back(Call(clustered_ ? "cluster_sync" : "sync_threads", {}));

  // Blocks per SM and register reallocation (PlanRegisters).
  int64_t want = 0;
  if (auto w = program_.attrs.find(kWsBlocksAttr); w != program_.attrs.end()) {
    want = std::atoll(w->second.c_str());
  }
  const RegisterPlan regs =
      PlanRegisters(t, RegisterArrayWords(consumer) + kConsumerOverheadRegs,
                    WgmmaInstructionRegs(consumer), SharedBytes(bufs_) + 8 * n_bars, want);

  Stmt split;
  split.kind = StmtKind::kIf;
  split.cond = Lt(Tid(), I(t));
  if (regs.realloc) split.body.push_back(Call("setmaxnreg_inc", {I(regs.consumer)}));
  for (Stmt& s : consumer) split.body.push_back(std::move(s));
  if (regs.realloc) split.else_body.push_back(Call("setmaxnreg_dec", {I(kProducerRegs)}));
  Guarded(Eq(Tid(), I(t)), std::move(ws_producer_), &split.else_body);
  pre.push_back(std::move(split));
  // Neither block of a pair leaves while the other may still arrive on its
  // barriers (its consumers' releases).
  if (clustered_) {
    pre.push_back(Call("cluster_sync", {}));
    program_.attrs[kClusterDimsAttr] = "2";
  }
  *body = std::move(pre);
  program_.kernel.threads = {t + kProducerThreads};
  program_.attrs[kPipelineAttr] = kPipelineWarpSpecialized;
  if (regs.blocks > 1) program_.attrs[kMinBlocksAttr] = absl::StrCat(regs.blocks);
  if (regs.min_shared > 0) program_.attrs[kMinDynamicSmemAttr] = absl::StrCat(regs.min_shared);
}

} // namespace kiln::passes::lowering
