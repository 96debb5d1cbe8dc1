// T.cumsum(src, dst=None, dim=0, reverse=False): the inclusive prefix sum of
// `src` along `dim` into `dst` (src itself when dst is None), from the last
// element down when `reverse`.
//
// It is lowered here to tile IR the rest of the compiler already handles: a
// T.Parallel loop over the other dimensions (one line of the scan each) whose
// body walks the line with a serial loop,
//   dst[first] = src[first];  dst[i] = src[i] + dst[i - 1]   (i - 1: i + 1 reversed),
// on shared memory. A fragment operand goes through a shared buffer of the
// region's shape (copied in, scanned, copied out), as TileLang does: a line's
// elements live in other threads' registers. The line's loop is serial, so a
// scan costs the line's length in steps per line: TileLang's examples scan
// short lines (a chunk of 64).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/args.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/simplify.h"
#include "util/status_macros.h"

namespace kiln::frontend {

absl::StatusOr<Value> Evaluator::LowerCumsum(std::vector<Arg>& args, Loc loc) {
  const std::string what = "T.cumsum";
  RETURN_IF_ERROR(RequireKernel(loc, what));
  const std::vector<std::string_view> names = {"src", "dst", "dim", "reverse", "annotations"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, what, args, names, 1));
  if (IsGiven(m[4]))
    return Error(ArgLoc(args, names, 4, loc), "argument 'annotations' is not supported");
  const Loc sloc = ArgLoc(args, names, 0, loc);
  ASSIGN_OR_RETURN(Operand src, ToOperand(Arg{*m[0], sloc, "", {}}, what));
  Operand dst = src;
  Loc dloc = sloc;
  if (m[1].has_value() && !m[1]->is_none()) {
    dloc = ArgLoc(args, names, 1, loc);
    ASSIGN_OR_RETURN(dst, ToOperand(Arg{*m[1], dloc, "", {}}, what));
  }
  for (const auto& [op, at] : {std::pair<const Operand*, Loc>{&src, sloc}, {&dst, dloc}}) {
    if (op->form == Operand::kCorner) {
      return Error(at, absl::StrCat(what, " operands must be buffers or sliced regions"));
    }
    const ir::Scope scope = buffers_[op->buffer].buffer.scope;
    if (scope != ir::Scope::kShared && scope != ir::Scope::kSharedDyn &&
        scope != ir::Scope::kFragment) {
      return Error(at, absl::StrCat(what, " scans shared or fragment buffers, not '",
                                    buffers_[op->buffer].buffer.name, "'"));
    }
  }
  const int64_t rank = static_cast<int64_t>(src.mins.size());
  ASSIGN_OR_RETURN(const int64_t dim, DimArg(m[2], ArgLoc(args, names, 2, loc), rank, 0, what,
                                             absl::StrCat("a ", rank, "-d operand")));
  bool reverse = false;
  if (m[3].has_value()) {
    if (!m[3]->is_int() || (m[3]->i != 0 && m[3]->i != 1)) {
      return Error(ArgLoc(args, names, 3, loc), absl::StrCat(what, " reverse must be a bool"));
    }
    reverse = m[3]->i != 0;
  }
  ASSIGN_OR_RETURN(ir::Region rs, OperandRegion(src, {}, what));
  ASSIGN_OR_RETURN(ir::Region rd, OperandRegion(dst, {}, what));
  std::vector<int64_t> extents;
  for (size_t d = 0; d < rs.ranges.size(); ++d) {
    const std::optional<int64_t> es = ir::ConstInt(ir::Simplify(rs.ranges[d].extent));
    const std::optional<int64_t> ed =
        d < rd.ranges.size() ? ir::ConstInt(ir::Simplify(rd.ranges[d].extent)) : std::nullopt;
    if (!es || !ed || *es != *ed || rs.ranges.size() != rd.ranges.size()) {
      return Error(loc, absl::StrCat(what, ": source and destination need one constant shape"));
    }
    extents.push_back(*es);
  }

