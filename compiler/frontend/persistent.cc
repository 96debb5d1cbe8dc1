// `for v0, ..., vn in T.Persistent(domain, wave_size, index, group_size=8):`,
// TileLang's persistent tile loop: a grid of `wave_size` blocks, block
// `index`, walks the tiles of `domain` = [d0, ..., d(n-1)] wave by wave.
//
// The tile order (as TileLang a35008a builds it):
// 1. G = max(1, min(group_size, d(n-1))): the last dimension is cut into
//    groups of G, and the tiles are numbered over the padded domain
//    [ceildiv(d(n-1), G), d0, ..., d(n-2), G], the last fastest (a group of
//    G neighbouring tiles of the last dimension before the next row).
// 2. P is that domain's size; the loop runs waves = ceildiv(P, wave_size)
//    iterations w, and iteration w handles tile r = w * wave_size + index.
// 3. r's digits in that mixed radix are (i0, j0, ..., j(n-2), g); then
//    v_k = j_k for k < n - 1 and v(n-1) = i0 * G + g.
// 4. The body runs where v(n-1) < d(n-1): the padding of the last group
//    and the tiles past P (TileLang breaks out of the loop at r >= P, which
//    is the same, as r only grows and every such r fails this test).
//
// Lowered to a serial IR loop over w whose body is the guarded body, with
// the loop variables bound to their expressions in w.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/args.h"
#include "compiler/frontend/arith.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/int_range.h"
#include "compiler/ir/simplify.h"
#include "util/status_macros.h"

