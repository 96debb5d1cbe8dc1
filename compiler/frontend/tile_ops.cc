// Tile-op operands and statements: T.copy, T.gemm, T.fill/T.clear,
// T.reduce_*, T.atomic_*, T.annotate_layout, T.use_swizzle.
//
// An operand is a whole buffer, a region (`A[i * 64:(i + 1) * 64, :]`; each
// scalar index is a range of extent 1) or a start corner (`A[i * 64, k]`)
// whose extents come from the other operand, right-aligned on the trailing
// dimensions with leading extra dimensions of extent 1, as TileLang does.
// Extents are simplified, so `(bx + 1) * 64 - bx * 64` becomes 64.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/frontend/args.h"
#include "compiler/frontend/arith.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/frontend/names.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/int_range.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/simplify.h"
#include "util/status_macros.h"

namespace kiln::frontend {
namespace {

bool IsOne(const ir::Expr& e) {
  std::optional<int64_t> v = ir::ConstInt(e);
  return v && *v == 1;
}

std::string ExtentsText(const std::vector<ir::Expr>& extents) {
  std::vector<std::string> parts;
  for (const ir::Expr& e : extents) parts.push_back(ir::PrintExpr(e));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

// Extents agree when their non-1 entries match pairwise; unknown (symbolic)
// pairs are accepted. Returns false only for a provable mismatch.
bool ExtentsCompatible(const std::vector<ir::Expr>& a, const std::vector<ir::Expr>& b) {
  std::vector<const ir::Expr*> x, y;
  for (const ir::Expr& e : a) {
    if (!IsOne(e)) x.push_back(&e);
  }
  for (const ir::Expr& e : b) {
    if (!IsOne(e)) y.push_back(&e);
  }
  if (x.size() != y.size()) return false;
  for (size_t k = 0; k < x.size(); ++k) {
    std::optional<int64_t> cx = ir::ConstInt(*x[k]), cy = ir::ConstInt(*y[k]);
    if (cx && cy && *cx != *cy) return false;
  }
  return true;
}

} // namespace

absl::StatusOr<std::vector<ir::Expr>> Evaluator::ScalarIndices(const Value& access, Loc loc) {
  std::vector<ir::Expr> out;
  for (const Value& v : access.elts()) {
    if (v.kind == ValueKind::kSlice) {
      return Error(loc, "a slice is not a single element here; use T.copy or T.fill for regions");
    }
    ASSIGN_OR_RETURN(ir::Expr e, ToExpr(Ctx(loc), v));
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<ir::Expr> Evaluator::LoadOf(const Value& raw, Loc loc) {
  ASSIGN_OR_RETURN(Value access, ResolveView(raw, loc));
  const ir::Buffer& b = buffers_[access.i].buffer;
  ASSIGN_OR_RETURN(std::vector<ir::Expr> indices, ScalarIndices(access, loc));
  return ir::Load(b.name, b.dtype, std::move(indices), loc);
}

absl::StatusOr<Evaluator::Operand> Evaluator::ToOperand(const Arg& arg, std::string_view op,
                                                        bool keep_views) {
  Operand out;
  out.loc = arg.loc;
  Value v = arg.value;
  if ((v.kind == ValueKind::kBuffer || v.kind == ValueKind::kAccess) &&
      buffers_[v.i].view_of >= 0 && !(keep_views && IsReshapedGlobalView(v))) {
    // A view of the same shape is its buffer; regions of a reshaped view
    // are not rectangles of the buffer in general.
    const BufferInfo& view = buffers_[v.i];
    const ir::Buffer& base = buffers_[view.view_of].buffer;
    bool same = view.buffer.shape.size() == base.shape.size();
    for (size_t d = 0; same && d < base.shape.size(); ++d) {
      same = ir::PrintExpr(view.buffer.shape[d]) == ir::PrintExpr(base.shape[d]);
    }
    if (!same) {
      return Error(arg.loc, absl::StrCat(std::string(op), " on '", view.buffer.name,
                                         "', a view of '", base.name,
                                         "' with another shape (T.reshape / T.view), is not "
                                         "supported yet; index its elements in a T.Parallel "
                                         "loop instead"));
    }
    v.i = view.view_of;
  }
  if (v.kind == ValueKind::kBuffer) {
    const ir::Buffer& b = buffers_[v.i].buffer;
    out.buffer = static_cast<int>(v.i);
    out.form = Operand::kWhole;
    for (const ir::Expr& d : b.shape) {
      out.mins.push_back(ir::IntImm(0, ir::DType::kInt32, arg.loc));
      out.extents.push_back(d);
    }
    return out;
  }
  if (v.kind != ValueKind::kAccess) {
    return Error(arg.loc, absl::StrCat(std::string(op),
                                       " expects a buffer or a buffer region, got ", TypeName(v)));
  }
  const ir::Buffer& b = buffers_[v.i].buffer;
  out.buffer = static_cast<int>(v.i);
  bool has_slice = false;
  for (const Value& x : v.elts()) has_slice |= x.kind == ValueKind::kSlice;
  out.form = has_slice ? Operand::kRegion : Operand::kCorner;
  for (size_t d = 0; d < v.elts().size(); ++d) {
    const Value& x = v.elts()[d];
    if (x.kind != ValueKind::kSlice) {
      ASSIGN_OR_RETURN(ir::Expr e, ToExpr(Ctx(arg.loc), x));
      out.mins.push_back(std::move(e));
      if (has_slice) out.extents.push_back(ir::IntImm(1, ir::DType::kInt32, arg.loc));
      continue;
    }
    const Value& step = x.elts()[2];
    if (!step.is_none() && !(step.kind == ValueKind::kInt && step.i == 1)) {
      return Error(arg.loc, "slices with a step are not supported in buffer regions");
    }
    auto bound = [&](const Value& p, bool is_lower) -> absl::StatusOr<ir::Expr> {
      if (p.is_none()) {
        return is_lower ? ir::IntImm(0, ir::DType::kInt32, arg.loc) : b.shape[d];
      }
      if (p.kind == ValueKind::kInt && p.i < 0) {
        // Python's negative slice bounds count from the end.
        ASSIGN_OR_RETURN(Value r, ApplyBinary(Ctx(arg.loc), "+", Value::Expr(b.shape[d]), p));
        return *r.expr;
      }
      if (!p.is_int() && !(p.is_expr() && ir::IsInteger(p.expr->dtype))) {
        return Error(arg.loc, absl::StrCat("slice bounds must be integers, got ", TypeName(p)));
      }
      return ToExpr(Ctx(arg.loc), p);
    };
    ASSIGN_OR_RETURN(ir::Expr lo, bound(x.elts()[0], true));
    ASSIGN_OR_RETURN(ir::Expr hi, bound(x.elts()[1], false));
    // A bound beyond int32 is an int64 literal (ToExpr): subtract in the
    // wider type so the extent folds to a constant that is checked below.
    const ir::DType t = PromoteDTypes(lo.dtype, hi.dtype);
    ir::Expr lo_copy = CastExpr(lo, t, arg.loc);
    ir::Expr extent = ir::Simplify(ir::Binary(ir::BinOp::kSub, CastExpr(std::move(hi), t, arg.loc),
                                              std::move(lo_copy), arg.loc));
    std::optional<int64_t> c = ir::ConstInt(extent);
    if (c && *c <= 0) {
      return Error(arg.loc, absl::StrCat("empty slice (extent ", *c, ") in dimension ", d, " of '",
                                         b.name, "'"));
    }
    if (c) {
      // Tile ops are lowered to int32 loops over the region, spread over
      // the threads (ir::kMaxTileSpace).
      RETURN_IF_ERROR(
          ir::CheckIntRange(*c, 1, ir::kMaxTileSpace, options_.file_name, arg.loc,
                            absl::StrCat("slice extent in dimension ", d, " of '", b.name, "'"),
                            "tile ops loop over regions with int32 indices"));
    }
    if (lo.kind != ir::ExprKind::kInt) lo = ir::Simplify(lo);
    out.mins.push_back(std::move(lo));
    out.extents.push_back(std::move(extent));
  }
  return out;
}

absl::StatusOr<ir::Region> Evaluator::OperandRegion(const Operand& op,
                                                    const std::vector<ir::Expr>& other,
                                                    std::string_view what) {
  ir::Region r;
  r.buffer = buffers_[op.buffer].buffer.name;
  r.loc = op.loc;
  std::vector<ir::Expr> extents = op.extents;
  if (op.form == Operand::kCorner) {
    size_t rank = op.mins.size();
    if (other.size() <= rank) {
      for (size_t k = 0; k + other.size() < rank; ++k) {
        extents.push_back(ir::IntImm(1, ir::DType::kInt32, op.loc));
      }
      extents.insert(extents.end(), other.begin(), other.end());
    } else {
      size_t drop = other.size() - rank;
      for (size_t k = 0; k < drop; ++k) {
        if (!IsOne(other[k])) {
          return Error(op.loc,
                       absl::StrCat(std::string(what), ": the ", rank, "-d start corner of '",
                                    r.buffer, "' cannot take the extents ", ExtentsText(other)));
        }
      }
      extents.assign(other.begin() + drop, other.end());
    }
  }
  for (size_t k = 0; k < op.mins.size(); ++k) {
    r.ranges.push_back(ir::Range{op.mins[k], std::move(extents[k])});
  }
  return r;
}

absl::StatusOr<Value> Evaluator::CallTileOp(const std::string& fn, std::vector<Arg>& args,
                                            Loc loc) {
  RETURN_IF_ERROR(RequireKernel(loc, absl::StrCat("T.", fn)));
  if (fn == "copy") return LowerCopy(args, loc);
  if (fn == "gemm") return LowerGemm(args, loc);
  if (fn == "wgmma_gemm") return LowerGemm(args, loc, /*explicit_wgmma=*/true);
  if (fn == "wait_wgmma") return WaitWgmma(args, loc);
  if (fn == "fill" || fn == "clear") return LowerFill(fn, args, loc);
  if (fn.rfind("reduce_", 0) == 0) return LowerReduce(fn, args, loc);
  if (fn.rfind("atomic_", 0) == 0) return LowerAtomic(fn, args, loc);
  if (fn == "annotate_layout") return LowerAnnotateLayout(args, loc);
  return LowerUseSwizzle(args, loc);
}

absl::StatusOr<Value> Evaluator::LowerCopy(std::vector<Arg>& args, Loc loc) {
  std::vector<std::string_view> names = {"src",
                                         "dst",
                                         "coalesced_width",
                                         "disable_tma",
                                         "eviction_policy",
                                         "prefer_instruction",
                                         "annotations",
                                         "loop_layout"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, "T.copy", args, names, 2, 2));
  if (IsGiven(m[6])) {
    return Error(ArgLoc(args, names, 6, loc), "argument 'annotations' is not supported");
  }
  if (IsGiven(m[7])) {
    return Error(ArgLoc(args, names, 7, loc), "argument 'loop_layout' is not supported");
  }
  // A region of a reshaped global view (T.Tensor over x.data) is rewritten
  // by CopyThroughView.
  const bool through_view = IsReshapedGlobalView(*m[0]) || IsReshapedGlobalView(*m[1]);
  ASSIGN_OR_RETURN(Operand src, ToOperand(Arg{*m[0], ArgLoc(args, names, 0, loc), "", {}}, "T.copy",
                                          through_view));
  ASSIGN_OR_RETURN(Operand dst, ToOperand(Arg{*m[1], ArgLoc(args, names, 1, loc), "", {}}, "T.copy",
                                          through_view));
  if (src.form == Operand::kCorner && dst.form == Operand::kCorner) {
    // Both single elements: a plain store, as TileLang lowers it.
    ASSIGN_OR_RETURN(Value load, Materialize(*m[0], src.loc));
    Value access = *m[1];
    RETURN_IF_ERROR(StoreTo(access, load, loc));
    return Value::None();
  }
  ir::Stmt st;
  st.kind = ir::StmtKind::kCopy;
  st.loc = loc;
  ASSIGN_OR_RETURN(ir::Region rs, OperandRegion(src, dst.extents, "T.copy"));
  ASSIGN_OR_RETURN(ir::Region rd, OperandRegion(dst, src.extents, "T.copy"));
  std::vector<ir::Expr> es, ed;
  for (const ir::Range& r : rs.ranges) es.push_back(r.extent);
  for (const ir::Range& r : rd.ranges) ed.push_back(r.extent);
  if (!ExtentsCompatible(es, ed)) {
    return Error(loc, absl::StrCat("T.copy shape mismatch: source '", rs.buffer, "' region ",
                                   ExtentsText(es), " vs destination '", rd.buffer, "' region ",
                                   ExtentsText(ed)));
  }
  if (through_view) return CopyThroughView(src, dst, rs, rd, loc);
  st.regions.push_back(std::move(rs));
  st.regions.push_back(std::move(rd));
  Emit(std::move(st));
  return Value::None();
}

// T.wgmma_gemm is TileLang's Hopper gemm that issues its wgmma and does not
// wait: the accumulator may be read only after a later T.wait_wgmma(n) has
// left at most n of them in flight. It takes T.gemm's first seven
// arguments and annotations (no k_pack, wg_wait or mbar), and refuses a
// target without wgmma. It is T.gemm with wg_wait = -1 (ir::kGemmNoWait):
// where the gemm lowers to wgmma its group stays in flight; elsewhere (the
// CPU target, mma.sync, a gemm inside Kiln's own pipelines) it completes
// at once, and every value a correct program may read is the same.
absl::StatusOr<Value> Evaluator::LowerGemm(std::vector<Arg>& args, Loc loc, bool explicit_wgmma) {
  std::vector<std::string_view> names = {"A",           "B",      "C",           "transpose_A",
                                         "transpose_B", "policy", "clear_accum", "k_pack",
                                         "wg_wait",     "mbar",   "annotations"};
  constexpr size_t kAnnotations = 10;
  if (explicit_wgmma) {
    // The parameters of T.wgmma_gemm, with k_pack, wg_wait and mbar left
    // out as absent (TileLang's signature has none of them).
    const std::vector<std::string_view> own = {
        "A", "B", "C", "transpose_A", "transpose_B", "policy", "clear_accum", "annotations"};
    ASSIGN_OR_RETURN(auto w, MatchArgs(options_.file_name, loc, "T.wgmma_gemm", args, own, 3));
    if (IsGiven(w[7])) {
      return Error(ArgLoc(args, own, 7, loc),
                   "T.wgmma_gemm argument 'annotations' is not supported");
    }
    const DeviceModel& d = options_.device;
    if (d.known && d.cc_major != 9) {
      return Error(loc, absl::StrCat("T.wgmma_gemm needs a Hopper target (cuda:sm_90 or "
                                     "cuda:sm_90a), not ",
                                     d.target, "; T.gemm picks the target's instruction"));
    }
    // What is left (at most seven arguments, by position or by T.gemm's
    // names) reads as T.gemm's arguments below.
  }
  int32_t wg_wait = explicit_wgmma ? ir::kGemmNoWait : 0;
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc,
                                     explicit_wgmma ? "T.wgmma_gemm" : "T.gemm", args, names, 3));
  if (IsGiven(m[9])) {
    return Error(ArgLoc(args, names, 9, loc), "argument 'mbar' is not supported");
  }
  if (IsGiven(m[kAnnotations])) {
    return Error(ArgLoc(args, names, kAnnotations, loc), "argument 'annotations' is not supported");
  }
  ir::Stmt st;
  st.kind = ir::StmtKind::kGemm;
  st.loc = loc;
  int c_buffer = -1; // the last operand's: C
  for (size_t k = 0; k < 3; ++k) {
    ASSIGN_OR_RETURN(Operand op,
                     ToOperand(Arg{*m[k], ArgLoc(args, names, k, loc), "", {}}, "T.gemm"));
    if (op.form == Operand::kCorner) {
      return Error(op.loc,
                   "T.gemm operands must be buffers or sliced regions, not single elements");
    }
    ASSIGN_OR_RETURN(ir::Region r, OperandRegion(op, {}, "T.gemm"));
    st.regions.push_back(std::move(r));
    c_buffer = op.buffer;
  }
  auto flag = [&](size_t k, bool* out) -> absl::Status {
    if (!m[k].has_value()) return absl::OkStatus();
    const Value& v = *m[k];
    if (!v.is_int() || (v.i != 0 && v.i != 1)) {
      return Error(ArgLoc(args, names, k, loc),
                   absl::StrCat("T.gemm ", std::string(*(names.begin() + k)),
                                " must be a compile-time bool"));
    }
    *out = v.i != 0;
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(flag(3, &st.transpose_a));
  RETURN_IF_ERROR(flag(4, &st.transpose_b));
  if (m[6].has_value() && m[6]->is_expr()) {
    // A clear_accum known only at run time (clear_accum=(k == 0) in an
    // unrolled loop): C = A @ B where it holds, C += A @ B elsewhere, that
    // is a zero fill of C under the condition, then an accumulating gemm.
    ASSIGN_OR_RETURN(ir::Expr cond, ToCondition(Ctx(ArgLoc(args, names, 6, loc)), *m[6]));
    const ir::Region& c = st.regions[2];
    const ir::DType c_dtype = buffers_[c_buffer].buffer.dtype;
    ir::Stmt fill;
    fill.kind = ir::StmtKind::kFill;
    fill.loc = loc;
    fill.regions.push_back(c);
    ASSIGN_OR_RETURN(fill.value, ToExprOf(Ctx(loc), Value::Int(0), c_dtype));
    fill.has_value = true;
    ir::Stmt guard;
    guard.kind = ir::StmtKind::kIf;
    guard.loc = loc;
    guard.cond = std::move(cond);
    guard.body.push_back(std::move(fill));
    Emit(std::move(guard));
  } else {
    RETURN_IF_ERROR(flag(6, &st.clear_accum));
  }
  if (m[5].has_value()) {
    if (m[5]->kind != ValueKind::kPolicy) {
      return Error(ArgLoc(args, names, 5, loc),
                   absl::StrCat("T.gemm policy must be T.GemmWarpPolicy.Square, .FullRow or "
                                ".FullCol, got ",
                                TypeName(*m[5])));
    }
    st.policy = static_cast<ir::GemmPolicy>(m[5]->i);
  }
  if (m[7].has_value()) {
    if (m[7]->kind != ValueKind::kInt || (m[7]->i != 1 && m[7]->i != 2)) {
      return Error(ArgLoc(args, names, 7, loc), "T.gemm k_pack must be 1 or 2");
    }
    st.k_pack = static_cast<int32_t>(m[7]->i);
  }
  if (m[8].has_value()) {
    if (m[8]->kind != ValueKind::kInt || m[8]->i < ir::kGemmNoWait ||
        m[8]->i > ir::kMaxWgmmaInFlight) {
      return Error(ArgLoc(args, names, 8, loc),
                   absl::StrCat("T.gemm wg_wait must be a compile-time integer: -1 (do not wait) "
                                "or the wgmma groups left in flight, 0..",
                                ir::kMaxWgmmaInFlight));
    }
    wg_wait = static_cast<int32_t>(m[8]->i);
  }
  st.wg_wait = wg_wait;
  Emit(std::move(st));
  return Value::None();
}

absl::StatusOr<Value> Evaluator::WaitWgmma(std::vector<Arg>& args, Loc loc) {
  const std::vector<std::string_view> names = {"id"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, "T.wait_wgmma", args, names, 1));
  if (m[0]->kind != ValueKind::kInt || m[0]->i < 0 || m[0]->i > ir::kMaxWgmmaInFlight) {
    return Error(ArgLoc(args, names, 0, loc),
                 absl::StrCat("T.wait_wgmma expects a compile-time integer 0..",
                              ir::kMaxWgmmaInFlight,
                              " (the number of wgmma groups left in flight), got ",
                              m[0]->kind == ValueKind::kInt ? absl::StrCat(m[0]->i)
                                                            : absl::StrCat(TypeName(*m[0]))));
  }
  ir::Stmt st;
  st.kind = ir::StmtKind::kWaitWgmma;
  st.loc = loc;
  st.has_value = true;
  st.value = ir::IntImm(m[0]->i, ir::DType::kInt32, loc);
  Emit(std::move(st));
  return Value::None();
}

absl::StatusOr<Value> Evaluator::LowerFill(const std::string& fn, std::vector<Arg>& args, Loc loc) {
  bool clear = fn == "clear";
  std::vector<std::string_view> names = {"buffer", "value", "annotations"};
  if (clear) names = {"buffer", "annotations"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, absl::StrCat("T.", fn), args, names,
                                     clear ? 1 : 2));
  if (IsGiven(m[clear ? 1 : 2])) {
    return Error(loc, "argument 'annotations' is not supported");
  }
  Value target = *m[0];
  // A T.alloc_var name reads as its value; T.clear(x) / T.fill(x, v) set it.
  if (target.is_expr() && target.expr->kind == ir::ExprKind::kLoad) {
    for (size_t id = 0; id < buffers_.size(); ++id) {
      if (buffers_[id].buffer.scope == ir::Scope::kVar &&
          buffers_[id].buffer.name == target.expr->name) {
        target = Value::Buffer(static_cast<int>(id));
        break;
      }
    }
  }
  ASSIGN_OR_RETURN(Operand op, ToOperand(Arg{target, ArgLoc(args, names, 0, loc), "", {}},
                                         absl::StrCat("T.", fn)));
  std::vector<ir::Expr> ones;
  if (op.form == Operand::kCorner) {
    for (size_t k = 0; k < op.mins.size(); ++k) {
      ones.push_back(ir::IntImm(1, ir::DType::kInt32, op.loc));
    }
  }
  ir::Stmt st;
  st.kind = ir::StmtKind::kFill;
  st.loc = loc;
  ASSIGN_OR_RETURN(ir::Region r, OperandRegion(op, ones, absl::StrCat("T.", fn)));
  st.regions.push_back(std::move(r));
  const ir::Buffer& b = buffers_[op.buffer].buffer;
  Value value = Value::Int(0);
  Loc vloc = loc;
  if (!clear) {
    vloc = ArgLoc(args, names, 1, loc);
    ASSIGN_OR_RETURN(value, Materialize(*m[1], vloc));
    if (!value.is_number() && !value.is_expr()) {
      return Error(
          vloc, absl::StrCat("T.fill value must be a number or expression, got ", TypeName(value)));
    }
  }
  ASSIGN_OR_RETURN(st.value, ToExprOf(Ctx(vloc), value, b.dtype));
  st.has_value = true;
  Emit(std::move(st));
  return Value::None();
}

