// T.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad) (and
// its older name T.c2d_im2col): one tile of the im2col matrix of an NHWC
// image, for a convolution computed as a GEMM.
//
// Row m of the matrix is output pixel m of the N x OH x OW output in
// row-major order, column k is kernel tap (kh, kw) and channel c with
// k = (kh * kernel + kw) * C + c, where
//   OH = (H + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1 (OW alike).
// Element (m, k) is img[n, oh * stride + kh * dilation - pad,
// ow * stride + kw * dilation - pad, c], or 0 where that pixel lies in the
// padding. The tile is rows nhw_step * BM + [0, BM) and columns
// c_step * BK + [0, BK) for a destination whose last two dimensions are
// BM x BK. Rows past N * OH * OW and columns past kernel * kernel * C are
// also 0 (TileLang leaves them unspecified; the tail of the last tile must
// not read past the image).
//
// It is lowered here to a T.Parallel loop over the tile that stores each
// element, so layout inference and the tile-op lowering treat it as any
// element-wise loop that fills a shared or fragment buffer.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/args.h"
#include "compiler/frontend/arith.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/simplify.h"
#include "util/status_macros.h"

namespace kiln::frontend {

absl::StatusOr<Value> Evaluator::LowerIm2col(const std::string& name, std::vector<Arg>& args,
                                             Loc loc) {
  RETURN_IF_ERROR(RequireKernel(loc, name));
  const std::string& file = options_.file_name;
  const std::vector<std::string_view> names = {
      "img",    "col",      "nhw_step", "c_step",          "kernel",
      "stride", "dilation", "pad",      "eviction_policy", "annotations"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, name, args, names, 8));
  if (m[9].has_value() && !m[9]->is_none() &&
      !(m[9]->kind == ValueKind::kDict && m[9]->elts().empty())) {
    return Error(ArgLoc(args, names, 9, loc),
                 absl::StrCat(name, " argument 'annotations' is not supported"));
  }
  if (m[8].has_value() && !m[8]->is_none()) {
    // A cache hint only; Kiln's loads take the default policy.
    const Value& p = *m[8];
    if (p.kind != ValueKind::kString ||
        (p.s != "evict_normal" && p.s != "evict_first" && p.s != "evict_last")) {
      return Error(ArgLoc(args, names, 8, loc),
                   absl::StrCat(name, " eviction_policy must be \"evict_normal\", "
                                      "\"evict_first\" or \"evict_last\""));
    }
  }
  const Value& img = *m[0];
  const Loc img_loc = ArgLoc(args, names, 0, loc);
  if (img.kind != ValueKind::kBuffer) {
    return Error(img_loc, absl::StrCat(name, " img must be a whole 4-d (N, H, W, C) buffer, got ",
                                       TypeName(img)));
  }
  const ir::Buffer& ib = buffers_[img.i].buffer;
  if (ib.shape.size() != 4) {
    return Error(img_loc,
                 absl::StrCat(name, " img '", ib.name,
                              "' must have 4 dimensions (N, H, W, C), got ", ib.shape.size()));
  }
  const Loc col_loc = ArgLoc(args, names, 1, loc);
  ASSIGN_OR_RETURN(Operand col, ToOperand(Arg{*m[1], col_loc, "", {}}, name));
  if (col.form == Operand::kCorner) {
    return Error(col_loc, absl::StrCat(name, " col must be a buffer or a sliced region"));
  }
  const ir::Buffer& cb = buffers_[col.buffer].buffer;
  if (cb.dtype != ib.dtype) {
    return Error(col_loc,
                 absl::StrCat(name, " col '", cb.name, "' (", std::string(ir::DTypeName(cb.dtype)),
                              ") must have the dtype of img '", ib.name, "' (",
                              std::string(ir::DTypeName(ib.dtype)), ")"));
  }
  const size_t rank = col.extents.size();
  if (rank < 2) {
    return Error(col_loc, absl::StrCat(name, " col '", cb.name,
                                       "' needs at least 2 dimensions (rows, columns)"));
  }
  std::vector<int64_t> tile(2);
  for (size_t d = 0; d < rank; ++d) {
    std::optional<int64_t> c = ir::ConstInt(ir::Simplify(col.extents[d]));
    if (!c || (d + 2 < rank && *c != 1)) {
      return Error(col_loc, absl::StrCat(name, " col '", cb.name,
                                         "' must be a tile of constant extents, 1 in every "
                                         "dimension but the last two"));
    }
    if (d + 2 >= rank) tile[d + 2 - rank] = *c;
  }
  // The integer parameters: compile-time values are checked here, symbolic
  // ones must be integer expressions.
  std::vector<Value> p(6);
  const int64_t least[6] = {0, 0, 1, 1, 1, 0}; // nhw_step, c_step, kernel, stride, dilation, pad
  for (size_t k = 0; k < 6; ++k) {
    const Value& v = *m[k + 2];
    const Loc vloc = ArgLoc(args, names, k + 2, loc);
    if (v.kind == ValueKind::kInt) {
      if (v.i < least[k]) {
        return Error(vloc, absl::StrCat(name, " ", std::string(names[k + 2]), " must be at least ",
                                        least[k], ", got ", v.i));
      }
    } else if (!(v.is_expr() && ir::IsInteger(v.expr->dtype))) {
      RETURN_IF_ERROR(CheckBound(v, vloc));
      return Error(vloc, absl::StrCat(name, " ", std::string(names[k + 2]),
                                      " must be an integer, got ", TypeName(v)));
    }
    p[k] = v;
  }
  const Value &nhw_step = p[0], &c_step = p[1], &kernel = p[2], &stride = p[3], &dilation = p[4],
              &pad = p[5];

