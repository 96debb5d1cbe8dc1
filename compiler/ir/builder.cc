#include "compiler/ir/builder.h"

#include <utility>

namespace kiln::ir {
namespace {

Expr Make(ExprKind kind, DType dtype, Loc loc) {
  Expr e;
  e.kind = kind;
  e.dtype = dtype;
  e.loc = loc;
  return e;
}

} // namespace

Expr IntImm(int64_t value, DType dtype, Loc loc) {
  Expr e = Make(ExprKind::kInt, dtype, loc);
  e.ival = value;
  return e;
}

Expr BoolImm(bool value, Loc loc) { return IntImm(value ? 1 : 0, DType::kBool, loc); }

Expr FloatImm(double value, DType dtype, Loc loc) {
  Expr e = Make(ExprKind::kFloat, dtype, loc);
  e.fval = value;
  return e;
}

Expr VarRef(std::string name, DType dtype, Loc loc) {
  Expr e = Make(ExprKind::kVar, dtype, loc);
  e.name = std::move(name);
  return e;
}

Expr Load(std::string buffer, DType dtype, std::vector<Expr> indices, Loc loc) {
  Expr e = Make(ExprKind::kLoad, dtype, loc);
  e.name = std::move(buffer);
  e.args = std::move(indices);
  return e;
}

bool IsComparison(BinOp op) { return op >= BinOp::kEq && op <= BinOp::kGe; }

bool IsLogical(BinOp op) { return op == BinOp::kAnd || op == BinOp::kOr; }

Expr Binary(BinOp op, Expr lhs, Expr rhs, Loc loc) {
  DType dtype = (IsComparison(op) || IsLogical(op)) ? DType::kBool : lhs.dtype;
  Expr e = Make(ExprKind::kBinary, dtype, loc);
  e.bop = op;
  e.args.push_back(std::move(lhs));
  e.args.push_back(std::move(rhs));
  return e;
}

Expr Unary(UnOp op, Expr x, Loc loc) {
  Expr e = Make(ExprKind::kUnary, op == UnOp::kNot ? DType::kBool : x.dtype, loc);
  e.uop = op;
  e.args.push_back(std::move(x));
  return e;
}

Expr Call(Intrinsic fn, std::vector<Expr> args, Loc loc) {
  Expr e = Make(ExprKind::kCall, args.empty() ? DType::kFloat32 : args[0].dtype, loc);
  e.fn = fn;
  e.args = std::move(args);
  return e;
}

Expr Cast(DType dtype, Expr x, Loc loc) {
  Expr e = Make(ExprKind::kCast, dtype, loc);
  e.args.push_back(std::move(x));
  return e;
}

Expr Select(Expr cond, Expr t, Expr f, Loc loc) {
  Expr e = Make(ExprKind::kSelect, t.dtype, loc);
  e.args.push_back(std::move(cond));
  e.args.push_back(std::move(t));
  e.args.push_back(std::move(f));
  return e;
}

Expr ThreadIdx(int dim, Loc loc) {
  Expr e = Make(ExprKind::kThreadIdx, DType::kInt32, loc);
  e.ival = dim;
  return e;
}

Expr Address(std::string buffer, DType dtype, Expr index, Loc loc) {
  Expr e = Make(ExprKind::kAddress, dtype, loc);
  e.name = std::move(buffer);
  e.args.push_back(std::move(index));
  return e;
}

Stmt CallStmt(std::string intrinsic, std::vector<Expr> args, Loc loc) {
  Stmt s;
  s.kind = StmtKind::kCall;
  s.loc = loc;
  s.name = std::move(intrinsic);
  s.indices = std::move(args);
  return s;
}

Region WholeRegion(const Buffer& buffer, Loc loc) {
  Region r;
  r.buffer = buffer.name;
  r.loc = loc;
  for (const Expr& extent : buffer.shape) r.ranges.push_back(Range{IntImm(0), extent});
  return r;
}

} // namespace kiln::ir
