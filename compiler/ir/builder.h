// Small constructors for IR expressions and statements, used by the frontend,
// the text parser, passes and tests. They do not validate (the verifier does)
// but they do compute result dtypes: comparisons and logical ops yield bool,
// arithmetic takes the dtype of its left operand.
// Thread-safe (pure functions).
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::ir {

Expr IntImm(int64_t value, DType dtype = DType::kInt32, Loc loc = {});
Expr BoolImm(bool value, Loc loc = {});
Expr FloatImm(double value, DType dtype = DType::kFloat32, Loc loc = {});
Expr VarRef(std::string name, DType dtype = DType::kInt32, Loc loc = {});
Expr Load(std::string buffer, DType dtype, std::vector<Expr> indices, Loc loc = {});
Expr Binary(BinOp op, Expr lhs, Expr rhs, Loc loc = {});
Expr Unary(UnOp op, Expr x, Loc loc = {});
Expr Call(Intrinsic fn, std::vector<Expr> args, Loc loc = {});
Expr Cast(DType dtype, Expr x, Loc loc = {});
Expr Select(Expr cond, Expr t, Expr f, Loc loc = {});
Expr ThreadIdx(int dim, Loc loc = {});

// Thread IR (after lowering): `&buffer[index]` (dtype: the buffer's element
// type) and the statement `call intrinsic(args...)`.
Expr Address(std::string buffer, DType dtype, Expr index, Loc loc = {});
Stmt CallStmt(std::string intrinsic, std::vector<Expr> args, Loc loc = {});

// True for comparison and logical operators (result dtype bool).
bool IsComparison(BinOp op);
bool IsLogical(BinOp op);

// The region covering all of `buffer`.
Region WholeRegion(const Buffer& buffer, Loc loc = {});

} // namespace kiln::ir
