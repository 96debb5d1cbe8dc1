// Tensors over another buffer's storage and tile copies through them.
//
// `x.data` stands for the storage of buffer x; T.Tensor(shape, dtype,
// x.data) (or T.Buffer) is then a view of x with another shape, exactly as
// T.view(x, shape) (tl_builtins.cc: same dtype, same element count, row-major
// over the same elements). The view never reaches the IR: element accesses
// are rewritten to x (ResolveView), and a T.copy whose operand is a region of
// a reshaped view of a global tensor is rewritten here:
//  1. Where every dimension group of the view (view_dims.h) maps the region
//     onto a rectangle of the viewed tensor, the copy becomes a T.copy of that
//     rectangle, so the tile-op lowering sees the tensor's own shape and
//     address arithmetic (vector, cp.async and TMA copies included). A group
//     that merges dimensions maps a range [m, m + e) of its one view
//     dimension onto one row of the innermost merged dimension when e divides
//     that dimension's (constant) extent and m is provably a multiple of e
//     (`k * block_K` with e = block_K): the range never straddles a row, and
//     a row past the end is out of bounds in the outermost merged dimension,
//     as the tile-op lowering checks.
//  2. Otherwise, an element-wise T.Parallel copy over the region: global
//     reads past the edge of the view give 0 and global writes past it are
//     dropped, as T.copy does, with each element's view index taken apart
//     into the tensor's by ResolveView.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/args.h"
#include "compiler/frontend/arith.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/frontend/view_dims.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/simplify.h"
#include "util/status_macros.h"

namespace kiln::frontend {
namespace {

// What `x.data` evaluates to: an opaque value whose `i` is the buffer id.
constexpr char kStoragePrefix[] = "the storage of buffer ";

bool SameShape(const std::vector<ir::Expr>& a, const std::vector<ir::Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d) {
    if (ir::PrintExpr(a[d]) != ir::PrintExpr(b[d])) return false;
  }
  return true;
}

// True when `x` is provably a multiple of `e` (> 0) for every value of its
// variables: literals, and sums and products built from them.
bool MultipleOf(const ir::Expr& x, int64_t e) {
  switch (x.kind) {
  case ir::ExprKind::kInt:
    return x.ival % e == 0;
  case ir::ExprKind::kCast:
    return ir::IsInteger(x.dtype) && MultipleOf(x.args[0], e);
  case ir::ExprKind::kBinary:
    if (x.bop == ir::BinOp::kMul) return MultipleOf(x.args[0], e) || MultipleOf(x.args[1], e);
    if (x.bop == ir::BinOp::kAdd || x.bop == ir::BinOp::kSub) {
      return MultipleOf(x.args[0], e) && MultipleOf(x.args[1], e);
    }
    return false;
  default:
    return false;
  }
}

Value AsValue(const ir::Expr& e) {
  return e.kind == ir::ExprKind::kInt ? Value::Int(e.ival) : Value::Expr(e);
}

} // namespace

Value Evaluator::StorageOf(int buffer) const {
  const int root = buffers_[buffer].view_of >= 0 ? buffers_[buffer].view_of : buffer;
  Value v = Value::Opaque(absl::StrCat(kStoragePrefix, "'", buffers_[root].buffer.name, "'"));
  v.i = root;
  return v;
}

bool Evaluator::IsStorage(const Value& v) {
  return v.kind == ValueKind::kOpaque && v.s.rfind(kStoragePrefix, 0) == 0;
}

absl::StatusOr<Value> Evaluator::TensorOverStorage(const std::string& name, std::vector<Arg>& args,
                                                   Loc loc) {
  const std::vector<std::string_view> names = {"shape", "dtype", "data"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(options_.file_name, loc, name, args, names, 3));
  const Value& data = *m[2];
  const Loc data_loc = ArgLoc(args, names, 2, loc);
  if (!IsStorage(data)) {
    return Error(data_loc, absl::StrCat(name, "() data must be another buffer's storage (x.data), ",
                                        "got ", TypeName(data)));
  }
  if (buffers_[data.i].buffer.scope != ir::Scope::kGlobal) {
    return Error(data_loc,
                 absl::StrCat(name, "() over the storage of '", buffers_[data.i].buffer.name,
                              "' is supported for tensor parameters and outputs only; "
                              "use T.view for other buffers"));
  }
  // The same checks and naming as T.view(data's buffer, shape, dtype).
  std::vector<Arg> view_args = {Arg{Value::Buffer(static_cast<int>(data.i)), data_loc, "", {}},
                                Arg{*m[0], ArgLoc(args, names, 0, loc), "", {}},
                                Arg{*m[1], ArgLoc(args, names, 1, loc), "", {}}};
  return MakeView(name, view_args, loc);
}