  // Fragments are scanned in a shared buffer of the region's shape.
  const ir::DType dtype = buffers_[dst.buffer].buffer.dtype;
  ir::Region work = rd;
  const bool staged = buffers_[src.buffer].buffer.scope == ir::Scope::kFragment ||
                      buffers_[dst.buffer].buffer.scope == ir::Scope::kFragment;
  if (staged) {
    ir::Stmt alloc;
    alloc.kind = ir::StmtKind::kAlloc;
    alloc.loc = loc;
    alloc.buffer.name = UniqueName("cumsum_shared");
    alloc.buffer.dtype = dtype;
    alloc.buffer.scope = ir::Scope::kShared;
    alloc.buffer.loc = loc;
    work.buffer = alloc.buffer.name;
    work.ranges.clear();
    for (int64_t e : extents) {
      alloc.buffer.shape.push_back(ir::IntImm(e, ir::DType::kInt32, loc));
      work.ranges.push_back(
          ir::Range{ir::IntImm(0, ir::DType::kInt32, loc), ir::IntImm(e, ir::DType::kInt32, loc)});
    }
    buffers_.push_back(BufferInfo{alloc.buffer, false});
    Emit(std::move(alloc));
    ir::Stmt in;
    in.kind = ir::StmtKind::kCopy;
    in.loc = loc;
    in.regions = {rs, work};
    Emit(std::move(in));
    rs = work;
  }
  const ir::DType src_dtype = staged ? dtype : buffers_[src.buffer].buffer.dtype;

  // One line per iteration of the parallel loop: the other dimensions (a
  // loop of one iteration for a 1-d operand).
  ir::Stmt lines;
  lines.kind = ir::StmtKind::kFor;
  lines.loc = loc;
  lines.for_kind = ir::ForKind::kParallel;
  std::vector<ir::Expr> at(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    if (d == dim) continue;
    std::string v = UniqueName("l");
    at[static_cast<size_t>(d)] = ir::VarRef(v, ir::DType::kInt32, loc);
    lines.loop_vars.push_back(std::move(v));
    lines.extents.push_back(ir::IntImm(extents[static_cast<size_t>(d)], ir::DType::kInt32, loc));
  }
  if (lines.loop_vars.empty()) {
    lines.loop_vars.push_back(UniqueName("l"));
    lines.extents.push_back(ir::IntImm(1, ir::DType::kInt32, loc));
  }
  const auto element = [&](const ir::Region& r, const ir::Expr& i) {
    std::vector<ir::Expr> idx;
    for (int64_t d = 0; d < rank; ++d) {
      const ir::Expr& local = d == dim ? i : at[static_cast<size_t>(d)];
      idx.push_back(ir::Simplify(
          ir::Binary(ir::BinOp::kAdd, r.ranges[static_cast<size_t>(d)].min, local, loc)));
    }
    return idx;
  };
  const auto load = [&](const ir::Region& r, ir::DType t, const ir::Expr& i) {
    ir::Expr x = ir::Load(r.buffer, t, element(r, i), loc);
    return t == dtype ? x : ir::Cast(dtype, x, loc);
  };
  const auto store = [&](const ir::Expr& i, ir::Expr value) {
    ir::Stmt s;
    s.kind = ir::StmtKind::kStore;
    s.loc = loc;
    s.name = work.buffer;
    s.indices = element(work, i);
    s.has_value = true;
    s.value = std::move(value);
    return s;
  };
  const int64_t n = extents[static_cast<size_t>(dim)];
  const ir::Expr first = ir::IntImm(reverse ? n - 1 : 0, ir::DType::kInt32, loc);
  // The first element (already in place when the scan runs in a staged copy).
  if (!staged) lines.body.push_back(store(first, load(rs, src_dtype, first)));
  if (n > 1) {
    ir::Stmt walk;
    walk.kind = ir::StmtKind::kFor;
    walk.loc = loc;
    walk.for_kind = ir::ForKind::kSerial;
    const std::string k = UniqueName("k");
    walk.loop_vars = {k};
    walk.extents = {ir::IntImm(n - 1, ir::DType::kInt32, loc)};
    const ir::Expr kv = ir::VarRef(k, ir::DType::kInt32, loc);
    // i = k + 1 and its predecessor k; reversed, i = n - 2 - k and n - 1 - k.
    const ir::Expr i =
        reverse ? ir::Binary(ir::BinOp::kSub, ir::IntImm(n - 2, ir::DType::kInt32, loc), kv, loc)
                : ir::Binary(ir::BinOp::kAdd, kv, ir::IntImm(1, ir::DType::kInt32, loc), loc);
    const ir::Expr prev =
        reverse ? ir::Binary(ir::BinOp::kSub, ir::IntImm(n - 1, ir::DType::kInt32, loc), kv, loc)
                : kv;
    walk.body.push_back(store(
        i, ir::Binary(ir::BinOp::kAdd, load(rs, src_dtype, i), load(work, dtype, prev), loc)));
    lines.body.push_back(std::move(walk));
  }
  Emit(std::move(lines));
  if (staged) {
    ir::Stmt out;
    out.kind = ir::StmtKind::kCopy;
    out.loc = loc;
    out.regions = {work, rd};
    Emit(std::move(out));
  }
  return Value::None();
}

} // namespace kiln::frontend