absl::StatusOr<Value> Evaluator::LowerReduce(const std::string& fn, std::vector<Arg>& args,
                                             Loc loc) {
  ir::ReduceKind kind;
  if (fn == "reduce_sum") {
    kind = ir::ReduceKind::kSum;
  } else if (fn == "reduce_max") {
    kind = ir::ReduceKind::kMax;
  } else if (fn == "reduce_min") {
    kind = ir::ReduceKind::kMin;
  } else if (fn == "reduce_abssum") {
    kind = ir::ReduceKind::kAbsSum;
  } else {
    kind = ir::ReduceKind::kAbsMax;
  }
  bool has_clear = kind != ir::ReduceKind::kAbsSum;
  std::vector<std::string_view> names = {"buffer", "out",           "dim",        "clear",
                                         "batch",  "nan_propagate", "annotations"};
  if (!has_clear) names = {"buffer", "out", "dim", "batch", "annotations"};
  std::string what = absl::StrCat("T.", fn);
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, what, args, names, 2));
  size_t batch_idx = has_clear ? 4 : 3;
  if (m[batch_idx].has_value() &&
      !(m[batch_idx]->kind == ValueKind::kInt && m[batch_idx]->i == 1)) {
    return Error(ArgLoc(args, names, batch_idx, loc), "batch other than 1 is not supported");
  }
  if (has_clear && m[5].has_value() && !(m[5]->is_int() && m[5]->i == 0)) {
    return Error(ArgLoc(args, names, 5, loc), "nan_propagate is not supported");
  }
  if (IsGiven(m[names.size() - 1])) {
    return Error(loc, "argument 'annotations' is not supported");
  }
  ASSIGN_OR_RETURN(Operand src, ToOperand(Arg{*m[0], ArgLoc(args, names, 0, loc), "", {}}, what));
  ASSIGN_OR_RETURN(Operand dst, ToOperand(Arg{*m[1], ArgLoc(args, names, 1, loc), "", {}}, what));
  if (src.form == Operand::kCorner || dst.form == Operand::kCorner) {
    return Error(src.form == Operand::kCorner ? src.loc : dst.loc,
                 absl::StrCat(what, " operands must be buffers or sliced regions"));
  }
  ir::Stmt st;
  st.kind = ir::StmtKind::kReduce;
  st.loc = loc;
  st.reduce_kind = kind;
  const int64_t rank = static_cast<int64_t>(src.mins.size());
  ASSIGN_OR_RETURN(const int64_t dim, DimArg(m[2], ArgLoc(args, names, 2, loc), rank, -1, what,
                                             absl::StrCat("the ", rank, "-d source '",
                                                          buffers_[src.buffer].buffer.name, "'")));
  st.dim = static_cast<int32_t>(dim);
  if (has_clear && m[3].has_value()) {
    if (!m[3]->is_int() || (m[3]->i != 0 && m[3]->i != 1)) {
      return Error(ArgLoc(args, names, 3, loc), absl::StrCat(what, " clear must be a bool"));
    }
    st.clear = m[3]->i != 0;
  }
  ASSIGN_OR_RETURN(ir::Region rs, OperandRegion(src, {}, what));
  ASSIGN_OR_RETURN(ir::Region rd, OperandRegion(dst, {}, what));
  st.regions.push_back(std::move(rs));
  st.regions.push_back(std::move(rd));
  Emit(std::move(st));
  return Value::None();
}