bool Evaluator::IsReshapedGlobalView(const Value& v) const {
  if (v.kind != ValueKind::kBuffer && v.kind != ValueKind::kAccess) return false;
  const BufferInfo& info = buffers_[v.i];
  if (info.view_of < 0) return false;
  const ir::Buffer& base = buffers_[info.view_of].buffer;
  return base.scope == ir::Scope::kGlobal && !SameShape(info.buffer.shape, base.shape);
}

absl::StatusOr<std::optional<ir::Region>> Evaluator::ViewRegionToBase(int buffer,
                                                                      const ir::Region& r) {
  const BufferInfo& info = buffers_[buffer];
  if (info.view_of < 0) return std::optional<ir::Region>(r);
  const ir::Buffer& base = buffers_[info.view_of].buffer;
  const std::vector<ir::Expr>& vs = info.buffer.shape;
  const std::vector<ir::Expr>& bs = base.shape;
  std::optional<std::vector<DimGroup>> groups = GroupDims(vs, bs);
  if (!groups) return Error(r.loc, "internal: view shape no longer matches its buffer");
  ir::Region out;
  out.buffer = base.name;
  out.loc = r.loc;
  out.ranges.resize(bs.size());
  const ArithContext ctx = Ctx(r.loc);
  for (const DimGroup& g : *groups) {
    const size_t nv = g.v_end - g.v_begin, nb = g.b_end - g.b_begin;
    if (nb == 0) continue; // unit view dimensions only
    if (nv == 0) {
      for (size_t d = g.b_begin; d < g.b_end; ++d) {
        out.ranges[d] = ir::Range{ir::IntImm(0, ir::DType::kInt32, r.loc),
                                  ir::IntImm(1, ir::DType::kInt32, r.loc)};
      }
      continue;
    }
    if (nv != 1) return std::optional<ir::Region>(); // a split dimension: not one rectangle
    const ir::Range& vr = r.ranges[g.v_begin];
    if (nb == 1) {
      out.ranges[g.b_begin] = vr;
      continue;
    }
    const std::optional<int64_t> e = ir::ConstInt(ir::Simplify(vr.extent));
    if (!e) return std::optional<ir::Region>();
    const size_t last = g.b_end - 1;
    if (*e > 1) {
      const std::optional<int64_t> row = ir::ConstInt(ir::Simplify(bs[last]));
      if (!row || *row % *e != 0 || !MultipleOf(ir::Simplify(vr.min), *e)) {
        return std::optional<ir::Region>();
      }
    }
    // The range's start taken apart over the merged dimensions, innermost
    // first; the outermost keeps the quotient, so a start past the view's
    // end is out of bounds there.
    Value flat = AsValue(vr.min);
    for (size_t d = last + 1; d-- > g.b_begin;) {
      Value start = flat;
      if (d > g.b_begin) {
        ASSIGN_OR_RETURN(start, ApplyBinary(ctx, "%", flat, AsValue(bs[d])));
        ASSIGN_OR_RETURN(flat, ApplyBinary(ctx, "//", flat, AsValue(bs[d])));
      }
      ASSIGN_OR_RETURN(ir::Expr min, ToExpr(ctx, start));
      out.ranges[d] = ir::Range{ir::Simplify(min),
                                d == last ? vr.extent : ir::IntImm(1, ir::DType::kInt32, r.loc)};
    }
  }
  return std::optional<ir::Region>(std::move(out));
}

