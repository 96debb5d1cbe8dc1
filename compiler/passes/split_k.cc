#include "compiler/passes/split_k.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/simplify.h"

namespace kiln::passes {
namespace {

using ir::BinOp;
using ir::Expr;
using ir::Stmt;
using ir::StmtKind;

// The reduce kernel's tile: rows x columns of the output per block, one
// element per thread and row.
constexpr int64_t kReduceRows = 4;
constexpr int64_t kReduceCols = 128;

// Whether a statement list names buffer `name` anywhere (operands, loads,
// stores).
bool Mentions(const std::vector<Stmt>& stmts, const std::string& name) {
  bool found = false;
  ir::ForEachStmt(stmts, [&](const Stmt& s) {
    for (const ir::Region& r : s.regions) found |= r.buffer == name;
    if (s.kind == StmtKind::kStore || s.kind == StmtKind::kAnnotateLayout) found |= s.name == name;
  });
  if (found) return true;
  ir::Program scan;
  scan.kernel.body = stmts;
  ir::ForEachExpr(scan,
                  [&](const Expr& e) { found |= e.kind == ir::ExprKind::kLoad && e.name == name; });
  return found;
}

// Whether `s` (or a statement in it) writes global memory: a store, copy,
// atomic or TMA copy whose destination is not one of `local` (the kernel's
// own allocations).
bool WritesGlobal(const Stmt& s, const std::set<std::string>& local) {
  bool writes = false;
  ir::ForEachStmt({s}, [&](const Stmt& x) {
    switch (x.kind) {
    case StmtKind::kStore:
      writes |= local.count(x.name) == 0;
      break;
    case StmtKind::kCopy:
    case StmtKind::kReduce:
      writes |= x.regions.size() > 1 && local.count(x.regions[1].buffer) == 0;
      break;
    case StmtKind::kAtomic:
      writes |= !x.regions.empty() && local.count(x.regions[0].buffer) == 0;
      break;
    case StmtKind::kFill:
    case StmtKind::kGemm:
      writes |= !x.regions.empty() && local.count(x.regions.back().buffer) == 0;
      break;
    default:
      break;
    }
  });
  return writes;
}

// The sum of the `splits` partials of output element (row, col), in order,
// cast to `out`'s dtype.
Expr PartialsSum(const std::string& partials, ir::DType acc, ir::DType out, int splits,
                 const Expr& row, const Expr& col, ir::Loc at) {
  Expr sum;
  for (int z = 0; z < splits; ++z) {
    Expr term = ir::Load(partials, acc, {ir::IntImm(z, ir::DType::kInt32, at), row, col}, at);
    sum = z == 0 ? term : ir::Binary(BinOp::kAdd, sum, term, at);
  }
  return acc == out ? sum : ir::Cast(out, sum, at);
}

// Split-K's fused reduction (split_k.h): after kernel `program.kernel`'s
// copy of its partials (the last statement), a ticket for the output tile
// that the program's copy `copy_out` of `acc_buf` into `output` wrote (rows x
// cols from its minimum) and, in the block that drew the last one, the
// tile's sums. Where the accumulator `acc` is rows x cols
// (the program copied all of it), the sums go into the accumulator, in its
// own layout (its own part from its registers, the others' from the
// workspace), and the program's copy `copy_out` writes them, so the output
// is stored as the program's epilogue stores it (vectors, or TMA on
// Hopper); otherwise a T.Parallel over the tile stores each sum.
void FuseReduction(ir::Program& program, const Stmt& copy_out, const ir::Buffer& acc_buf,
                   const ir::Buffer& output, int64_t rows, int64_t cols,
                   const std::string& partials, int splits, const std::string& split,
                   ir::FreshNames& names) {
  ir::Kernel& k = program.kernel;
  const ir::Loc at = k.body.back().loc;
  const ir::DType idx = ir::DType::kInt32;
  const ir::Region& tile = copy_out.regions[1];
  const ir::DType acc = acc_buf.dtype;

  // One counter per output tile, indexed by the tile's block variables (the
  // grid's first two dimensions; after T.use_swizzle too: they still name
  // each tile once).
  ir::Buffer tickets;
  tickets.name = names.Fresh("kiln_splitk_tickets");
  tickets.dtype = idx;
  tickets.scope = ir::Scope::kGlobal;
  tickets.shape = {ir::Simplify(ir::Binary(BinOp::kMul, k.grid[0], k.grid[1], at))};
  tickets.loc = at;
  program.workspaces.push_back(tickets);
  const Expr tile_index =
      ir::Binary(BinOp::kAdd,
                 ir::Binary(BinOp::kMul, ir::VarRef(k.block_vars[1], idx, at),
                            k.grid[0].dtype == idx ? k.grid[0] : ir::Cast(idx, k.grid[0], at), at),
                 ir::VarRef(k.block_vars[0], idx, at), at);

  // The block's flag: whether it drew the tile's last ticket.
  Stmt flag;
  flag.kind = StmtKind::kAlloc;
  flag.loc = at;
  flag.buffer.name = names.Fresh("kiln_splitk_last");
  flag.buffer.dtype = idx;
  flag.buffer.scope = ir::Scope::kShared;
  flag.buffer.shape = {ir::IntImm(1, idx, at)};
  flag.buffer.loc = at;
  const std::string flag_name = flag.buffer.name;
  k.body.insert(k.body.begin(), std::move(flag));

  k.body.push_back(
      ir::CallStmt("splitk_ticket",
                   {ir::Address(flag_name, idx, ir::IntImm(0, idx, at), at),
                    ir::Address(tickets.name, idx, tile_index, at), ir::IntImm(splits, idx, at)},
                   at));

  const std::string i = names.Fresh("kiln_splitk_i"), j = names.Fresh("kiln_splitk_j");
  const auto at_dim = [&](size_t d, const std::string& v) {
    const Expr& lo = tile.ranges[d].min;
    return ir::Simplify(ir::Binary(BinOp::kAdd, lo.dtype == idx ? lo : ir::Cast(idx, lo, at),
                                   ir::VarRef(v, idx, at), at));
  };
  const Expr row = at_dim(0, i), col = at_dim(1, j);
  const auto extent32 = [&](const Expr& e) { return e.dtype == idx ? e : ir::Cast(idx, e, at); };
  const Expr inside =
      ir::Binary(BinOp::kAnd, ir::Binary(BinOp::kLt, row, extent32(output.shape[0]), at),
                 ir::Binary(BinOp::kLt, col, extent32(output.shape[1]), at), at);
  // The sum in the accumulator's own layout, then the program's copy (the TMA-store
  // epilogue on Hopper), unless the output is known to be smaller than the tile:
  // then the rows past it would leave most threads idle while a few sum the whole
  // tile's partials (16 x 4096 x 4096 in 128 x 256 tiles: one warp of 256 summing,
  // 3x slower than the reduce kernel on an H100), and a T.Parallel loop over the
  // tile spreads the valid part over every thread.
  const std::optional<int64_t> out_rows = ir::ConstInt(ir::Simplify(output.shape[0]));
  const std::optional<int64_t> out_cols = ir::ConstInt(ir::Simplify(output.shape[1]));
  const bool partial_tile = (out_rows && *out_rows < rows) || (out_cols && *out_cols < cols);
  const bool in_fragment = acc_buf.shape.size() == 2 && ir::ConstInt(acc_buf.shape[0]) == rows &&
                           ir::ConstInt(acc_buf.shape[1]) == cols && !partial_tile;
  Stmt store;
  store.kind = StmtKind::kStore;
  store.loc = at;
  store.has_value = true;
  Stmt each;
  each.kind = StmtKind::kFor;
  each.for_kind = ir::ForKind::kParallel;
  each.loc = at;
  each.loop_vars = {i, j};
  each.extents = {ir::IntImm(rows, idx, at), ir::IntImm(cols, idx, at)};
  if (in_fragment) {
    // acc[i, j] = inside ? sum over z of (z == split ? acc[i, j] :
    // partials[z, r, c]) : acc[i, j], in order; then the program's copy.
    const Expr mine =
        ir::Load(acc_buf.name, acc, {ir::VarRef(i, idx, at), ir::VarRef(j, idx, at)}, at);
    Expr sum;
    for (int z = 0; z < splits; ++z) {
      const Expr zi = ir::IntImm(z, idx, at);
      Expr term = ir::Select(ir::Binary(BinOp::kEq, ir::VarRef(split, idx, at), zi, at), mine,
                             ir::Load(partials, acc, {zi, row, col}, at), at);
      sum = z == 0 ? term : ir::Binary(BinOp::kAdd, sum, term, at);
    }
    store.name = acc_buf.name;
    store.indices = {ir::VarRef(i, idx, at), ir::VarRef(j, idx, at)};
    store.value = ir::Select(inside, sum, mine, at);
    each.body.push_back(std::move(store));
  } else {
    // for i, j in T.Parallel(rows, cols): output[r0 + i, c0 + j] = sum.
    store.name = tile.buffer;
    store.indices = {row, col};
    store.value = PartialsSum(partials, acc, output.dtype, splits, row, col, at);
    Stmt guard;
    guard.kind = StmtKind::kIf;
    guard.loc = at;
    guard.cond = inside;
    guard.body.push_back(std::move(store));
    each.body.push_back(std::move(guard));
  }
  Stmt last;
  last.kind = StmtKind::kIf;
  last.loc = at;
  last.cond = ir::Binary(BinOp::kNe, ir::Load(flag_name, idx, {ir::IntImm(0, idx, at)}, at),
                         ir::IntImm(0, idx, at), at);
  last.body.push_back(std::move(each));
  if (in_fragment) last.body.push_back(copy_out);
  k.body.push_back(std::move(last));
}

} // namespace

bool ParseSplitKReduce(std::string_view text, SplitKReduce* out) {
  if (text == "fused") {
    *out = SplitKReduce::kFused;
  } else if (text == "kernel") {
    *out = SplitKReduce::kKernel;
  } else {
    return false;
  }
  return true;
}

const char* SplitKReduceName(SplitKReduce r) {
  return r == SplitKReduce::kFused ? "fused" : "kernel";
}

absl::Status SplitK(ir::Program& program, int splits, SplitKReduce where) {
  const std::string& file = program.source_name;
  ir::Kernel& k = program.kernel;
  const auto refuse = [&](ir::Loc loc, absl::string_view why) {
    return ir::ErrorAt(file, loc, absl::StrCat("split-k=", splits, ": ", why));
  };
  if (splits < 2 || splits > kMaxSplits) {
    return refuse(k.loc, absl::StrCat("the number of splits must be in 2..", kMaxSplits));
  }
  for (const ir::Buffer& w : program.workspaces) {
    if (absl::StartsWith(w.name, "kiln_splitk_"))
      return refuse(k.loc, "the program is already split");
  }
  if (!program.next_kernels.empty()) {
    return refuse(program.next_kernels[0].loc, "the program already has several kernels");
  }
  if (k.grid.size() > 2) {
    return refuse(k.loc, "the kernel already uses three grid dimensions (split-K adds one)");
  }

  // The kernel's own buffers; the K loop; the accumulator and the copy out.
  std::set<std::string> local;
  std::map<std::string, ir::Buffer> allocs;
  ir::ForEachStmt(k.body, [&](const Stmt& x) {
    if (x.kind == StmtKind::kAlloc) {
      local.insert(x.buffer.name);
      allocs[x.buffer.name] = x.buffer;
    }
  });
  std::optional<size_t> loop_at;
  for (size_t i = 0; i < k.body.size(); ++i) {
    const Stmt& s = k.body[i];
    if (s.kind != StmtKind::kFor ||
        (s.for_kind != ir::ForKind::kPipelined && s.for_kind != ir::ForKind::kSerial)) {
      continue;
    }
    bool has_gemm = false;
    ir::ForEachStmt(s.body, [&](const Stmt& x) { has_gemm |= x.kind == StmtKind::kGemm; });
    if (!has_gemm) continue;
    if (loop_at) return refuse(s.loc, "the kernel has more than one loop of gemms");
    loop_at = i;
  }
  if (!loop_at) return refuse(k.loc, "the kernel has no K loop (a loop of gemms) at its top level");
  Stmt& loop = k.body[*loop_at];
  std::string acc;
  bool gemm_ok = true;
  ir::ForEachStmt(loop.body, [&](const Stmt& x) {
    if (x.kind != StmtKind::kGemm || x.regions.size() != 3) return;
    const std::string& c = x.regions[2].buffer;
    if (!acc.empty() && acc != c) gemm_ok = false;
    acc = c;
    gemm_ok &= !x.clear_accum;
  });
  if (!gemm_ok) {
    return refuse(loop.loc, "the loop's gemms must all accumulate (clear_accum=False) into one "
                            "fragment");
  }
  auto acc_buf = allocs.find(acc);
  if (acc_buf == allocs.end() || acc_buf->second.scope != ir::Scope::kFragment) {
    return refuse(loop.loc, absl::StrCat("the gemms' accumulator '", acc,
                                         "' is not a fragment of the kernel"));
  }
  if (WritesGlobal(loop, local)) {
    return refuse(loop.loc, "the K loop writes global memory, which every split would repeat");
  }
  if (loop.loop_vars.size() != 1 || loop.extents.size() != 1) {
    return refuse(loop.loc, "the K loop must have one variable");
  }
  const std::optional<int64_t> trips = ir::ConstInt(ir::Simplify(loop.extents[0]));
  if (!trips) {
    return refuse(loop.loc, "the K loop's trip count must be a constant (bind K)");
  }
  if (*trips % splits != 0) {
    return refuse(loop.loc, absl::StrCat("the K loop runs ", *trips, " times, which ", splits,
                                         " does not divide"));
  }
  // Before the loop: only allocations, fills of the kernel's own buffers,
  // layout annotations and use_swizzle; the accumulator must be zero-filled.
  bool zeroed = false;
  for (size_t i = 0; i < *loop_at; ++i) {
    const Stmt& s = k.body[i];
    const bool harmless = s.kind == StmtKind::kAlloc || s.kind == StmtKind::kUseSwizzle ||
                          s.kind == StmtKind::kAnnotateLayout ||
                          (s.kind == StmtKind::kFill && !WritesGlobal(s, local));
    if (!harmless) {
      return refuse(s.loc, "before the K loop the kernel may only allocate, fill its own buffers "
                           "and annotate layouts");
    }
    if (s.kind == StmtKind::kFill && s.regions[0].buffer == acc) {
      const std::optional<double> v =
          s.value.kind == ir::ExprKind::kFloat ? std::optional<double>(s.value.fval)
          : s.value.kind == ir::ExprKind::kInt ? std::optional<double>(s.value.ival)
                                               : std::nullopt;
      zeroed = v && *v == 0.0;
    }
  }
  if (!zeroed) {
    return refuse(loop.loc, absl::StrCat("the accumulator '", acc,
                                         "' must be zero-filled (T.clear) before the K loop"));
  }
  // After the loop: exactly one copy of the whole accumulator into a 2-d
  // global output.
  if (*loop_at + 2 != k.body.size()) {
    return refuse(loop.loc, "the K loop must be followed by exactly one statement, the copy of "
                            "the accumulator into the output");
  }
  Stmt& out = k.body.back();
  if (out.kind != StmtKind::kCopy || out.regions.size() != 2 || out.regions[0].buffer != acc) {
    return refuse(out.loc, absl::StrCat("after the K loop only a T.copy of '", acc,
                                        "' into the output may follow"));
  }
  const ir::Param* output = nullptr;
  for (const ir::Param& p : program.params) {
    if (!p.is_scalar && p.buffer.name == out.regions[1].buffer) output = &p;
  }
  if (output == nullptr || output->buffer.shape.size() != 2 || output->buffer.index_layout) {
    return refuse(out.loc, "the accumulator must be copied into a 2-d tensor parameter (with "
                           "the default layout)");
  }
  if (Mentions({loop}, output->buffer.name)) {
    return refuse(loop.loc, "the K loop reads the output");
  }
  const std::vector<ir::Range>& src = out.regions[0].ranges;
  bool whole = src.size() == acc_buf->second.shape.size();
  for (size_t d = 0; whole && d < src.size(); ++d) {
    whole = ir::ConstInt(ir::Simplify(src[d].min)) == 0 &&
            ir::ProvablyEqual(src[d].extent, acc_buf->second.shape[d]);
  }
  if (!whole) return refuse(out.loc, absl::StrCat("the copy must take the whole of '", acc, "'"));

  ir::FreshNames names(program);
  const std::string split = names.Fresh("kiln_split");
  const std::string partials = names.Fresh("kiln_splitk_partials");
  const ir::Loc at = loop.loc;
  const ir::DType acc_dtype = acc_buf->second.dtype;

  // Kernel 1: block z runs trips / splits iterations of the loop from
  // z * (trips / splits), and copies its partial sums to partials[z].
  const int64_t part = *trips / splits;
  const std::string ko = loop.loop_vars[0];
  const std::string ko_local = names.Fresh(absl::StrCat(ko, "_in_split"));
  ir::RewriteStmts(&loop.body, [&](Expr e) {
    if (e.kind != ir::ExprKind::kVar || e.name != ko) return e;
    return ir::Binary(BinOp::kAdd,
                      ir::Binary(BinOp::kMul, ir::VarRef(split, e.dtype, e.loc),
                                 ir::IntImm(part, e.dtype, e.loc), e.loc),
                      ir::VarRef(ko_local, e.dtype, e.loc), e.loc);
  });
  loop.loop_vars[0] = ko_local;
  loop.extents[0] = ir::IntImm(part, loop.extents[0].dtype, loop.extents[0].loc);
  while (k.grid.size() < 2) {
    k.grid.push_back(ir::IntImm(1, ir::DType::kInt32, k.loc));
    k.block_vars.push_back(names.Fresh("kiln_unused_block"));
  }
  k.grid.push_back(ir::IntImm(splits, ir::DType::kInt32, k.loc));
  k.block_vars.push_back(split);

  // The output tile as the program copied it (the fused reduction writes it).
  const Stmt copy_out = out;
  const ir::Region& tile = copy_out.regions[1];
  const std::optional<int64_t> tile_rows = ir::ConstInt(ir::Simplify(tile.ranges[0].extent));
  const std::optional<int64_t> tile_cols = ir::ConstInt(ir::Simplify(tile.ranges[1].extent));
  const bool fused = where == SplitKReduce::kFused && tile_rows && tile_cols;

  ir::Buffer ws;
  ws.name = partials;
  ws.dtype = acc_dtype;
  ws.scope = ir::Scope::kGlobal;
  ws.shape = {ir::IntImm(splits, ir::DType::kInt32, at), output->buffer.shape[0],
              output->buffer.shape[1]};
  ws.loc = at;
  ir::Region& dst = out.regions[1];
  dst.buffer = partials;
  dst.ranges.insert(dst.ranges.begin(), ir::Range{ir::VarRef(split, ir::DType::kInt32, at),
                                                  ir::IntImm(1, ir::DType::kInt32, at)});
  program.workspaces.push_back(ws);
  if (fused) {
    FuseReduction(program, copy_out, acc_buf->second, output->buffer, *tile_rows, *tile_cols,
                  partials, splits, split, names);
    return absl::OkStatus();
  }

  // Kernel 2: output[i, j] = sum over z of partials[z, i, j], in order.
  ir::Kernel reduce;
  reduce.loc = out.loc;
  const Expr& rows = output->buffer.shape[0];
  const Expr& cols = output->buffer.shape[1];
  const auto ceil_div = [&](const Expr& n, int64_t d) {
    return ir::Simplify(ir::Binary(BinOp::kFloorDiv,
                                   ir::Binary(BinOp::kAdd, n, ir::IntImm(d - 1, n.dtype, at), at),
                                   ir::IntImm(d, n.dtype, at), at));
  };
  reduce.grid = {ceil_div(cols, kReduceCols), ceil_div(rows, kReduceRows)};
  const std::string bx = names.Fresh("kiln_splitk_bx"), by = names.Fresh("kiln_splitk_by");
  const std::string i = names.Fresh("kiln_splitk_i"), j = names.Fresh("kiln_splitk_j");
  reduce.block_vars = {bx, by};
  reduce.threads = {kReduceCols};
  // Indices in int32, as the block and loop variables are.
  const ir::DType idx = ir::DType::kInt32;
  const Expr rows32 = rows.dtype == idx ? rows : ir::Cast(idx, rows, at);
  const Expr cols32 = cols.dtype == idx ? cols : ir::Cast(idx, cols, at);
  const Expr row = ir::Binary(
      BinOp::kAdd,
      ir::Binary(BinOp::kMul, ir::VarRef(by, idx, at), ir::IntImm(kReduceRows, idx, at), at),
      ir::VarRef(i, idx, at), at);
  const Expr col = ir::Binary(
      BinOp::kAdd,
      ir::Binary(BinOp::kMul, ir::VarRef(bx, idx, at), ir::IntImm(kReduceCols, idx, at), at),
      ir::VarRef(j, idx, at), at);
  Stmt store;
  store.kind = StmtKind::kStore;
  store.loc = out.loc;
  store.name = output->buffer.name;
  store.indices = {row, col};
  store.has_value = true;
  store.value = PartialsSum(partials, acc_dtype, output->buffer.dtype, splits, row, col, at);
  Stmt guard;
  guard.kind = StmtKind::kIf;
  guard.loc = out.loc;
  guard.cond = ir::Binary(BinOp::kAnd, ir::Binary(BinOp::kLt, row, rows32, at),
                          ir::Binary(BinOp::kLt, col, cols32, at), at);
  guard.body.push_back(std::move(store));
  Stmt each;
  each.kind = StmtKind::kFor;
  each.for_kind = ir::ForKind::kParallel;
  each.loc = out.loc;
  each.loop_vars = {i, j};
  each.extents = {ir::IntImm(kReduceRows, ir::DType::kInt32, at),
                  ir::IntImm(kReduceCols, ir::DType::kInt32, at)};
  each.body.push_back(std::move(guard));
  reduce.body.push_back(std::move(each));
  program.next_kernels.push_back(std::move(reduce));
  return absl::OkStatus();
}

int AutoSplitParts(int64_t blocks, int64_t trips, int64_t sms) {
  if (blocks <= 0 || trips <= 0 || sms <= 0 || blocks * 4 > sms) return 1;
  for (int parts : {16, 8, 4, 2}) {
    if (blocks * parts <= sms && trips % parts == 0 && trips / parts >= 8) return parts;
  }
  return 1;
}

namespace {

// The trip count of the K loop as SplitK finds it (the one top-level loop of
// gemms), when it is a constant.
std::optional<int64_t> KLoopTrips(const ir::Program& program) {
  std::optional<int64_t> trips;
  bool found = false;
  for (const Stmt& s : program.kernel.body) {
    if (s.kind != StmtKind::kFor || s.extents.size() != 1) continue;
    bool has_gemm = false;
    ir::ForEachStmt(s.body, [&](const Stmt& x) { has_gemm |= x.kind == StmtKind::kGemm; });
    if (!has_gemm) continue;
    if (found) return std::nullopt; // two loops of gemms: SplitK refuses
    found = true;
    trips = ir::ConstInt(ir::Simplify(s.extents[0]));
  }
  return trips;
}

} // namespace

bool SplitKCanTake(const ir::Program& program) {
  const std::optional<int64_t> trips = KLoopTrips(program);
  if (!trips) return false;
  for (int parts : {2, 3, 5, 7}) {
    if (*trips % parts != 0) continue;
    ir::Program trial = program;
    return SplitK(trial, parts).ok();
  }
  return false;
}

int AutoSplitK(ir::Program& program, int64_t sms, SplitKReduce reduce) {
  if (!program.next_kernels.empty()) return 1;
  const std::optional<int64_t> blocks = ir::ConstGridBlocks(program.kernel);
  if (!blocks) return 1;
  const std::optional<int64_t> trips = KLoopTrips(program);
  if (!trips) return 1;
  const int parts = AutoSplitParts(*blocks, *trips, sms);
  if (parts < 2) return 1;
  ir::Program split = program;
  if (!SplitK(split, parts, reduce).ok()) return 1;
  program = std::move(split);
  return parts;
}

} // namespace kiln::passes