absl::StatusOr<int64_t> Evaluator::DimArg(const std::optional<Value>& v, Loc at, int64_t rank,
                                          int64_t fallback, const std::string& what,
                                          const std::string& of) const {
  int64_t dim = fallback;
  if (v.has_value()) {
    if (v->kind != ValueKind::kInt) {
      return Error(at, absl::StrCat(what, " dim must be a compile-time int"));
    }
    dim = v->i;
  }
  if (dim < -rank || dim >= rank) {
    return Error(at, absl::StrCat(what, ": dim ", dim, " is out of range for ", of));
  }
  return dim < 0 ? dim + rank : dim;
}

absl::StatusOr<Value> Evaluator::LowerAtomic(const std::string& fn, std::vector<Arg>& args,
                                             Loc loc) {
  std::string what = absl::StrCat("T.", fn);
  if (fn == "atomic_addx2" || fn == "atomic_addx4") {
    // T.atomic_addx4(dst[..., j], src[..., k]): the 4 (2) consecutive
    // elements of src from k added to those of dst from j, each atomically
    // (TileLang's vector atomics take an element of each and read on along
    // the last dimension): an atomic add of two equal one-row regions.
    const std::vector<std::string_view> vnames = {"dst", "value"};
    ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, what, args, vnames, 2));
    const int64_t lanes = fn == "atomic_addx4" ? 4 : 2;
    const Loc dloc = ArgLoc(args, vnames, 0, loc), vloc = ArgLoc(args, vnames, 1, loc);
    ir::Stmt st;
    st.kind = ir::StmtKind::kAtomic;
    st.loc = loc;
    st.atomic_op = ir::AtomicOp::kAdd;
    ASSIGN_OR_RETURN(Operand dst, ToOperand(Arg{*m[0], dloc, "", {}}, what));
    ASSIGN_OR_RETURN(Operand src, ToOperand(Arg{*m[1], vloc, "", {}}, what));
    for (const auto& [op, oloc] : {std::pair<const Operand*, Loc>{&dst, dloc}, {&src, vloc}}) {
      if (op->form != Operand::kCorner) {
        return Error(oloc, absl::StrCat(what,
                                        " takes one element of each buffer (dst[i, j], "
                                        "src[k]), the first of ",
                                        lanes, " consecutive ones"));
      }
    }
    const auto row = [&](const Operand& op, Loc at) {
      std::vector<ir::Expr> extents(op.mins.size(), ir::IntImm(1, ir::DType::kInt32, at));
      if (!extents.empty()) extents.back() = ir::IntImm(lanes, ir::DType::kInt32, at);
      return extents;
    };
    ASSIGN_OR_RETURN(ir::Region rd, OperandRegion(dst, row(dst, dloc), what));
    ASSIGN_OR_RETURN(ir::Region rs, OperandRegion(src, row(src, vloc), what));
    st.regions.push_back(std::move(rd));
    st.regions.push_back(std::move(rs));
    Emit(std::move(st));
    return Value::None();
  }
  bool is_add = fn == "atomic_add";
  std::vector<std::string_view> names = {"dst",         "value",       "memory_order",
                                         "return_prev", "annotations", "use_tma"};
  if (!is_add) names = {"dst", "value", "memory_order", "return_prev", "annotations"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, what, args, names, 2));
  if (m[2].has_value() && !m[2]->is_none() &&
      !(m[2]->kind == ValueKind::kString && m[2]->s == "relaxed")) {
    return Error(ArgLoc(args, names, 2, loc),
                 "memory_order other than \"relaxed\" is not supported");
  }
  if (m[3].has_value() && !(m[3]->is_int() && m[3]->i == 0)) {
    return Error(ArgLoc(args, names, 3, loc), "return_prev is not supported");
  }
  if (IsGiven(m[4])) {
    return Error(loc, "argument 'annotations' is not supported");
  }
  ir::Stmt st;
  st.kind = ir::StmtKind::kAtomic;
  st.loc = loc;
  st.atomic_op = fn == "atomic_add"   ? ir::AtomicOp::kAdd
                 : fn == "atomic_max" ? ir::AtomicOp::kMax
                                      : ir::AtomicOp::kMin;
  Loc dloc = ArgLoc(args, names, 0, loc), vloc = ArgLoc(args, names, 1, loc);
  ASSIGN_OR_RETURN(Operand dst, ToOperand(Arg{*m[0], dloc, "", {}}, what));
  const Value& value = *m[1];
  bool tile_source = value.kind == ValueKind::kBuffer;
  if (value.kind == ValueKind::kAccess) {
    for (const Value& x : value.elts()) tile_source |= x.kind == ValueKind::kSlice;
    // An element source next to a region destination is a tile too.
    tile_source |= dst.form != Operand::kCorner;
  }
  if (!tile_source) {
    std::vector<ir::Expr> ones(dst.mins.size(), ir::IntImm(1, ir::DType::kInt32, dloc));
    ASSIGN_OR_RETURN(ir::Region r, OperandRegion(dst, ones, what));
    st.regions.push_back(std::move(r));
    ASSIGN_OR_RETURN(Value v, Materialize(value, vloc));
    if (!v.is_number() && !v.is_expr()) {
      return Error(vloc, absl::StrCat(what, " value must be a number, expression or buffer, got ",
                                      TypeName(v)));
    }
    ASSIGN_OR_RETURN(st.value, ToExprOf(Ctx(vloc), v, buffers_[dst.buffer].buffer.dtype));
    st.has_value = true;
    Emit(std::move(st));
    return Value::None();
  }
  ASSIGN_OR_RETURN(Operand src, ToOperand(Arg{value, vloc, "", {}}, what));
  if (src.form == Operand::kCorner && dst.form == Operand::kCorner) {
    return Error(vloc, absl::StrCat(what, ": cannot deduce extents from two single elements"));
  }
  ASSIGN_OR_RETURN(ir::Region rd, OperandRegion(dst, src.extents, what));
  ASSIGN_OR_RETURN(ir::Region rs, OperandRegion(src, dst.extents, what));
  std::vector<ir::Expr> ed, es;
  for (const ir::Range& r : rd.ranges) ed.push_back(r.extent);
  for (const ir::Range& r : rs.ranges) es.push_back(r.extent);
  if (!ExtentsCompatible(es, ed)) {
    return Error(loc, absl::StrCat(what, " shape mismatch: destination ", ExtentsText(ed),
                                   " vs source ", ExtentsText(es)));
  }
  st.regions.push_back(std::move(rd));
  st.regions.push_back(std::move(rs));
  Emit(std::move(st));
  return Value::None();
}