  const ArithContext ctx = Ctx(loc);
  auto dim = [](const ir::Expr& e) {
    return e.kind == ir::ExprKind::kInt ? Value::Int(e.ival) : Value::Expr(e);
  };
  const Value n_dim = dim(ib.shape[0]), h_dim = dim(ib.shape[1]), w_dim = dim(ib.shape[2]),
              c_dim = dim(ib.shape[3]);
  auto bin = [&](std::string_view op, const Value& a, const Value& b) {
    return ApplyBinary(ctx, op, a, b);
  };
  // OH and OW, as TileLang's convolution examples compute them.
  auto out_extent = [&](const Value& in) -> absl::StatusOr<Value> {
    ASSIGN_OR_RETURN(Value two_p, bin("*", Value::Int(2), pad));
    ASSIGN_OR_RETURN(Value km1, bin("-", kernel, Value::Int(1)));
    ASSIGN_OR_RETURN(Value span, bin("*", dilation, km1));
    ASSIGN_OR_RETURN(Value x, bin("+", in, two_p));
    ASSIGN_OR_RETURN(x, bin("-", x, span));
    ASSIGN_OR_RETURN(x, bin("-", x, Value::Int(1)));
    ASSIGN_OR_RETURN(x, bin("//", x, stride));
    return bin("+", x, Value::Int(1));
  };
  ASSIGN_OR_RETURN(Value oh_dim, out_extent(h_dim));
  ASSIGN_OR_RETURN(Value ow_dim, out_extent(w_dim));
  if (oh_dim.kind == ValueKind::kInt && ow_dim.kind == ValueKind::kInt &&
      (oh_dim.i <= 0 || ow_dim.i <= 0)) {
    return Error(loc, absl::StrCat(name, ": the convolution has no output pixels (", oh_dim.i,
                                   " x ", ow_dim.i, ")"));
  }