namespace kiln::frontend {

absl::StatusOr<Evaluator::Flow> Evaluator::ExecPersistentFor(const PyStmt& s,
                                                             std::vector<Arg>& args, Loc loc) {
  const std::string& file = options_.file_name;
  const std::vector<std::string_view> names = {"domain", "wave_size", "index", "group_size"};
  ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, "T.Persistent", args, names, 3));
  auto int_like = [](const Value& v) {
    return v.kind == ValueKind::kInt || (v.is_expr() && ir::IsInteger(v.expr->dtype));
  };
  auto integer = [&](size_t k, std::string_view what) -> absl::StatusOr<Value> {
    Loc aloc = ArgLoc(args, names, k, loc);
    ASSIGN_OR_RETURN(Value v, Materialize(*m[k], aloc));
    if (!int_like(v)) {
      return Error(aloc, absl::StrCat("T.Persistent ", std::string(what),
                                      " must be an integer, got ", TypeName(v)));
    }
    if (v.kind == ValueKind::kInt && v.i <= 0) {
      return Error(
          aloc, absl::StrCat("T.Persistent ", std::string(what), " must be positive, got ", v.i));
    }
    return v;
  };
  const Loc dloc = ArgLoc(args, names, 0, loc);
  if (!m[0]->is_sequence() || m[0]->elts().empty()) {
    return Error(dloc, absl::StrCat("T.Persistent domain must be a non-empty list of tile counts, "
                                    "got ",
                                    TypeName(*m[0])));
  }
  std::vector<Value> domain;
  for (const Value& x : m[0]->elts()) {
    ASSIGN_OR_RETURN(Value d, Materialize(x, dloc));
    if (!int_like(d) || (d.kind == ValueKind::kInt && d.i <= 0)) {
      return Error(dloc, absl::StrCat("T.Persistent domain extents must be positive integers, got ",
                                      d.kind == ValueKind::kInt ? absl::StrCat(d.i) : TypeName(d)));
    }
    domain.push_back(std::move(d));
  }
  ASSIGN_OR_RETURN(Value wave, integer(1, "wave_size"));
  const Loc iloc = ArgLoc(args, names, 2, loc);
  ASSIGN_OR_RETURN(Value index, Materialize(*m[2], iloc));
  if (!int_like(index)) {
    return Error(iloc, absl::StrCat("T.Persistent index must be an integer (the block's index in "
                                    "the wave), got ",
                                    TypeName(index)));
  }
  Value group = Value::Int(8);
  if (m[3].has_value()) {
    if (m[3]->is_none()) {
      return Error(ArgLoc(args, names, 3, loc), "T.Persistent group_size must be an integer");
    }
    ASSIGN_OR_RETURN(group, integer(3, "group_size"));
  }

  // Loop variables: one per domain dimension.
  const PyExpr& target = s.targets[0];
  std::vector<const PyExpr*> targets;
  if (target.kind == PyExprKind::kName) {
    targets.push_back(&target);
  } else if (target.kind == PyExprKind::kTuple || target.kind == PyExprKind::kList) {
    for (const PyExpr& t : target.elts) {
      if (t.kind != PyExprKind::kName) return Error(t.loc, "loop variables must be plain names");
      targets.push_back(&t);
    }
  }
  if (targets.size() != domain.size()) {
    return Error(target.loc,
                 absl::StrCat("T.Persistent has a ", domain.size(), "-d domain but the loop binds ",
                              targets.size(), " variable", targets.size() == 1 ? "" : "s"));
  }

  const ArithContext ctx = Ctx(loc);
  auto op = [&](std::string_view o, const Value& a, const Value& b) {
    return ApplyBinary(ctx, o, a, b);
  };
  const Value& last = domain.back();
  // 1. The group size and the padded domain.
  ASSIGN_OR_RETURN(Value g_min, ApplyMinMax(ctx, false, group, last));
  ASSIGN_OR_RETURN(Value g, ApplyMinMax(ctx, true, Value::Int(1), g_min));
  ASSIGN_OR_RETURN(Value last_plus, op("+", last, g));
  ASSIGN_OR_RETURN(Value last_minus, op("-", last_plus, Value::Int(1)));
  ASSIGN_OR_RETURN(Value groups, op("//", last_minus, g));
  std::vector<Value> padded = {groups};
  for (size_t k = 0; k + 1 < domain.size(); ++k) padded.push_back(domain[k]);
  padded.push_back(g);
  // 2. The waves.
  Value size = padded[0];
  for (size_t k = 1; k < padded.size(); ++k) {
    ASSIGN_OR_RETURN(size, op("*", size, padded[k]));
  }
  ASSIGN_OR_RETURN(Value size_plus, op("+", size, wave));
  ASSIGN_OR_RETURN(Value size_minus, op("-", size_plus, Value::Int(1)));
  ASSIGN_OR_RETURN(Value waves, op("//", size_minus, wave));
  if (waves.kind == ValueKind::kInt && waves.i > ir::kInt32Max) {
    return Error(loc,
                 absl::StrCat("T.Persistent runs ", waves.i, " waves; at most ", ir::kInt32Max));
  }
  ir::Stmt st;
  st.kind = ir::StmtKind::kFor;
  st.for_kind = ir::ForKind::kSerial;
  st.loc = s.loc;
  const std::string w = UniqueName("w");
  st.loop_vars.push_back(w);
  ASSIGN_OR_RETURN(ir::Expr extent, ToExpr(ctx, waves));
  st.extents.push_back(ir::Simplify(extent));

  // 3. The tile of iteration w, digit by digit (the last fastest).
  Value wv = Value::Expr(ir::VarRef(w, ir::DType::kInt32, loc));
  ASSIGN_OR_RETURN(Value base, op("*", wv, wave));
  ASSIGN_OR_RETURN(Value rem, op("+", base, index));
  std::vector<Value> digits(padded.size());
  for (size_t k = padded.size(); k-- > 1;) {
    ASSIGN_OR_RETURN(digits[k], op("%", rem, padded[k]));
    ASSIGN_OR_RETURN(rem, op("//", rem, padded[k]));
  }
  digits[0] = rem;
  ASSIGN_OR_RETURN(Value first, op("*", digits[0], g));
  ASSIGN_OR_RETURN(Value last_coord, op("+", first, digits.back()));
  // 4. The guard.
  ASSIGN_OR_RETURN(Value in_range, ApplyCompare(ctx, "<", last_coord, last));
  ir::Stmt guard;
  guard.kind = ir::StmtKind::kIf;
  guard.loc = s.loc;
  ASSIGN_OR_RETURN(guard.cond, ToCondition(ctx, in_range));

  size_t mark = OpenScope();
  for (size_t k = 0; k + 1 < targets.size(); ++k) Bind(targets[k]->str, digits[k + 1]);
  Bind(targets.back()->str, last_coord);
  std::vector<ir::Stmt>* saved = sink_;
  sink_ = &guard.body;
  absl::StatusOr<Flow> flow = ExecBlock(s.body);
  sink_ = saved;
  CloseScope(mark);
  RETURN_IF_ERROR(flow.status());
  st.body.push_back(std::move(guard));
  Emit(std::move(st));
  return Flow::kNormal;
}

} // namespace kiln::frontend