absl::StatusOr<Value> Evaluator::LowerAnnotateLayout(std::vector<Arg>& args, Loc loc) {
  ASSIGN_OR_RETURN(
      auto m, MatchArgs(options_.file_name, loc, "T.annotate_layout", args, {"layout_map"}, 1));
  const Value& map = *m[0];
  Loc mloc = ArgLoc(args, {"layout_map"}, 0, loc);
  if (map.kind != ValueKind::kDict) {
    return Error(mloc, absl::StrCat("T.annotate_layout expects a dict {buffer: layout}, got ",
                                    TypeName(map)));
  }
  for (size_t k = 0; k < map.items->size(); ++k) {
    const Value& key = (*map.items)[k];
    const Value& layout = (*map.values)[k];
    if (key.kind != ValueKind::kBuffer) {
      return Error(mloc,
                   absl::StrCat("T.annotate_layout keys must be buffers, got ", TypeName(key)));
    }
    const ir::Buffer& b = buffers_[key.i].buffer;
    if (layout.kind == ValueKind::kLayout && layout.s == kIndexLayout) {
      RETURN_IF_ERROR(AnnotateIndexLayout(static_cast<int>(key.i), layout, mloc));
      continue;
    }
    if (layout.kind != ValueKind::kLayout) {
      return Error(mloc, absl::StrCat("layout for '", b.name,
                                      "' must come from T.Layout or a swizzle layout "
                                      "function such as T.make_swizzled_layout, got ",
                                      TypeName(layout)));
    }
    if (layout.i != key.i) {
      return Error(mloc, absl::StrCat("layout for '", b.name, "' was made for buffer '",
                                      buffers_[layout.i].buffer.name, "'"));
    }
    ir::Stmt st;
    st.kind = ir::StmtKind::kAnnotateLayout;
    st.loc = loc;
    st.name = b.name;
    st.layout = layout.s;
    Emit(std::move(st));
  }
  return Value::None();
}