absl::StatusOr<Value> Evaluator::CopyThroughView(const Operand& src, const Operand& dst,
                                                 const ir::Region& rs, const ir::Region& rd,
                                                 Loc loc) {
  for (const Operand* op : {&src, &dst}) {
    const BufferInfo& info = buffers_[op->buffer];
    if (info.view_of >= 0 && buffers_[info.view_of].buffer.scope != ir::Scope::kGlobal) {
      return Error(op->loc, absl::StrCat("T.copy on '", info.buffer.name, "', a view of '",
                                         buffers_[info.view_of].buffer.name,
                                         "' with another shape (T.reshape / T.view), is not "
                                         "supported yet; index its elements in a T.Parallel "
                                         "loop instead"));
    }
  }
  ASSIGN_OR_RETURN(std::optional<ir::Region> bs, ViewRegionToBase(src.buffer, rs));
  ASSIGN_OR_RETURN(std::optional<ir::Region> bd, ViewRegionToBase(dst.buffer, rd));
  if (bs && bd) {
    ir::Stmt st;
    st.kind = ir::StmtKind::kCopy;
    st.loc = loc;
    st.regions = {*std::move(bs), *std::move(bd)};
    Emit(std::move(st));
    return Value::None();
  }

  // Element by element over the region's dimensions of extent > 1.
  auto copy_dims = [](const ir::Region& r) {
    std::vector<size_t> dims;
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      std::optional<int64_t> c = ir::ConstInt(ir::Simplify(r.ranges[d].extent));
      if (!c || *c != 1) dims.push_back(d);
    }
    return dims;
  };
  const std::vector<size_t> ds = copy_dims(rs), dd = copy_dims(rd);
  ir::Stmt loop;
  loop.kind = ir::StmtKind::kFor;
  loop.loc = loc;
  loop.for_kind = ir::ForKind::kParallel;
  std::vector<ir::Expr> vars;
  for (size_t k = 0; k < std::max<size_t>(ds.size(), 1); ++k) {
    int64_t extent = 1;
    if (!ds.empty()) {
      std::optional<int64_t> c = ir::ConstInt(ir::Simplify(rs.ranges[ds[k]].extent));
      if (!c) {
        return Error(loc, "T.copy through a reshaped view needs a region of constant extents");
      }
      extent = *c;
    }
    std::string name = UniqueName("i");
    vars.push_back(ir::VarRef(name, ir::DType::kInt32, loc));
    loop.loop_vars.push_back(std::move(name));
    loop.extents.push_back(ir::IntImm(extent, ir::DType::kInt32, loc));
  }
  const ArithContext ctx = Ctx(loc);
  // The element of operand `r` (of buffer `buffer`) at the loop's point, and
  // whether it lies inside a global tensor (true for other scopes).
  auto element = [&](int buffer, const ir::Region& r, const std::vector<size_t>& dims,
                     Value* access, Value* inside) -> absl::Status {
    ValueList idx;
    *inside = Value::Bool(true);
    const ir::Buffer& b = buffers_[buffer].buffer;
    const int root = buffers_[buffer].view_of >= 0 ? buffers_[buffer].view_of : buffer;
    const bool global = buffers_[root].buffer.scope == ir::Scope::kGlobal;
    size_t next = 0;
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      Value x = AsValue(r.ranges[d].min);
      if (next < dims.size() && dims[next] == d) {
        ASSIGN_OR_RETURN(x, ApplyBinary(ctx, "+", x, Value::Expr(vars[next])));
        ++next;
      }
      if (global) {
        ASSIGN_OR_RETURN(Value lt, ApplyCompare(ctx, "<", x, AsValue(b.shape[d])));
        if (inside->kind == ValueKind::kBool) {
          if (inside->i != 0) *inside = lt; // else provably outside already
        } else if (lt.kind == ValueKind::kBool) {
          if (lt.i == 0) *inside = lt;
        } else {
          ASSIGN_OR_RETURN(*inside, ApplyLogical(ctx, true, *inside, lt));
        }
      }
      idx.push_back(std::move(x));
    }
    access->kind = ValueKind::kAccess;
    access->i = buffer;
    access->items = NewValueList(std::move(idx));
    return absl::OkStatus();
  };
  Value sa, sin, da, din;
  RETURN_IF_ERROR(element(src.buffer, rs, ds, &sa, &sin));
  RETURN_IF_ERROR(element(dst.buffer, rd, dd, &da, &din));
  std::vector<ir::Stmt>* saved = sink_;
  sink_ = &loop.body;
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(ir::Expr value, LoadOf(sa, rs.loc));
    if (sin.kind != ValueKind::kBool || sin.i == 0) {
      ASSIGN_OR_RETURN(ir::Expr cond, ToCondition(ctx, sin));
      ASSIGN_OR_RETURN(ir::Expr zero, ToExprOf(ctx, Value::Int(0), value.dtype));
      value = ir::Select(std::move(cond), std::move(value), std::move(zero), loc);
    }
    if (din.kind == ValueKind::kBool) {
      if (din.i == 0) return absl::OkStatus(); // the whole region is past the edge
      return StoreTo(da, Value::Expr(std::move(value)), loc);
    }
    ir::Stmt guard;
    guard.kind = ir::StmtKind::kIf;
    guard.loc = loc;
    ASSIGN_OR_RETURN(guard.cond, ToCondition(ctx, din));
    sink_ = &guard.body;
    RETURN_IF_ERROR(StoreTo(da, Value::Expr(std::move(value)), loc));
    sink_ = &loop.body;
    Emit(std::move(guard));
    return absl::OkStatus();
  }();
  sink_ = saved;
  RETURN_IF_ERROR(status);
  Emit(std::move(loop));
  return Value::None();
}

} // namespace kiln::frontend
