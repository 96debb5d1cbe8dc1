// `with T.Kernel(...)` and loops. Loops whose iterator is T.Parallel,
// T.Pipelined, T.serial, T.unroll, T.vectorized (or range() inside a kernel)
// become IR loops over [0, count); the Python loop variable is bound to
// `start + i * step`. Other for loops run at compile time (outside kernels).
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/args.h"
#include "compiler/frontend/evaluator.h"
#include "compiler/frontend/names.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/int_range.h"
#include "compiler/ir/limits.h"
#include "compiler/ir/simplify.h"
#include "util/status_macros.h"

namespace kiln::frontend {
namespace {

bool IsIrLoop(const std::string& name) {
  return name == "T.Parallel" || name == "T.Pipelined" || name == "T.serial" ||
         name == "T.Serial" || name == "T.unroll" || name == "T.Unroll" || name == "T.vectorized" ||
         name == "T.Vectorized";
}

// Loop variables are int32 (ir::VarRef below), so an extent beyond int32
// could not be iterated: lowering would wrap it (2**32 + 32 runs 32 times).
constexpr char kInt32Loops[] = "loop variables are int32";
constexpr char kInt32Spread[] = "lowering spreads it over the threads with int32 indices";

// The trip count of range(start, stop, step) over constants, computed without
// overflow (stop - start may not fit int64), or nullopt when it exceeds
// int32.
std::optional<int64_t> TripCount(int64_t start, int64_t stop, int64_t step) {
  if (step > 0 ? start >= stop : start <= stop) return 0;
  // The distance fits uint64 even where stop - start overflows int64.
  uint64_t distance = step > 0 ? static_cast<uint64_t>(stop) - static_cast<uint64_t>(start)
                               : static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
  uint64_t magnitude =
      step > 0 ? static_cast<uint64_t>(step) : uint64_t{0} - static_cast<uint64_t>(step);
  uint64_t n = (distance - 1) / magnitude + 1;
  if (n > static_cast<uint64_t>(ir::kInt32Max)) return std::nullopt;
  return static_cast<int64_t>(n);
}

// The Python loop variable is bound to start + i * step, built with the
// frontend's promotion rules (arith.h): i * step is int32 arithmetic when
// step fits int32, and adding start stays int32 when start fits it too. A
// constant loop whose values leave that type would wrap at run time although
// the compiler knows every value; it is refused here.
absl::Status CheckLoopValues(std::string_view file, const std::string& kind, int64_t start,
                             int64_t step, int64_t n, ir::Loc loc) {
  if (n <= 1) return absl::OkStatus(); // only `start`, a value of its own type
  auto fits32 = [](int64_t v) { return v >= ir::kInt32Min && v <= ir::kInt32Max; };
  std::optional<int64_t> span = ir::CheckedMul(n - 1, step);
  std::optional<int64_t> last = span ? ir::CheckedAdd(start, *span) : std::nullopt;
  bool ok = last.has_value();
  if (ok && fits32(step)) ok = fits32(*span) && (!fits32(start) || fits32(*last));
  if (ok) return absl::OkStatus();
  return ir::ErrorAt(file, loc,
                     absl::StrCat(kind, " loop values from ", start,
                                  last ? absl::StrCat(" to ", *last) : std::string(" on"),
                                  " do not fit the loop's ", fits32(step) ? "int32" : "int64",
                                  " index arithmetic"));
}

} // namespace

absl::StatusOr<Evaluator::Flow> Evaluator::LowerKernel(const PyStmt& with, const PyExpr& call,
                                                       const PyExpr& target) {
  if (in_kernel_) return Error(with.loc, "nested T.Kernel is not supported");
  ASSIGN_OR_RETURN(std::vector<Arg> args, EvalArgs(call));
  // A later T.Kernel block is a further kernel, launched after the ones
  // before it (ir.h: Program::next_kernels).
  if (kernel_seen_ && program_.next_kernels.size() + 1 >= static_cast<size_t>(ir::kMaxKernels)) {
    return Error(with.loc, absl::StrCat("a program has at most ", ir::kMaxKernels,
                                        " kernels (T.Kernel blocks)"));
  }
  ir::Kernel& k = kernel_seen_ ? program_.next_kernels.emplace_back() : program_.kernel;
  k.loc = with.loc;
  Value threads = Value::Int(128); // TileLang's default
  Loc threads_loc = call.loc;
  for (const Arg& a : args) {
    if (a.name.empty()) {
      ASSIGN_OR_RETURN(Value g, Materialize(a.value, a.loc));
      if (g.kind == ValueKind::kInt) {
        if (g.i <= 0 || g.i > std::numeric_limits<int32_t>::max()) {
          return Error(a.loc, absl::StrCat("grid extent must be a positive int32, got ", g.i));
        }
        k.grid.push_back(ir::IntImm(g.i, ir::DType::kInt32, a.loc));
      } else if (g.is_expr() && ir::IsInteger(g.expr->dtype)) {
        k.grid.push_back(ir::Simplify(*g.expr));
      } else {
        RETURN_IF_ERROR(CheckBound(g, a.loc));
        return Error(a.loc, absl::StrCat("grid extent must be an integer, got ", TypeName(g)));
      }
      continue;
    }
    if (a.name == "threads") {
      threads = a.value;
      threads_loc = a.loc;
    } else if (a.name == "prelude") {
      return Error(a.name_loc, "T.Kernel prelude is not supported");
    } else {
      return Error(a.name_loc,
                   absl::StrCat("T.Kernel() got an unexpected keyword argument '", a.name, "'"));
    }
  }
  if (k.grid.empty() || k.grid.size() > 3) {
    return Error(call.loc, absl::StrCat("T.Kernel takes 1 to 3 grid extents, got ", k.grid.size()));
  }
  ValueList tv = threads.is_sequence() ? threads.elts() : ValueList{threads};
  if (tv.empty() || tv.size() > 3 || threads.is_none()) {
    RETURN_IF_ERROR(CheckBound(threads, threads_loc));
    return Error(threads_loc, "threads must be an integer or a list of 1 to 3 integers");
  }
  for (const Value& t : tv) {
    if (t.kind != ValueKind::kInt) {
      return Error(threads_loc,
                   absl::StrCat("threads must be compile-time integers, got ", TypeName(t)));
    }
    if (t.i <= 0 || t.i > 1024) {
      return Error(threads_loc, absl::StrCat("thread count must be in [1, 1024], got ", t.i));
    }
    k.threads.push_back(t.i);
  }
  // Block variables.
  std::vector<const PyExpr*> names;
  if (target.kind == PyExprKind::kName) {
    names.push_back(&target);
  } else if (target.kind == PyExprKind::kTuple || target.kind == PyExprKind::kList) {
    for (const PyExpr& t : target.elts) {
      if (t.kind != PyExprKind::kName) return Error(t.loc, "block variables must be plain names");
      names.push_back(&t);
    }
    if (names.size() != k.grid.size()) {
      return Error(target.loc, absl::StrCat("T.Kernel has ", k.grid.size(), " grid dimensions but ",
                                            names.size(), " block variables are bound"));
    }
  } else if (target.kind != PyExprKind::kNone) {
    return Error(target.loc, "block variables must be plain names");
  }
  static constexpr const char* kDefault[] = {"bx", "by", "bz"};
  ValueList vars;
  for (size_t d = 0; d < k.grid.size(); ++d) {
    std::string hint = d < names.size() && names.size() == k.grid.size() ? names[d]->str
                       : d == 0 && names.size() == 1                     ? names[0]->str
                                                                         : kDefault[d];
    std::string name = UniqueName(hint);
    k.block_vars.push_back(name);
    Loc vloc = d < names.size() ? names[d]->loc : with.loc;
    vars.push_back(Value::Expr(ir::VarRef(name, ir::DType::kInt32, vloc)));
  }
  if (names.size() == 1 && target.kind == PyExprKind::kName) {
    Bind(target.str, k.grid.size() == 1 ? vars[0] : Value::Tuple(vars));
  } else {
    for (size_t d = 0; d < names.size(); ++d) Bind(names[d]->str, vars[d]);
  }
  kernel_seen_ = true;
  in_kernel_ = true;
  sink_ = &k.body;
  absl::StatusOr<Flow> flow = ExecBlock(with.body);
  in_kernel_ = false;
  sink_ = nullptr;
  RETURN_IF_ERROR(flow.status());
  return Flow::kNormal;
}

absl::StatusOr<Evaluator::Flow> Evaluator::ExecFor(const PyStmt& s) {
  if (!s.orelse.empty()) return Error(s.loc, "for-else is not supported");
  const PyExpr& iter = s.exprs[0];
  if (iter.kind == PyExprKind::kCall) {
    ASSIGN_OR_RETURN(Value callee, Eval(iter.elts[0]));
    if (callee.kind == ValueKind::kBuiltin && callee.s == "T.thread_binding") {
      ASSIGN_OR_RETURN(std::vector<Arg> args, EvalArgs(iter));
      return ExecThreadBindingFor(s, args, iter.loc);
    }
    if (callee.kind == ValueKind::kBuiltin && callee.s == "T.Persistent") {
      if (!in_kernel_) {
        return Error(iter.loc, "T.Persistent loops are only allowed inside T.Kernel");
      }
      ASSIGN_OR_RETURN(std::vector<Arg> args, EvalArgs(iter));
      return ExecPersistentFor(s, args, iter.loc);
    }
    if (callee.kind == ValueKind::kBuiltin &&
        (IsIrLoop(callee.s) || (callee.s == "range" && in_kernel_))) {
      if (!in_kernel_) {
        return Error(iter.loc, absl::StrCat(callee.s, " loops are only allowed inside T.Kernel"));
      }
      ASSIGN_OR_RETURN(std::vector<Arg> args, EvalArgs(iter));
      return LowerLoop(s, callee.s, args, iter.loc);
    }
    if (in_kernel_) {
      return Error(iter.loc, "for loops inside T.Kernel must iterate over T.Parallel, T.Pipelined, "
                             "T.serial, T.unroll, T.vectorized or range()");
    }
    ASSIGN_OR_RETURN(std::vector<Arg> args, EvalArgs(iter));
    ASSIGN_OR_RETURN(Value iterable, CallValue(callee, std::move(args), iter));
    return ExecCompileTimeFor(s, iterable);
  }
  if (in_kernel_) {
    return Error(iter.loc, "for loops inside T.Kernel must iterate over T.Parallel, T.Pipelined, "
                           "T.serial, T.unroll, T.vectorized or range()");
  }
  ASSIGN_OR_RETURN(Value iterable, Eval(iter));
  return ExecCompileTimeFor(s, iterable);
}

absl::StatusOr<Evaluator::Flow> Evaluator::LowerLoop(const PyStmt& s, const std::string& kind,
                                                     std::vector<Arg>& args, Loc loc) {
  const std::string& file = options_.file_name;
  const PyExpr& target = s.targets[0];
  ir::Stmt st;
  st.kind = ir::StmtKind::kFor;
  st.loc = s.loc;
  // Per loop variable: its IR extent and the Python value of `start` / `step`.
  struct Dim {
    ir::Expr extent;
    Value start = Value::Int(0);
    int64_t step = 1;
  };
  std::vector<Dim> dims;
  auto int_like = [](const Value& v) {
    return v.kind == ValueKind::kInt || (v.is_expr() && ir::IsInteger(v.expr->dtype));
  };
  // A range-like loop: (start, stop, step) with the same meaning as range().
  auto range_dim = [&](const std::optional<Value>& a0, const std::optional<Value>& a1,
                       const std::optional<Value>& a2, Loc aloc) -> absl::StatusOr<Dim> {
    Value start = Value::Int(0), stop;
    if (a1.has_value() && !a1->is_none()) {
      ASSIGN_OR_RETURN(start, Materialize(*a0, aloc));
      ASSIGN_OR_RETURN(stop, Materialize(*a1, aloc));
    } else {
      ASSIGN_OR_RETURN(stop, Materialize(*a0, aloc));
    }
    int64_t step = 1;
    if (a2.has_value() && !a2->is_none()) {
      if (a2->kind != ValueKind::kInt || a2->i == 0) {
        return Error(aloc, absl::StrCat(kind, " step must be a non-zero compile-time integer"));
      }
      // -2**63 has no magnitude in int64 (the trip count divides by it).
      RETURN_IF_ERROR(ir::CheckIntRange(a2->i, -std::numeric_limits<int64_t>::max(),
                                        std::numeric_limits<int64_t>::max(), file, aloc,
                                        absl::StrCat(kind, " step")));
      step = a2->i;
    }
    if (!int_like(start) || !int_like(stop)) {
      RETURN_IF_ERROR(CheckBound(start, aloc));
      RETURN_IF_ERROR(CheckBound(stop, aloc));
      return Error(aloc, absl::StrCat(kind, " bounds must be integers, got ", TypeName(start),
                                      " and ", TypeName(stop)));
    }
    Dim d;
    d.start = start;
    d.step = step;
    if (start.kind == ValueKind::kInt && stop.kind == ValueKind::kInt) {
      std::optional<int64_t> n = TripCount(start.i, stop.i, step);
      if (!n) {
        return Error(aloc,
                     absl::StrCat(kind, "(", start.i, ", ", stop.i, ", ", step, ") runs more than ",
                                  ir::kInt32Max, " iterations (", kInt32Loops, ")"));
      }
      RETURN_IF_ERROR(CheckLoopValues(file, kind, start.i, step, *n, aloc));
      d.extent = ir::IntImm(*n, ir::DType::kInt32, aloc);
      return d;
    }
    ArithContext ctx = Ctx(aloc);
    Value diff;
    if (step > 0) {
      ASSIGN_OR_RETURN(diff, ApplyBinary(ctx, "-", stop, start));
    } else {
      ASSIGN_OR_RETURN(diff, ApplyBinary(ctx, "-", start, stop));
    }
    int64_t mag = step > 0 ? step : -step;
    if (mag != 1) {
      ASSIGN_OR_RETURN(diff, ApplyBinary(ctx, "+", diff, Value::Int(mag - 1)));
      ASSIGN_OR_RETURN(diff, ApplyBinary(ctx, "//", diff, Value::Int(mag)));
    }
    ASSIGN_OR_RETURN(ir::Expr e, ToExpr(ctx, diff));
    d.extent = ir::Simplify(e);
    return d;
  };

  if (kind == "T.Parallel") {
    st.for_kind = ir::ForKind::kParallel;
    int64_t parallel_space = 1; // the product of the constant extents so far
    for (const Arg& a : args) {
      if (!a.name.empty()) {
        if (a.name == "coalesced_width") continue; // a code-generation hint
        if (a.name == "loop_layout" || a.name == "prefer_async" || a.name == "annotations") {
          if (a.value.is_none()) continue;
          return Error(a.name_loc,
                       absl::StrCat("T.Parallel argument '", a.name, "' is not supported"));
        }
        return Error(a.name_loc, absl::StrCat("T.Parallel() got an unexpected keyword argument '",
                                              a.name, "'"));
      }
      ASSIGN_OR_RETURN(Value e, Materialize(a.value, a.loc));
      if (!int_like(e)) {
        RETURN_IF_ERROR(CheckBound(e, a.loc));
        return Error(a.loc, absl::StrCat("T.Parallel extents must be integers, got ", TypeName(e)));
      }
      if (e.kind == ValueKind::kInt && e.i <= 0) {
        return Error(a.loc, absl::StrCat("T.Parallel extent must be positive, got ", e.i));
      }
      if (e.kind == ValueKind::kInt) {
        // Lowering spreads the whole iteration space over the threads with
        // int32 indices that run into the layout's padding (kMaxTileSpace).
        RETURN_IF_ERROR(ir::CheckIntRange(e.i, 1, ir::kMaxTileSpace, file, a.loc,
                                          "T.Parallel extent", kInt32Spread));
        std::optional<int64_t> space = ir::CheckedMul(parallel_space, e.i);
        if (!space || *space > ir::kMaxTileSpace) {
          return Error(a.loc,
                       absl::StrCat("T.Parallel iteration space (the product of its extents) "
                                    "must be at most ",
                                    ir::kMaxTileSpace, ", got ", parallel_space, " x ", e.i, " (",
                                    kInt32Spread, ")"));
        }
        parallel_space = *space;
      }
      ASSIGN_OR_RETURN(ir::Expr x, ToExpr(Ctx(a.loc), e));
      Dim d;
      d.extent = e.is_expr() ? ir::Simplify(x) : std::move(x);
      dims.push_back(std::move(d));
    }
    if (dims.empty()) return Error(loc, "T.Parallel needs at least one extent");
  } else if (kind == "T.Pipelined") {
    std::vector<std::string_view> names = {"start", "stop", "num_stages", "order",
                                           "stage", "sync", "group",      "annotations"};
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, kind, args, names, 1));
    st.for_kind = ir::ForKind::kPipelined;
    for (size_t k = 5; k < 8; ++k) {
      const std::optional<Value>& v = m[k];
      if (v.has_value() && !v->is_none() &&
          !((v->is_sequence() || v->kind == ValueKind::kDict) && v->elts().empty())) {
        return Error(ArgLoc(args, names, k, loc),
                     absl::StrCat("T.Pipelined argument '", std::string(*(names.begin() + k)),
                                  "' is not supported"));
      }
    }
    if (m[2].has_value()) {
      if (m[2]->kind != ValueKind::kInt) {
        return Error(ArgLoc(args, names, 2, loc),
                     "num_stages must be a compile-time integer in [0, 64]");
      }
      ASSIGN_OR_RETURN(st.num_stages, ir::NarrowToInt32(m[2]->i, 0, 64, file,
                                                        ArgLoc(args, names, 2, loc), "num_stages"));
    }
    for (size_t k = 3; k <= 4; ++k) {
      if (!m[k].has_value() || m[k]->is_none()) continue;
      bool ok = m[k]->is_sequence();
      for (const Value& x : m[k]->elts()) {
        ok = ok && x.kind == ValueKind::kInt && x.i >= -1 && x.i < 1024;
      }
      if (!ok) {
        return Error(ArgLoc(args, names, k, loc),
                     absl::StrCat("T.Pipelined ", std::string(*(names.begin() + k)),
                                  " must be a list of compile-time integers"));
      }
      std::vector<int32_t>& out = k == 3 ? st.order : st.stage;
      for (const Value& x : m[k]->elts()) {
        ASSIGN_OR_RETURN(int32_t v,
                         ir::NarrowToInt32(x.i, -1, 1023, file, ArgLoc(args, names, k, loc),
                                           std::string(*(names.begin() + k))));
        out.push_back(v);
      }
    }
    ASSIGN_OR_RETURN(Dim d, range_dim(m[0], m[1], std::nullopt, ArgLoc(args, names, 0, loc)));
    // The pipeline indexes the iterations it loads ahead with int32.
    if (std::optional<int64_t> n = ir::ConstInt(d.extent)) {
      RETURN_IF_ERROR(ir::CheckIntRange(*n, 0, ir::kMaxTileSpace, file, ArgLoc(args, names, 0, loc),
                                        "T.Pipelined trip count",
                                        "the pipeline loads iterations ahead with int32 indices"));
    }
    dims.push_back(std::move(d));
  } else if (kind == "range") {
    st.for_kind = ir::ForKind::kSerial;
    for (const Arg& a : args) {
      if (!a.name.empty()) {
        return Error(a.name_loc, "range() takes no keyword arguments");
      }
    }
    if (args.empty() || args.size() > 3) {
      return Error(loc, absl::StrCat("range expected 1 to 3 arguments, got ", args.size()));
    }
    std::optional<Value> a1, a2;
    if (args.size() > 1) a1 = args[1].value;
    if (args.size() > 2) a2 = args[2].value;
    ASSIGN_OR_RETURN(Dim d, range_dim(args[0].value, a1, a2, loc));
    dims.push_back(std::move(d));
  } else {
    bool unroll = kind == "T.unroll" || kind == "T.Unroll";
    bool vectorized = kind == "T.vectorized" || kind == "T.Vectorized";
    st.for_kind = unroll ? ir::ForKind::kUnroll
                         : (vectorized ? ir::ForKind::kVectorized : ir::ForKind::kSerial);
    std::vector<std::string_view> names = {"start", "stop", "step", "annotations"};
    if (unroll) names = {"start", "stop", "step", "explicit", "unroll_factor", "annotations"};
    if (vectorized) names = {"start", "stop", "annotations"};
    ASSIGN_OR_RETURN(auto m, MatchArgs(file, loc, kind, args, names, 1));
    size_t ann = names.size() - 1;
    if (m[ann].has_value() && !m[ann]->is_none() &&
        !(m[ann]->kind == ValueKind::kDict && m[ann]->elts().empty())) {
      return Error(ArgLoc(args, names, ann, loc),
                   absl::StrCat(kind, " argument 'annotations' is not supported"));
    }
    if (unroll && m[4].has_value() && !m[4]->is_none()) {
      return Error(ArgLoc(args, names, 4, loc), "T.unroll unroll_factor is not supported");
    }
    std::optional<Value> step = vectorized ? std::nullopt : m[2];
    ASSIGN_OR_RETURN(Dim d, range_dim(m[0], m[1], step, ArgLoc(args, names, 0, loc)));
    dims.push_back(std::move(d));
  }

  // Loop variables.
  std::vector<const PyExpr*> targets;
  if (target.kind == PyExprKind::kName) {
    targets.push_back(&target);
  } else if ((target.kind == PyExprKind::kTuple || target.kind == PyExprKind::kList) &&
             st.for_kind == ir::ForKind::kParallel) {
    for (const PyExpr& t : target.elts) {
      if (t.kind != PyExprKind::kName) return Error(t.loc, "loop variables must be plain names");
      targets.push_back(&t);
    }
  } else {
    return Error(target.loc, "loop variable must be a plain name");
  }
  if (targets.size() != dims.size()) {
    return Error(target.loc,
                 absl::StrCat(kind, " has ", dims.size(), " extent", dims.size() == 1 ? "" : "s",
                              " but the loop binds ", targets.size(), " variable",
                              targets.size() == 1 ? "" : "s"));
  }
  size_t mark = OpenScope();
  absl::Status status;
  for (size_t k = 0; k < dims.size() && status.ok(); ++k) {
    std::string name = UniqueName(targets[k]->str);
    st.loop_vars.push_back(name);
    st.extents.push_back(std::move(dims[k].extent));
    Value var = Value::Expr(ir::VarRef(name, ir::DType::kInt32, targets[k]->loc));
    Value bound = var;
    bool zero_start = dims[k].start.kind == ValueKind::kInt && dims[k].start.i == 0;
    if (dims[k].step != 1) {
      absl::StatusOr<Value> scaled =
          ApplyBinary(Ctx(targets[k]->loc), "*", var, Value::Int(dims[k].step));
      if (!scaled.ok()) {
        status = scaled.status();
        break;
      }
      bound = *std::move(scaled);
    }
    if (!zero_start) {
      absl::StatusOr<Value> shifted = ApplyBinary(Ctx(targets[k]->loc), "+", dims[k].start, bound);
      if (!shifted.ok()) {
        status = shifted.status();
        break;
      }
      bound = *std::move(shifted);
    }
    Bind(targets[k]->str, std::move(bound));
  }
  if (status.ok()) {
    std::vector<ir::Stmt>* saved = sink_;
    sink_ = &st.body;
    absl::StatusOr<Flow> flow = ExecBlock(s.body);
    sink_ = saved;
    status = flow.status();
  }
  CloseScope(mark);
  RETURN_IF_ERROR(status);
  Emit(std::move(st));
  return Flow::kNormal;
}

} // namespace kiln::frontend