absl::StatusOr<Value> Evaluator::LowerUseSwizzle(std::vector<Arg>& args, Loc loc) {
  std::vector<std::string_view> names = {"panel_size", "order", "enable"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, "T.use_swizzle", args, names, 1));
  ir::Stmt st;
  st.kind = ir::StmtKind::kUseSwizzle;
  st.loc = loc;
  if (m[0]->kind != ValueKind::kInt || m[0]->i <= 0 || m[0]->i > (1 << 20)) {
    return Error(ArgLoc(args, names, 0, loc),
                 "T.use_swizzle panel_size must be a positive compile-time integer");
  }
  st.panel_size = static_cast<int32_t>(m[0]->i);
  if (m[1].has_value()) {
    const Value& o = *m[1];
    if (o.kind == ValueKind::kString && o.s == "row") {
      st.swizzle_order = "row";
    } else if (o.kind == ValueKind::kString && o.s == "column") {
      st.swizzle_order = "col";
    } else {
      return Error(ArgLoc(args, names, 1, loc),
                   "T.use_swizzle order must be \"row\" or \"column\"");
    }
  }
  if (m[2].has_value()) {
    if (!m[2]->is_int() || (m[2]->i != 0 && m[2]->i != 1)) {
      return Error(ArgLoc(args, names, 2, loc), "T.use_swizzle enable must be a compile-time bool");
    }
    st.enable = m[2]->i != 0;
  }
  Emit(std::move(st));
  return Value::None();
}

} // namespace kiln::frontend