  ir::Stmt loop;
  loop.kind = ir::StmtKind::kFor;
  loop.loc = loc;
  loop.for_kind = ir::ForKind::kParallel;
  std::vector<Value> ij;
  for (int64_t t : tile) {
    std::string v = UniqueName(ij.empty() ? "i" : "j");
    ij.push_back(Value::Expr(ir::VarRef(v, ir::DType::kInt32, loc)));
    loop.loop_vars.push_back(std::move(v));
    loop.extents.push_back(ir::IntImm(t, ir::DType::kInt32, loc));
  }
  std::vector<ir::Stmt>* saved = sink_;
  sink_ = &loop.body;
  absl::Status status = [&]() -> absl::Status {
    // The matrix element (row, colk) of this tile.
    ASSIGN_OR_RETURN(Value row, bin("*", nhw_step, Value::Int(tile[0])));
    ASSIGN_OR_RETURN(row, bin("+", row, ij[0]));
    ASSIGN_OR_RETURN(Value colk, bin("*", c_step, Value::Int(tile[1])));
    ASSIGN_OR_RETURN(colk, bin("+", colk, ij[1]));
    // Output pixel (n, oh, ow) of the row.
    ASSIGN_OR_RETURN(Value ohw, bin("*", oh_dim, ow_dim));
    ASSIGN_OR_RETURN(Value n, bin("//", row, ohw));
    ASSIGN_OR_RETURN(Value rem, bin("%", row, ohw));
    ASSIGN_OR_RETURN(Value oh, bin("//", rem, ow_dim));
    ASSIGN_OR_RETURN(Value ow, bin("%", row, ow_dim));
    // Kernel tap (kh, kw) and channel c of the column.
    ASSIGN_OR_RETURN(Value kc, bin("*", kernel, c_dim));
    ASSIGN_OR_RETURN(Value kh, bin("//", colk, kc));
    ASSIGN_OR_RETURN(Value kq, bin("//", colk, c_dim));
    ASSIGN_OR_RETURN(Value kw, bin("%", kq, kernel));
    ASSIGN_OR_RETURN(Value c, bin("%", colk, c_dim));
    auto coord = [&](const Value& o, const Value& kt) -> absl::StatusOr<Value> {
      ASSIGN_OR_RETURN(Value a, bin("*", o, stride));
      ASSIGN_OR_RETURN(Value b, bin("*", kt, dilation));
      ASSIGN_OR_RETURN(Value x, bin("+", a, b));
      return bin("-", x, pad);
    };
    ASSIGN_OR_RETURN(Value h, coord(oh, kh));
    ASSIGN_OR_RETURN(Value w, coord(ow, kw));
    // Inside the image (not padding), a real row and a real column.
    std::vector<std::pair<Value, Value>> lt = {
        {Value::Int(-1), h}, {Value::Int(-1), w}, {h, h_dim}, {w, w_dim}, {n, n_dim}, {kh, kernel}};
    Value inside = Value::Bool(true);
    for (const auto& [a, b] : lt) {
      ASSIGN_OR_RETURN(Value t, ApplyCompare(ctx, "<", a, b));
      if (inside.kind == ValueKind::kBool && inside.i != 0) {
        inside = t;
      } else if (inside.kind != ValueKind::kBool && t.kind != ValueKind::kBool) {
        ASSIGN_OR_RETURN(inside, ApplyLogical(ctx, true, inside, t));
      } else if (t.kind == ValueKind::kBool && t.i == 0) {
        inside = t;
      }
    }
    Value src;
    src.kind = ValueKind::kAccess;
    src.i = img.i;
    src.items = NewValueList({n, h, w, c});
    ASSIGN_OR_RETURN(ir::Expr value, LoadOf(src, img_loc));
    value = ir::Simplify(value);
    if (inside.kind != ValueKind::kBool || inside.i == 0) {
      ASSIGN_OR_RETURN(ir::Expr cond, ToCondition(ctx, inside));
      cond = ir::Simplify(cond);
      ASSIGN_OR_RETURN(ir::Expr zero, ToExprOf(ctx, Value::Int(0), value.dtype));
      value = ir::Select(std::move(cond), std::move(value), std::move(zero), loc);
    }
    ValueList idx;
    for (size_t d = 0; d < rank; ++d) {
      Value x = dim(col.mins[d]);
      if (d + 2 >= rank) {
        ASSIGN_OR_RETURN(x, bin("+", x, ij[d + 2 - rank]));
      }
      idx.push_back(std::move(x));
    }
    Value dst;
    dst.kind = ValueKind::kAccess;
    dst.i = col.buffer;
    dst.items = NewValueList(std::move(idx));
    return StoreTo(dst, Value::Expr(std::move(value)), loc);
  }();
  sink_ = saved;
  RETURN_IF_ERROR(status);
  Emit(std::move(loop));
  return Value::None();
}

} // namespace kiln::frontend
