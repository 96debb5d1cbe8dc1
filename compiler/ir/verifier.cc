// The verifier walks the program twice:
//  1. A declaration pass, in program order, that checks every defined name
//     (symbol, parameter, block variable, buffer, loop variable) is a valid
//     identifier and unique in the whole program, and bounds nesting depth so
//     the second pass can recurse safely.
//  2. A scoped pass that checks uses: names in scope (buffers from their
//     alloc to the end of the enclosing body, loop variables inside their
//     loop), expression typing, region ranks and bounds, per-op scopes and
//     extents, loop and kernel shapes.
// The first error wins; it is located at the offending node (or, for nodes
// without a location, the nearest enclosing statement).
#include "compiler/ir/verifier.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/index_layout.h"
#include "compiler/ir/intrinsics.h"
#include "compiler/ir/ir_util.h"
#include "compiler/ir/limits.h"
#include "compiler/ir/reducer.h"
#include "compiler/ir/simplify.h"
#include "util/status_macros.h"

namespace kiln::ir {
namespace {

constexpr int kMaxExprDepth = 256; // matches the text parser and FromProto
constexpr int kMaxStmtDepth = 200;
constexpr int64_t kMaxThreads = 1024;

bool ValidDType(DType t) { return static_cast<int>(t) <= static_cast<int>(DType::kFloat8E5M2); }
bool ValidScope(Scope s) { return static_cast<int>(s) <= static_cast<int>(Scope::kBarrier); }

std::string DT(DType t) {
  return ValidDType(t) ? std::string(DTypeName(t)) : absl::StrCat("dtype#", static_cast<int>(t));
}
std::string SC(Scope s) {
  return ValidScope(s) ? std::string(ScopeName(s)) : absl::StrCat("scope#", static_cast<int>(s));
}
std::string LocText(Loc loc) { return absl::StrCat(loc.line, ":", loc.col); }
Loc Or(Loc loc, Loc fallback) { return loc.line > 0 ? loc : fallback; }

// Words the textual IR reserves (docs/design/ir-text.md): a name equal to one
// would not print back unambiguously.
const std::set<std::string>& Keywords() {
  static const auto* words = new std::set<std::string>{"program",
                                                       "attr",
                                                       "sym",
                                                       "param",
                                                       "kernel",
                                                       "grid",
                                                       "threads",
                                                       "as",
                                                       "alloc",
                                                       "copy",
                                                       "gemm",
                                                       "fill",
                                                       "reduce_sum",
                                                       "reduce_max",
                                                       "reduce_min",
                                                       "reduce_abssum",
                                                       "reduce_absmax",
                                                       "atomic_add",
                                                       "atomic_max",
                                                       "atomic_min",
                                                       "for",
                                                       "in",
                                                       "serial",
                                                       "unroll",
                                                       "vectorized",
                                                       "pipelined",
                                                       "parallel",
                                                       "if",
                                                       "else",
                                                       "annotate_layout",
                                                       "use_swizzle",
                                                       "true",
                                                       "false",
                                                       "inf",
                                                       "nan",
                                                       "min",
                                                       "max",
                                                       "select",
                                                       "cast",
                                                       "thread_idx",
                                                       "exp",
                                                       "exp2",
                                                       "log",
                                                       "log2",
                                                       "sqrt",
                                                       "rsqrt",
                                                       "abs",
                                                       "pow",
                                                       "tanh",
                                                       "floor",
                                                       "ceil",
                                                       "sin",
                                                       "cos",
                                                       "round",
                                                       "trunc",
                                                       "sigmoid",
                                                       "loc"};
  return *words;
}

// The statement words of TileLang's Hopper synchronization.
bool IsHopperKeyword(const std::string& name) {
  return name == "ws" || name == "tma_copy" || name == "barrier_arrive" || name == "barrier_wait" ||
         name == "barrier_expect_tx" || name == "wait_wgmma";
}

bool IsIdentifier(const std::string& s) {
  if (s.empty() || s.size() > 256) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  }
  return true;
}

std::string BinOpText(BinOp op) {
  switch (op) {
  case BinOp::kAdd:
    return "+";
  case BinOp::kSub:
    return "-";
  case BinOp::kMul:
    return "*";
  case BinOp::kDiv:
    return "/";
  case BinOp::kFloorDiv:
    return "//";
  case BinOp::kFloorMod:
    return "%";
  case BinOp::kMin:
    return "min";
  case BinOp::kMax:
    return "max";
  case BinOp::kEq:
    return "==";
  case BinOp::kNe:
    return "!=";
  case BinOp::kLt:
    return "<";
  case BinOp::kLe:
    return "<=";
  case BinOp::kGt:
    return ">";
  case BinOp::kGe:
    return ">=";
  case BinOp::kAnd:
    return "&&";
  case BinOp::kOr:
    return "||";
  case BinOp::kBitAnd:
    return "&";
  case BinOp::kBitOr:
    return "|";
  case BinOp::kBitXor:
    return "^";
  case BinOp::kShl:
    return "<<";
  case BinOp::kShr:
    return ">>";
  }
  return absl::StrCat("op#", static_cast<int>(op));
}

// Short rendering of an (already simplified) extent for messages.
std::string ExprText(const Expr& e, int depth = 0) {
  if (depth > 8) return "...";
  switch (e.kind) {
  case ExprKind::kInt:
    return absl::StrCat(e.ival);
  case ExprKind::kFloat:
    return absl::StrCat(e.fval);
  case ExprKind::kVar:
    return e.name;
  case ExprKind::kBinary:
    if (e.args.size() == 2) {
      return absl::StrCat("(", ExprText(e.args[0], depth + 1), " ", BinOpText(e.bop), " ",
                          ExprText(e.args[1], depth + 1), ")");
    }
    break;
  default:
    break;
  }
  return "<expr>";
}

std::string Extent(const Expr& e) {
  std::optional<int64_t> c = ConstInt(e);
  if (c) return absl::StrCat(*c);
  std::string s = ExprText(Simplify(e));
  if (s.size() > 2 && s.front() == '(' && s.back() == ')') s = s.substr(1, s.size() - 2);
  return s;
}

bool ProvablyOne(const Expr& e) {
  std::optional<int64_t> c = ConstInt(e);
  return c && *c == 1;
}

// Different for every value of the variables: two unequal constants, or a
// difference that simplifies to a nonzero constant.
bool ProvablyDifferent(const Expr& a, const Expr& b) {
  std::optional<int64_t> ca = ConstInt(a), cb = ConstInt(b);
  if (ca && cb) return *ca != *cb;
  if (a.dtype != b.dtype || !ValidDType(a.dtype) || !IsInteger(a.dtype)) return false;
  std::optional<int64_t> d = ConstInt(Binary(BinOp::kSub, a, b));
  return d && *d != 0;
}

std::string Plural(size_t n, const std::string& word) {
  if (n == 1) return absl::StrCat(n, " ", word);
  return absl::StrCat(n, " ", word == "index" ? std::string("indices") : word + "s");
}

class Verifier {
 public:
  explicit Verifier(const Program& p) : p_(p) {}

  absl::Status Run() {
    RETURN_IF_ERROR(DeclarePass());
    return UsePass();
  }

 private:
  enum class Kind { kSymbol, kTensor, kScalar, kBlockVar, kBuffer, kLoopVar };
  struct Def {
    Kind kind;
    DType dtype;
    const Buffer* buffer = nullptr;
  };

  absl::Status Err(Loc loc, const std::string& msg) const {
    return ErrorAt(p_.source_name, loc, msg);
  }

  // ---- Pass 1: declarations ------------------------------------------------

  absl::Status Declare(const std::string& name, Loc loc, const std::string& what) {
    if (!IsIdentifier(name)) {
      return Err(loc, absl::StrCat(what, " name '", name,
                                   "' is not a valid identifier (letters, digits and '_', "
                                   "not starting with a digit)"));
    }
    if (Keywords().count(name) || IsHopperKeyword(name)) {
      return Err(loc,
                 absl::StrCat(what, " name '", name, "' is reserved in the tile IR; rename it"));
    }
    auto [it, inserted] = declared_.emplace(name, loc);
    if (!inserted) {
      std::string where =
          it->second.line > 0 ? absl::StrCat(" (first defined at ", LocText(it->second), ")") : "";
      return Err(loc, absl::StrCat("duplicate name '", name, "'", where,
                                   "; names must be unique in a program"));
    }
    return absl::OkStatus();
  }

  absl::Status DeclareStmts(const std::vector<Stmt>& stmts, int depth) {
    for (const Stmt& s : stmts) {
      if (depth > kMaxStmtDepth) {
        return Err(s.loc, absl::StrCat("statements are nested too deeply (more than ",
                                       kMaxStmtDepth, " levels)"));
      }
      if (s.kind == StmtKind::kAlloc) {
        RETURN_IF_ERROR(Declare(s.buffer.name, Or(s.buffer.loc, s.loc), "buffer"));
      } else if (s.kind == StmtKind::kFor) {
        for (const std::string& v : s.loop_vars)
          RETURN_IF_ERROR(Declare(v, s.loc, "loop variable"));
      }
      RETURN_IF_ERROR(DeclareStmts(s.body, depth + 1));
      RETURN_IF_ERROR(DeclareStmts(s.else_body, depth + 1));
    }
    return absl::OkStatus();
  }

  absl::Status DeclarePass() {
    for (const Symbol& s : p_.symbols) RETURN_IF_ERROR(Declare(s.name, s.loc, "symbol"));
    for (const Param& prm : p_.params) {
      RETURN_IF_ERROR(
          Declare(prm.buffer.name, prm.buffer.loc, prm.is_workspace ? "workspace" : "parameter"));
      if (prm.buffer.index_layout) {
        for (const std::string& v : prm.buffer.index_layout->vars) {
          RETURN_IF_ERROR(Declare(v, prm.buffer.index_layout->loc, "layout variable"));
        }
      }
    }
    for (const std::string& v : p_.kernel.block_vars) {
      RETURN_IF_ERROR(Declare(v, p_.kernel.loc, "block variable"));
    }
    RETURN_IF_ERROR(CheckUserNames());
    return DeclareStmts(p_.kernel.body, 0);
  }

  // The names a launcher binds (ir.h): identifiers, distinct among the
  // symbols' and parameters' user names. The text IR's keywords are fine
  // here; only IR names must avoid them.
  absl::Status CheckUserNames() {
    std::map<std::string, std::string> seen; // user name -> what has it
    auto check = [&](const std::string& user_name, const std::string& name, Loc loc,
                     const char* what) -> absl::Status {
      const std::string user = user_name.empty() ? name : user_name;
      const std::string who = absl::StrCat(what, " '", name, "'");
      if (!IsIdentifier(user)) {
        return Err(loc, absl::StrCat(who, ": its user name is not a valid identifier (letters, "
                                          "digits and '_', not starting with a digit)"));
      }
      auto [it, inserted] = seen.emplace(user, who);
      if (!inserted) {
        return Err(loc, absl::StrCat(who, " and ", it->second, " have the same user name '", user,
                                     "'; a kernel's symbols and parameters need distinct names"));
      }
      return absl::OkStatus();
    };
    for (const Symbol& s : p_.symbols) RETURN_IF_ERROR(check(s.user_name, s.name, s.loc, "symbol"));
    for (const Param& prm : p_.params) {
      RETURN_IF_ERROR(check(prm.user_name, prm.buffer.name, prm.buffer.loc,
                            prm.is_workspace ? "workspace" : "parameter"));
    }
    return absl::OkStatus();
  }

  // ---- Pass 2: uses ----------------------------------------------------------

  absl::Status Bind(const std::string& name, Def def) {
    scope_[name] = def;
    return absl::OkStatus();
  }

  absl::Status UnknownName(const std::string& name, Loc loc) const {
    auto it = declared_.find(name);
    if (it != declared_.end()) {
      std::string where =
          it->second.line > 0 ? absl::StrCat(" (defined at ", LocText(it->second), ")") : "";
      return Err(loc, absl::StrCat("'", name, "' is not in scope here", where,
                                   "; loop variables are visible only inside their loop and "
                                   "buffers only after their allocation"));
    }
    return Err(loc, absl::StrCat("undefined name '", name, "'"));
  }

  absl::StatusOr<const Buffer*> LookupBuffer(const std::string& name, Loc loc,
                                             const std::string& what) const {
    auto it = scope_.find(name);
    if (it == scope_.end()) return UnknownName(name, loc);
    if (it->second.buffer == nullptr) {
      return Err(loc, absl::StrCat(what, ": '", name, "' is not a buffer"));
    }
    return it->second.buffer;
  }

  absl::Status CheckDType(DType t, Loc loc) const {
    if (!ValidDType(t)) return Err(loc, absl::StrCat("invalid dtype #", static_cast<int>(t)));
    return absl::OkStatus();
  }

  // The recursion over statements (CheckStmts, CheckStmt, CheckFor) and
  // expressions (CheckExpr) only dispatches: each node's own checks, with
  // their messages, run out of line, so that the frames a deep program
  // stacks up stay small (under AddressSanitizer, whose frames hold every
  // temporary's redzones, the inlined checks made 200 nested loops around a
  // 256-level expression need 8 MiB; docs/design/ir-text.md, Limits).
  absl::Status CheckExpr(const Expr& e, Loc at, int depth) const {
    const Loc loc = Or(e.loc, at);
    if (depth > kMaxExprDepth) return TooDeep(loc);
    RETURN_IF_ERROR(CheckDType(e.dtype, loc));
    for (const Expr& a : e.args) RETURN_IF_ERROR(CheckExpr(a, loc, depth + 1));
    return CheckExprNode(e, loc);
  }

  ABSL_ATTRIBUTE_NOINLINE absl::Status TooDeep(Loc loc) const {
    return Err(loc, absl::StrCat("expression is nested too deeply (more than ", kMaxExprDepth,
                                 " levels)"));
  }

  // One expression node's checks; its operands are checked already.
  ABSL_ATTRIBUTE_NOINLINE absl::Status CheckExprNode(const Expr& e, Loc loc) const {
    auto arity = [&](size_t n, const std::string& what) -> absl::Status {
      if (e.args.size() != n) {
        return Err(loc,
                   absl::StrCat(what, " takes ", Plural(n, "operand"), ", got ", e.args.size()));
      }
      return absl::OkStatus();
    };
    switch (e.kind) {
    case ExprKind::kInt:
      if (IsFloat(e.dtype)) {
        return Err(loc, absl::StrCat("integer literal ", e.ival, " has float dtype ", DT(e.dtype)));
      }
      return arity(0, "a literal");
    case ExprKind::kFloat:
      if (!IsFloat(e.dtype)) {
        return Err(loc,
                   absl::StrCat("float literal ", e.fval, " has non-float dtype ", DT(e.dtype)));
      }
      return arity(0, "a literal");
    case ExprKind::kVar:
      return CheckVar(e, loc);
    case ExprKind::kLoad: {
      ASSIGN_OR_RETURN(const Buffer* buf, LookupBuffer(e.name, loc, "load"));
      RETURN_IF_ERROR(NotBarrier(*buf, loc, "a load"));
      if (e.args.size() != buf->shape.size()) {
        return Err(loc,
                   absl::StrCat("load of '", e.name, "' has ", Plural(e.args.size(), "index"),
                                " but the buffer has ", Plural(buf->shape.size(), "dimension")));
      }
      for (const Expr& idx : e.args) {
        RETURN_IF_ERROR(CheckIntegral(idx, loc, absl::StrCat("index of '", e.name, "'")));
      }
      if (e.dtype != buf->dtype) {
        return Err(loc, absl::StrCat("load of '", e.name, "' has dtype ", DT(e.dtype),
                                     " but the buffer holds ", DT(buf->dtype)));
      }
      return absl::OkStatus();
    }
    case ExprKind::kBinary:
      return CheckBinary(e, loc);
    case ExprKind::kUnary: {
      RETURN_IF_ERROR(arity(1, "a unary operator"));
      const DType x = e.args[0].dtype;
      switch (e.uop) {
      case UnOp::kNot:
        if (x != DType::kBool || e.dtype != DType::kBool) {
          return Err(loc, absl::StrCat("'!' needs a bool operand, got ", DT(x)));
        }
        return absl::OkStatus();
      case UnOp::kNeg:
        if (IsBool(x)) return Err(loc, "unary '-' cannot be applied to a bool");
        break;
      case UnOp::kBitNot:
        if (!IsInteger(x)) {
          return Err(loc, absl::StrCat("'~' needs an integer operand, got ", DT(x)));
        }
        break;
      default:
        return Err(loc, absl::StrCat("unknown unary operator #", static_cast<int>(e.uop)));
      }
      if (e.dtype != x) {
        return Err(loc, absl::StrCat("unary operator yields ", DT(e.dtype), " from a ", DT(x),
                                     " operand; the dtypes must match"));
      }
      return absl::OkStatus();
    }
    case ExprKind::kCall: {
      if (static_cast<int>(e.fn) > static_cast<int>(Intrinsic::kReinterpret)) {
        return Err(loc, absl::StrCat("unknown intrinsic #", static_cast<int>(e.fn)));
      }
      RETURN_IF_ERROR(arity(e.fn == Intrinsic::kPow ? 2 : 1, "this intrinsic"));
      if (e.fn == Intrinsic::kReinterpret) {
        const DType from = e.args[0].dtype;
        if (IsBool(from) || IsBool(e.dtype) || DTypeBits(from) != DTypeBits(e.dtype)) {
          return Err(loc, absl::StrCat("reinterpret needs two non-bool dtypes of the same width, "
                                       "got ",
                                       DT(from), " as ", DT(e.dtype)));
        }
        return absl::OkStatus();
      }
      for (const Expr& a : e.args) {
        if (a.dtype != e.dtype) {
          return Err(loc, absl::StrCat("intrinsic argument has dtype ", DT(a.dtype),
                                       " but the call yields ", DT(e.dtype), "; insert a cast"));
        }
      }
      if (!IsFloat(e.dtype) && !(e.fn == Intrinsic::kAbs && IsInteger(e.dtype))) {
        return Err(loc, absl::StrCat("math intrinsics need float arguments, got ", DT(e.dtype)));
      }
      return absl::OkStatus();
    }
    case ExprKind::kCast:
      return arity(1, "a cast");
    case ExprKind::kSelect: {
      RETURN_IF_ERROR(arity(3, "select"));
      if (e.args[0].dtype != DType::kBool) {
        return Err(loc, absl::StrCat("select condition must be bool, got ", DT(e.args[0].dtype)));
      }
      if (e.args[1].dtype != e.dtype || e.args[2].dtype != e.dtype) {
        return Err(loc, absl::StrCat("select arms have dtypes ", DT(e.args[1].dtype), " and ",
                                     DT(e.args[2].dtype), " but the select yields ", DT(e.dtype),
                                     "; the dtypes must match"));
      }
      return absl::OkStatus();
    }
    case ExprKind::kThreadIdx: {
      RETURN_IF_ERROR(arity(0, "thread_idx"));
      if (!in_kernel_) return Err(loc, "thread_idx is only available inside the kernel");
      if (e.ival < 0 || e.ival >= static_cast<int64_t>(p_.kernel.threads.size())) {
        return Err(loc, absl::StrCat("thread_idx(", e.ival, ") is out of range: the kernel has ",
                                     Plural(p_.kernel.threads.size(), "thread dimension")));
      }
      if (!IsInteger(e.dtype)) return Err(loc, "thread_idx must have an integer dtype");
      return absl::OkStatus();
    }
    case ExprKind::kAddress:
      // Call arguments are checked by CheckAddress and never reach here.
      return Err(loc, absl::StrCat("an address (&", e.name,
                                   "[...]) is only valid as an argument of a call statement"));
    }
    return Err(loc, absl::StrCat("unknown expression kind #", static_cast<int>(e.kind)));
  }

  // Thread IR: &BUF[i] with one flat element index. After lowering, local
  // and shared buffers are 1-D, but global tensors keep their shape, so the
  // index count is not compared with the buffer's rank.
  absl::Status CheckAddress(const Expr& e, Loc at) const {
    const Loc loc = Or(e.loc, at);
    RETURN_IF_ERROR(CheckDType(e.dtype, loc));
    ASSIGN_OR_RETURN(const Buffer* buf, LookupBuffer(e.name, loc, "address"));
    if (e.args.size() != 1) {
      return Err(loc, absl::StrCat("address of '", e.name, "' takes 1 flat element index, got ",
                                   e.args.size()));
    }
    RETURN_IF_ERROR(CheckIntegral(e.args[0], loc, absl::StrCat("index of '&", e.name, "'")));
    if (e.dtype != buf->dtype) {
      return Err(loc, absl::StrCat("address of '", e.name, "' has dtype ", DT(e.dtype),
                                   " but the buffer holds ", DT(buf->dtype)));
    }
    return absl::OkStatus();
  }

  // Thread IR: a call of an intrinsic from the closed table, with arguments
  // of the kinds the table gives.
  absl::Status CheckCall(const Stmt& s) const {
    const IntrinsicInfo* info = FindIntrinsic(s.name);
    if (info == nullptr) return Err(s.loc, absl::StrCat("unknown intrinsic '", s.name, "'"));
    if (s.indices.size() != info->args.size()) {
      return Err(s.loc, absl::StrCat("'", s.name, "' takes ", Plural(info->args.size(), "argument"),
                                     ", got ", s.indices.size()));
    }
    for (size_t i = 0; i < s.indices.size(); ++i) {
      const Expr& a = s.indices[i];
      const Loc loc = Or(a.loc, s.loc);
      const std::string which = absl::StrCat("argument ", i + 1, " of '", s.name, "'");
      switch (info->args[i]) {
      case IntrinsicArg::kAddress:
        if (a.kind != ExprKind::kAddress) {
          return Err(loc, absl::StrCat(which, " must be an address (&BUF[i])"));
        }
        RETURN_IF_ERROR(CheckAddress(a, s.loc));
        break;
      case IntrinsicArg::kValue:
        if (a.kind == ExprKind::kAddress) {
          return Err(loc, absl::StrCat(which, " must be a value, not an address"));
        }
        RETURN_IF_ERROR(CheckExpr(a, s.loc, 0));
        break;
      case IntrinsicArg::kConstInt:
        if (a.kind != ExprKind::kInt || !IsInteger(a.dtype)) {
          return Err(loc, absl::StrCat(which, " must be an integer literal"));
        }
        RETURN_IF_ERROR(CheckExpr(a, s.loc, 0));
        break;
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckVar(const Expr& e, Loc loc) const {
    if (!e.args.empty()) return Err(loc, "a variable takes no operands");
    auto it = scope_.find(e.name);
    if (it == scope_.end()) return UnknownName(e.name, loc);
    const Def& d = it->second;
    switch (d.kind) {
    case Kind::kTensor:
      return Err(loc, absl::StrCat("'", e.name, "' is a tensor; index it as ", e.name, "[...]"));
    case Kind::kBuffer:
      if (d.buffer->scope != Scope::kVar) {
        return Err(loc, absl::StrCat("'", e.name, "' is a ", SC(d.buffer->scope),
                                     " buffer; index it as ", e.name, "[...]"));
      }
      [[fallthrough]];
    case Kind::kSymbol:
    case Kind::kScalar:
      if (e.dtype != d.dtype) {
        return Err(loc, absl::StrCat("'", e.name, "' is used as ", DT(e.dtype), " but is declared ",
                                     DT(d.dtype)));
      }
      return absl::OkStatus();
    case Kind::kBlockVar:
    case Kind::kLoopVar:
      if (!IsInteger(e.dtype)) {
        return Err(loc, absl::StrCat("loop or block variable '", e.name,
                                     "' must have an integer dtype, got ", DT(e.dtype)));
      }
      return absl::OkStatus();
    }
    return absl::OkStatus();
  }

  absl::Status CheckBinary(const Expr& e, Loc loc) const {
    const std::string op = BinOpText(e.bop);
    if (static_cast<int>(e.bop) > static_cast<int>(BinOp::kShr)) {
      return Err(loc, absl::StrCat("unknown binary operator #", static_cast<int>(e.bop)));
    }
    if (e.args.size() != 2) {
      return Err(loc, absl::StrCat("'", op, "' takes 2 operands, got ", e.args.size()));
    }
    const DType a = e.args[0].dtype, b = e.args[1].dtype;
    if (a != b) {
      return Err(loc, absl::StrCat("operands of '", op, "' have different dtypes ", DT(a), " and ",
                                   DT(b), "; insert a cast"));
    }
    if (IsLogical(e.bop)) {
      if (a != DType::kBool) {
        return Err(loc, absl::StrCat("operands of '", op, "' must be bool, got ", DT(a)));
      }
    } else if (e.bop == BinOp::kShl || e.bop == BinOp::kShr) {
      if (!IsInteger(a)) {
        return Err(loc, absl::StrCat("operands of '", op, "' must be integers, got ", DT(a)));
      }
    } else if (e.bop == BinOp::kBitAnd || e.bop == BinOp::kBitOr || e.bop == BinOp::kBitXor) {
      if (!IsInteger(a) && !IsBool(a)) {
        return Err(loc, absl::StrCat("operands of '", op, "' must be integers, got ", DT(a)));
      }
    } else if (!IsComparison(e.bop) && IsBool(a) && e.bop != BinOp::kMin && e.bop != BinOp::kMax) {
      return Err(loc, absl::StrCat("arithmetic '", op, "' cannot be applied to bool operands"));
    }
    const DType want = (IsComparison(e.bop) || IsLogical(e.bop)) ? DType::kBool : a;
    if (e.dtype != want) {
      return Err(loc, absl::StrCat("'", op, "' on ", DT(a), " operands yields ", DT(want), ", not ",
                                   DT(e.dtype)));
    }
    return absl::OkStatus();
  }

  // Checks an expression that must be an integer: an index, extent or shape.
  absl::Status CheckIntegral(const Expr& e, Loc at, const std::string& what) const {
    RETURN_IF_ERROR(CheckExpr(e, at, 0));
    if (!IsInteger(e.dtype)) {
      return Err(Or(e.loc, at), absl::StrCat(what, " must be an integer, got ", DT(e.dtype)));
    }
    return absl::OkStatus();
  }

  absl::Status CheckBool(const Expr& e, Loc at, const std::string& what) const {
    RETURN_IF_ERROR(CheckExpr(e, at, 0));
    if (e.dtype != DType::kBool) {
      return Err(Or(e.loc, at), absl::StrCat(what, " must be bool, got ", DT(e.dtype)));
    }
    return absl::OkStatus();
  }

  absl::Status CheckShape(const Buffer& b, Loc loc) const {
    RETURN_IF_ERROR(CheckDType(b.dtype, loc));
    if (!ValidScope(b.scope)) {
      return Err(loc, absl::StrCat("buffer '", b.name, "' has invalid scope #",
                                   static_cast<int>(b.scope)));
    }
    if (b.shape.empty()) return Err(loc, absl::StrCat("buffer '", b.name, "' has no dimensions"));
    for (size_t d = 0; d < b.shape.size(); ++d) {
      RETURN_IF_ERROR(CheckIntegral(b.shape[d], loc, absl::StrCat("extent of '", b.name, "'")));
      std::optional<int64_t> c = ConstInt(b.shape[d]);
      if (c && *c <= 0) {
        return Err(Or(b.shape[d].loc, loc),
                   absl::StrCat("buffer '", b.name, "' has extent ", *c, " in dimension ", d,
                                "; extents must be positive"));
      }
    }
    return absl::OkStatus();
  }

  // ---- regions and tile ops --------------------------------------------------

  absl::StatusOr<const Buffer*> CheckRegion(const Region& r, Loc at, const std::string& op,
                                            const std::string& role) const {
    const Loc loc = Or(r.loc, at);
    ASSIGN_OR_RETURN(const Buffer* buf, LookupBuffer(r.buffer, loc, op));
    RETURN_IF_ERROR(NotBarrier(*buf, loc, op));
    if (r.ranges.size() != buf->shape.size()) {
      return Err(loc, absl::StrCat(op, ": ", role, " region of '", r.buffer, "' has ",
                                   Plural(r.ranges.size(), "range"), " but the buffer has ",
                                   Plural(buf->shape.size(), "dimension")));
    }
    for (size_t d = 0; d < r.ranges.size(); ++d) {
      const Range& range = r.ranges[d];
      RETURN_IF_ERROR(CheckIntegral(range.min, loc, absl::StrCat(op, ": region start")));
      RETURN_IF_ERROR(CheckIntegral(range.extent, loc, absl::StrCat(op, ": region extent")));
      std::optional<int64_t> ext = ConstInt(range.extent);
      if (ext && *ext <= 0) {
        return Err(loc, absl::StrCat(op, ": ", role, " region of '", r.buffer, "' has extent ",
                                     *ext, " in dimension ", d, "; extents must be positive"));
      }
      // Out-of-bounds tiles of on-chip buffers are always bugs (global
      // accesses may be predicated at the tensor's edge).
      std::optional<int64_t> min = ConstInt(range.min);
      std::optional<int64_t> size = ConstInt(buf->shape[d]);
      if (buf->scope != Scope::kGlobal && ext && min && size && (*min < 0 || *min > *size - *ext)) {
        return Err(loc,
                   absl::StrCat(op, ": ", role, " region [", *min, ", ", *min + *ext, ") of '",
                                r.buffer, "' exceeds its extent ", *size, " in dimension ", d));
      }
    }
    return buf;
  }

  // Compares the non-unit extents of two regions in order, where provable.
  absl::Status MatchExtents(const std::vector<Expr>& src, const std::vector<int>& src_dims,
                            const std::vector<Expr>& dst, const std::vector<int>& dst_dims, Loc loc,
                            const std::string& op, const std::string& src_role,
                            const std::string& dst_role) const {
    std::vector<size_t> s, d;
    for (size_t i = 0; i < src.size(); ++i) {
      if (!ProvablyOne(src[i])) s.push_back(i);
    }
    for (size_t i = 0; i < dst.size(); ++i) {
      if (!ProvablyOne(dst[i])) d.push_back(i);
    }
    if (s.size() == d.size()) {
      for (size_t k = 0; k < s.size(); ++k) {
        const Expr& a = src[s[k]];
        const Expr& b = dst[d[k]];
        if (!ProvablyDifferent(a, b)) continue;
        int sd = src_dims[s[k]], dd = dst_dims[d[k]];
        std::string where = sd == dd ? absl::StrCat(" in dimension ", dd)
                                     : absl::StrCat(" (", src_role, " dimension ", sd, ", ",
                                                    dst_role, " dimension ", dd, ")");
        return Err(loc, absl::StrCat(op, ": ", src_role, " extent ", Extent(a), " does not match ",
                                     dst_role, " extent ", Extent(b), where));
      }
      return absl::OkStatus();
    }
    // Different counts are an error only when every extent is a known
    // constant (a symbolic one could still be 1).
    auto all_const = [](const std::vector<Expr>& v, const std::vector<size_t>& idx) {
      for (size_t i : idx) {
        if (!ConstInt(v[i])) return false;
      }
      return true;
    };
    if (!all_const(src, s) || !all_const(dst, d)) return absl::OkStatus();
    auto list = [](const std::vector<Expr>& v, const std::vector<size_t>& idx) {
      std::vector<std::string> out;
      for (size_t i : idx) out.push_back(Extent(v[i]));
      return absl::StrCat("[", absl::StrJoin(out, ", "), "]");
    };
    return Err(loc, absl::StrCat(op, ": ", src_role, " has ", Plural(s.size(), "non-unit extent"),
                                 " ", list(src, s), " but ", dst_role, " has ", d.size(), " ",
                                 list(dst, d), "; the tiles must have the same shape"));
  }

  static std::vector<Expr> Extents(const Region& r) {
    std::vector<Expr> out;
    for (const Range& range : r.ranges) out.push_back(range.extent);
    return out;
  }
  static std::vector<int> Iota(size_t n) {
    std::vector<int> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<int>(i);
    return v;
  }

  absl::Status Operands(const Stmt& s, size_t n, const std::string& op) const {
    if (s.regions.size() != n) {
      return Err(s.loc,
                 absl::StrCat(op, " takes ", Plural(n, "operand"), ", got ", s.regions.size()));
    }
    return absl::OkStatus();
  }

  // Barrier buffers hold mbarrier state: only the barrier statements and
  // tma_copy may name them.
  absl::Status NotBarrier(const Buffer& b, Loc loc, const std::string& op) const {
    if (b.scope != Scope::kBarrier) return absl::OkStatus();
    return Err(loc, absl::StrCat(op, " cannot use barrier '", b.name,
                                 "'; barriers are only for T.mbarrier_* / T.barrier_* calls and "
                                 "T.tma_copy's barrier="));
  }

  // A barrier operand: one element of a barrier buffer.
  absl::Status CheckBarrierOperand(const Region& r, Loc at, const std::string& op) const {
    const Loc loc = Or(r.loc, at);
    ASSIGN_OR_RETURN(const Buffer* buf, LookupBuffer(r.buffer, loc, op));
    if (buf->scope != Scope::kBarrier) {
      return Err(loc, absl::StrCat(op, ": '", r.buffer, "' is a ", SC(buf->scope),
                                   " buffer, not a barrier (allocate it with T.alloc_barrier)"));
    }
    if (r.ranges.size() != 1 || !ProvablyOne(r.ranges[0].extent)) {
      return Err(loc, absl::StrCat(op, ": takes one barrier of '", r.buffer,
                                   "' (index it: ", r.buffer, "[i])"));
    }
    RETURN_IF_ERROR(CheckIntegral(r.ranges[0].min, loc, absl::StrCat(op, ": barrier index")));
    std::optional<int64_t> i = ConstInt(r.ranges[0].min);
    std::optional<int64_t> n = ConstInt(buf->shape[0]);
    if (i && n && (*i < 0 || *i >= *n)) {
      return Err(loc, absl::StrCat(op, ": barrier index ", *i, " is outside '", r.buffer, "' (",
                                   Plural(*n, "barrier"), ")"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckHopperStmt(const Stmt& s) const {
    const char* op = s.kind == StmtKind::kTmaCopy         ? "tma_copy"
                     : s.kind == StmtKind::kBarrierArrive ? "barrier_arrive"
                     : s.kind == StmtKind::kBarrierWait   ? "barrier_wait"
                                                          : "barrier_expect_tx";
    if (s.kind == StmtKind::kTmaCopy) {
      RETURN_IF_ERROR(Operands(s, 3, op));
      ASSIGN_OR_RETURN(const Buffer* src, CheckRegion(s.regions[0], s.loc, op, "source"));
      ASSIGN_OR_RETURN(const Buffer* dst, CheckRegion(s.regions[1], s.loc, op, "destination"));
      if (src->scope != Scope::kGlobal) {
        return Err(s.loc, absl::StrCat("tma_copy: the source '", src->name,
                                       "' must be a global tensor, not ", SC(src->scope)));
      }
      if (dst->scope != Scope::kShared && dst->scope != Scope::kSharedDyn) {
        return Err(s.loc, absl::StrCat("tma_copy: the destination '", dst->name,
                                       "' must be a shared buffer, not ", SC(dst->scope)));
      }
      if (src->dtype != dst->dtype) {
        return Err(s.loc, absl::StrCat("tma_copy: source holds ", DT(src->dtype),
                                       " but destination holds ", DT(dst->dtype)));
      }
      RETURN_IF_ERROR(MatchExtents(Extents(s.regions[0]), Iota(s.regions[0].ranges.size()),
                                   Extents(s.regions[1]), Iota(s.regions[1].ranges.size()), s.loc,
                                   op, "source", "destination"));
      return CheckBarrierOperand(s.regions[2], s.loc, op);
    }
    RETURN_IF_ERROR(Operands(s, 1, op));
    RETURN_IF_ERROR(CheckBarrierOperand(s.regions[0], s.loc, op));
    if (s.kind == StmtKind::kBarrierArrive) {
      if (s.has_value) return Err(s.loc, "barrier_arrive takes no value");
      return absl::OkStatus();
    }
    if (!s.has_value) return Err(s.loc, absl::StrCat(op, ": missing value"));
    return CheckIntegral(s.value, s.loc,
                         s.kind == StmtKind::kBarrierWait ? "barrier_wait: parity"
                                                          : "barrier_expect_tx: byte count");
  }

  // ws(G, ...): distinct warpgroups of the block, not nested, not inside a
  // T.Parallel loop.
  absl::Status CheckWarpSpecialize(const Stmt& s, int depth) {
    if (ws_depth_ > 0) return Err(s.loc, "T.ws regions cannot be nested");
    if (parallel_depth_ > 0) return Err(s.loc, "T.ws cannot appear inside a T.Parallel loop");
    int64_t threads = 1;
    for (int64_t t : p_.kernel.threads) threads *= t;
    if (s.indices.empty()) return Err(s.loc, "T.ws needs at least one warpgroup index");
    std::set<int64_t> seen;
    for (const Expr& g : s.indices) {
      const Loc loc = Or(g.loc, s.loc);
      if (g.kind != ExprKind::kInt || !IsInteger(g.dtype)) {
        return Err(loc, "T.ws: warpgroup indices must be integer constants");
      }
      if (g.ival < 0 || (g.ival + 1) * 128 > threads) {
        return Err(loc, absl::StrCat("T.ws(", g.ival, "): warpgroup ", g.ival,
                                     " is outside the block (", threads, " threads: warpgroups 0..",
                                     threads / 128 - 1, " of 128 threads)"));
      }
      if (!seen.insert(g.ival).second) {
        return Err(loc, absl::StrCat("T.ws: warpgroup ", g.ival, " is listed twice"));
      }
    }
    ++ws_depth_;
    absl::Status st = CheckStmts(s.body, depth + 1);
    --ws_depth_;
    return st;
  }

  absl::Status CheckCopy(const Stmt& s) const {
    RETURN_IF_ERROR(Operands(s, 2, "copy"));
    ASSIGN_OR_RETURN(const Buffer* src, CheckRegion(s.regions[0], s.loc, "copy", "source"));
    ASSIGN_OR_RETURN(const Buffer* dst, CheckRegion(s.regions[1], s.loc, "copy", "destination"));
    if (src == dst && src->scope != Scope::kGlobal) {
      return Err(s.loc, absl::StrCat("copy: source and destination are the same ", SC(src->scope),
                                     " buffer '", src->name, "'"));
    }
    return MatchExtents(Extents(s.regions[0]), Iota(s.regions[0].ranges.size()),
                        Extents(s.regions[1]), Iota(s.regions[1].ranges.size()), s.loc, "copy",
                        "source", "destination");
  }

  absl::Status CheckGemm(const Stmt& s) const {
    RETURN_IF_ERROR(Operands(s, 3, "gemm"));
    const char* names[3] = {"A", "B", "C"};
    const Buffer* bufs[3];
    for (int k = 0; k < 3; ++k) {
      ASSIGN_OR_RETURN(bufs[k], CheckRegion(s.regions[k], s.loc, "gemm", names[k]));
      const Scope sc = bufs[k]->scope;
      const bool ok =
          k == 2 ? (sc == Scope::kFragment || sc == Scope::kLocal)
                 : (sc == Scope::kShared || sc == Scope::kSharedDyn || sc == Scope::kFragment);
      if (!ok) {
        return Err(Or(s.regions[k].loc, s.loc),
                   absl::StrCat("gemm: operand ", names[k], " ('", bufs[k]->name, "') is in ",
                                SC(sc), " scope; it must be in ",
                                k == 2 ? "fragment or local" : "shared or fragment", " scope"));
      }
      if (s.regions[k].ranges.size() < 2) {
        return Err(Or(s.regions[k].loc, s.loc),
                   absl::StrCat("gemm: operand ", names[k], " ('", bufs[k]->name,
                                "') must have at least 2 dimensions"));
      }
    }
    if (s.k_pack < 1) return Err(s.loc, absl::StrCat("gemm: k_pack must be >= 1, got ", s.k_pack));
    if (s.wg_wait < kGemmNoWait || s.wg_wait > kMaxWgmmaInFlight) {
      return Err(s.loc, absl::StrCat("gemm: wg_wait must be -1 (no wait) or 0..", kMaxWgmmaInFlight,
                                     ", got ", s.wg_wait));
    }
    if (static_cast<int>(s.policy) > static_cast<int>(GemmPolicy::kFullCol)) {
      return Err(s.loc, "gemm: invalid warp policy");
    }
    // The last two extents of each operand: A is MxK (KxM transposed), B is
    // KxN (NxK transposed), C is MxN.
    auto last2 = [&](int k, bool transposed) {
      const auto& r = s.regions[k].ranges;
      const Expr& rows = r[r.size() - 2].extent;
      const Expr& cols = r[r.size() - 1].extent;
      return transposed ? std::make_pair(cols, rows) : std::make_pair(rows, cols);
    };
    auto [am, ak] = last2(0, s.transpose_a);
    auto [bk, bn] = last2(1, s.transpose_b);
    auto [cm, cn] = last2(2, false);
    struct Pair {
      const char* dim;
      const char* x;
      const Expr* a;
      const char* y;
      const Expr* b;
    };
    const Pair pairs[] = {
        {"K", "A", &ak, "B", &bk}, {"M", "A", &am, "C", &cm}, {"N", "B", &bn, "C", &cn}};
    for (const Pair& p : pairs) {
      if (ProvablyDifferent(*p.a, *p.b)) {
        return Err(s.loc, absl::StrCat("gemm: ", p.x, " has ", p.dim, " = ", Extent(*p.a), " but ",
                                       p.y, " has ", p.dim, " = ", Extent(*p.b),
                                       " (check the shapes and transpose flags)"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckReduce(const Stmt& s) const {
    RETURN_IF_ERROR(Operands(s, 2, "reduce"));
    if (static_cast<int>(s.reduce_kind) > static_cast<int>(ReduceKind::kAbsMax)) {
      return Err(s.loc, "reduce: invalid reduction kind");
    }
    const char* roles[2] = {"source", "destination"};
    for (int k = 0; k < 2; ++k) {
      ASSIGN_OR_RETURN(const Buffer* b, CheckRegion(s.regions[k], s.loc, "reduce", roles[k]));
      if (b->scope != Scope::kFragment && b->scope != Scope::kShared &&
          b->scope != Scope::kSharedDyn) {
        return Err(Or(s.regions[k].loc, s.loc),
                   absl::StrCat("reduce: ", roles[k], " '", b->name, "' is in ", SC(b->scope),
                                " scope; it must be in fragment or shared scope"));
      }
    }
    if (s.dim == kReducerFinalizeDim) {
      // T.finalize_reducer (compiler/ir/reducer.h): a reducer, in place.
      ASSIGN_OR_RETURN(const Buffer* b, LookupBuffer(s.regions[0].buffer, s.loc, "reduce"));
      if (s.regions[0].buffer != s.regions[1].buffer || b->scope != Scope::kFragment ||
          static_cast<int>(s.reduce_kind) > static_cast<int>(ReduceKind::kMin)) {
        return Err(s.loc, "reduce: dim -1 (a reducer's finalize) needs the same fragment as "
                          "source and destination and reduce_sum, reduce_max or reduce_min");
      }
      return absl::OkStatus();
    }
    const size_t rank = s.regions[0].ranges.size();
    if (s.dim < 0 || static_cast<size_t>(s.dim) >= rank) {
      return Err(s.loc,
                 absl::StrCat("reduce: dim ", s.dim, " is out of range for the ",
                              Plural(rank, "dimension"), " of source '", s.regions[0].buffer, "'"));
    }
    std::vector<Expr> kept;
    std::vector<int> kept_dims;
    for (size_t d = 0; d < rank; ++d) {
      if (static_cast<int>(d) == s.dim) continue;
      kept.push_back(s.regions[0].ranges[d].extent);
      kept_dims.push_back(static_cast<int>(d));
    }
    return MatchExtents(kept, kept_dims, Extents(s.regions[1]), Iota(s.regions[1].ranges.size()),
                        s.loc, "reduce", "source", "destination");
  }

  absl::Status CheckValue(const Stmt& s, const Buffer& b, const std::string& op) const {
    RETURN_IF_ERROR(CheckExpr(s.value, s.loc, 0));
    if (s.value.dtype != b.dtype) {
      return Err(Or(s.value.loc, s.loc),
                 absl::StrCat(op, ": value has dtype ", DT(s.value.dtype), " but '", b.name,
                              "' holds ", DT(b.dtype), "; insert a cast"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckFor(const Stmt& s, int depth) {
    RETURN_IF_ERROR(CheckForHeader(s));
    for (const std::string& v : s.loop_vars) {
      RETURN_IF_ERROR(Bind(v, Def{Kind::kLoopVar, DType::kInt32, nullptr}));
    }
    const bool parallel = s.for_kind == ForKind::kParallel;
    parallel_depth_ += parallel;
    absl::Status st = CheckStmts(s.body, depth + 1);
    parallel_depth_ -= parallel;
    RETURN_IF_ERROR(st);
    for (const std::string& v : s.loop_vars) scope_.erase(v);
    return absl::OkStatus();
  }

  // A loop's kind, variables, extents and pipeline fields (not its body).
  ABSL_ATTRIBUTE_NOINLINE absl::Status CheckForHeader(const Stmt& s) const {
    if (static_cast<int>(s.for_kind) > static_cast<int>(ForKind::kPipelined)) {
      return Err(s.loc, "for: invalid loop kind");
    }
    const bool parallel = s.for_kind == ForKind::kParallel;
    if (parallel ? s.loop_vars.empty() : s.loop_vars.size() != 1) {
      static const char* kKinds[] = {"a serial", "an unroll", "a vectorized", "a parallel",
                                     "a pipelined"};
      return Err(s.loc, absl::StrCat(kKinds[static_cast<int>(s.for_kind)], " loop ",
                                     parallel ? "needs at least one variable"
                                              : "takes exactly one variable",
                                     ", got ", s.loop_vars.size()));
    }
    if (s.extents.size() != s.loop_vars.size()) {
      return Err(s.loc, absl::StrCat("for: ", Plural(s.loop_vars.size(), "loop variable"), " but ",
                                     Plural(s.extents.size(), "extent")));
    }
    for (const Expr& ext : s.extents) {
      RETURN_IF_ERROR(CheckIntegral(ext, s.loc, "loop extent"));
      std::optional<int64_t> c = ConstInt(ext);
      if (c && *c < 0) {
        return Err(Or(ext.loc, s.loc), absl::StrCat("loop extent ", *c, " is negative"));
      }
    }
    if (s.for_kind == ForKind::kPipelined) {
      if (s.num_stages < 0) {
        return Err(s.loc,
                   absl::StrCat("pipelined loop: num_stages must be >= 0, got ", s.num_stages));
      }
      if (!s.order.empty() && !s.stage.empty() && s.order.size() != s.stage.size()) {
        return Err(s.loc, absl::StrCat("pipelined loop: order has ", s.order.size(),
                                       " entries but stage has ", s.stage.size()));
      }
    } else if (s.num_stages != 0 || !s.order.empty() || !s.stage.empty()) {
      return Err(s.loc, "num_stages, order and stage apply only to pipelined loops");
    }
    return absl::OkStatus();
  }

  absl::Status CheckStmt(const Stmt& s, int depth, std::vector<std::string>* allocated) {
    if (s.kind == StmtKind::kFor) return CheckFor(s, depth);
    if (s.kind == StmtKind::kWarpSpecialize) return CheckWarpSpecialize(s, depth);
    if (s.kind == StmtKind::kIf) {
      RETURN_IF_ERROR(CheckBool(s.cond, s.loc, "if condition"));
      RETURN_IF_ERROR(CheckStmts(s.body, depth + 1));
      return CheckStmts(s.else_body, depth + 1);
    }
    return CheckSimpleStmt(s, allocated);
  }

  // A statement without a body.
  ABSL_ATTRIBUTE_NOINLINE absl::Status CheckSimpleStmt(const Stmt& s,
                                                       std::vector<std::string>* allocated) {
    switch (s.kind) {
    case StmtKind::kAlloc: {
      const Buffer& b = s.buffer;
      const Loc loc = Or(b.loc, s.loc);
      RETURN_IF_ERROR(CheckShape(b, loc));
      if (b.index_layout) {
        return Err(Or(b.index_layout->loc, loc),
                   absl::StrCat("T.Layout on ", SC(b.scope), " buffer '", b.name,
                                "' is not supported yet (only on tensor parameters)"));
      }
      if (b.scope == Scope::kVar) {
        std::optional<int64_t> c = b.shape.size() == 1 ? ConstInt(b.shape[0]) : std::nullopt;
        if (!c || *c != 1) {
          return Err(loc, absl::StrCat("var buffer '", b.name, "' must have shape [1]"));
        }
      }
      if (b.scope == Scope::kBarrier) {
        RETURN_IF_ERROR(CheckBarrierAlloc(s, loc));
      } else if (!s.indices.empty()) {
        return Err(loc, absl::StrCat("only barrier buffers have arrival counts; '", b.name, "' is ",
                                     SC(b.scope)));
      }
      if (b.has_init) {
        if (b.scope != Scope::kVar) {
          return Err(loc, absl::StrCat("only var buffers have an initial value; '", b.name, "' is ",
                                       SC(b.scope)));
        }
        RETURN_IF_ERROR(CheckExpr(b.init, loc, 0));
        if (b.init.dtype != b.dtype) {
          return Err(Or(b.init.loc, loc),
                     absl::StrCat("initial value of '", b.name, "' has dtype ", DT(b.init.dtype),
                                  " but the buffer holds ", DT(b.dtype)));
        }
      }
      RETURN_IF_ERROR(Bind(b.name, Def{Kind::kBuffer, b.dtype, &b}));
      allocated->push_back(b.name);
      return absl::OkStatus();
    }
    case StmtKind::kCopy:
      return CheckCopy(s);
    case StmtKind::kGemm:
      return CheckGemm(s);
    case StmtKind::kFill: {
      RETURN_IF_ERROR(Operands(s, 1, "fill"));
      ASSIGN_OR_RETURN(const Buffer* b, CheckRegion(s.regions[0], s.loc, "fill", "destination"));
      if (!s.has_value) return Err(s.loc, "fill: missing value");
      return CheckValue(s, *b, "fill");
    }
    case StmtKind::kReduce:
      return CheckReduce(s);
    case StmtKind::kAtomic: {
      if (static_cast<int>(s.atomic_op) > static_cast<int>(AtomicOp::kMin)) {
        return Err(s.loc, "atomic: invalid operation");
      }
      if (s.regions.empty() || s.regions.size() > 2 || (s.regions.size() == 2) == s.has_value) {
        return Err(s.loc, "atomic: takes a destination and either a scalar value or a source "
                          "region");
      }
      ASSIGN_OR_RETURN(const Buffer* dst,
                       CheckRegion(s.regions[0], s.loc, "atomic", "destination"));
      if (s.has_value) return CheckValue(s, *dst, "atomic");
      RETURN_IF_ERROR(CheckRegion(s.regions[1], s.loc, "atomic", "source").status());
      return MatchExtents(Extents(s.regions[1]), Iota(s.regions[1].ranges.size()),
                          Extents(s.regions[0]), Iota(s.regions[0].ranges.size()), s.loc, "atomic",
                          "source", "destination");
    }
    case StmtKind::kFor:
    case StmtKind::kIf:
    case StmtKind::kWarpSpecialize:
      return absl::OkStatus(); // CheckStmt checks these
    case StmtKind::kAssert:
      RETURN_IF_ERROR(CheckBool(s.cond, s.loc, "assert condition"));
      if (!IsValidAssertMessage(s.message)) {
        return Err(s.loc, absl::StrCat("assert message must be printable ASCII of at most ",
                                       kMaxAssertMessage, " bytes"));
      }
      return absl::OkStatus();
    case StmtKind::kTmaCopy:
    case StmtKind::kBarrierArrive:
    case StmtKind::kBarrierWait:
    case StmtKind::kBarrierExpectTx:
      return CheckHopperStmt(s);
    case StmtKind::kWaitWgmma: {
      if (parallel_depth_ > 0) {
        return Err(s.loc, "wait_wgmma cannot appear inside a T.Parallel loop");
      }
      std::optional<int64_t> n = s.has_value ? ConstInt(s.value) : std::nullopt;
      if (!s.regions.empty() || !n || *n < 0 || *n > kMaxWgmmaInFlight) {
        return Err(s.loc, absl::StrCat("wait_wgmma takes one integer literal, 0..",
                                       kMaxWgmmaInFlight, " (the wgmma groups left in flight)"));
      }
      return absl::OkStatus();
    }
    case StmtKind::kStore: {
      ASSIGN_OR_RETURN(const Buffer* b, LookupBuffer(s.name, s.loc, "store"));
      RETURN_IF_ERROR(NotBarrier(*b, s.loc, "a store"));
      if (s.indices.size() != b->shape.size()) {
        return Err(s.loc,
                   absl::StrCat("store to '", s.name, "' has ", Plural(s.indices.size(), "index"),
                                " but the buffer has ", Plural(b->shape.size(), "dimension")));
      }
      for (const Expr& idx : s.indices) {
        RETURN_IF_ERROR(CheckIntegral(idx, s.loc, absl::StrCat("index of '", s.name, "'")));
      }
      // The value is required: passes that look for the buffers a statement
      // reads (barrier placement) and the wire form read it only when set.
      if (!s.has_value) return Err(s.loc, absl::StrCat("store to '", s.name, "' has no value"));
      return CheckValue(s, *b, absl::StrCat("store to '", s.name, "'"));
    }
    case StmtKind::kAnnotateLayout:
      RETURN_IF_ERROR(LookupBuffer(s.name, s.loc, "annotate_layout").status());
      if (!IsIdentifier(s.layout)) {
        return Err(s.loc, absl::StrCat("annotate_layout: invalid layout name '", s.layout, "'"));
      }
      return absl::OkStatus();
    case StmtKind::kUseSwizzle:
      if (s.panel_size <= 0) {
        return Err(s.loc,
                   absl::StrCat("use_swizzle: panel size must be positive, got ", s.panel_size));
      }
      if (s.swizzle_order != "row" && s.swizzle_order != "col") {
        return Err(s.loc, absl::StrCat("use_swizzle: order must be \"row\" or \"col\", got \"",
                                       s.swizzle_order, "\""));
      }
      return absl::OkStatus();
    case StmtKind::kCall:
      return CheckCall(s);
    }
    return Err(s.loc, absl::StrCat("unknown statement kind #", static_cast<int>(s.kind)));
  }

  // A barrier allocation: uint64, one dimension of constant extent n, n
  // arrival counts in 1..1024 (at most one arrival per thread of a block).
  absl::Status CheckBarrierAlloc(const Stmt& s, Loc loc) const {
    const Buffer& b = s.buffer;
    int64_t n = -1;
    if (b.shape.size() == 1) n = ConstInt(b.shape[0]).value_or(-1);
    if (b.dtype != DType::kUInt64 || n < 1) {
      return Err(loc, absl::StrCat("barrier buffer '", b.name,
                                   "' must be uint64 with one constant extent"));
    }
    if (static_cast<int64_t>(s.indices.size()) != n) {
      return Err(loc, absl::StrCat("barrier buffer '", b.name, "' has ", Plural(n, "barrier"),
                                   " but ", Plural(s.indices.size(), "arrival count")));
    }
    for (const Expr& c : s.indices) {
      if (c.kind != ExprKind::kInt || !IsInteger(c.dtype) || c.ival < 1 || c.ival > 1024) {
        return Err(Or(c.loc, loc), absl::StrCat("barrier buffer '", b.name,
                                                "': arrival counts must be integer constants in "
                                                "1..1024"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckStmts(const std::vector<Stmt>& stmts, int depth) {
    std::vector<std::string> allocated;
    for (const Stmt& s : stmts) RETURN_IF_ERROR(CheckStmt(s, depth, &allocated));
    for (const std::string& name : allocated) scope_.erase(name);
    return absl::OkStatus();
  }

  absl::Status CheckKernel() {
    const Kernel& k = p_.kernel;
    if (k.grid.empty() || k.grid.size() > 3) {
      return Err(k.loc,
                 absl::StrCat("the kernel grid must have 1 to 3 dimensions, got ", k.grid.size()));
    }
    if (k.block_vars.size() != k.grid.size()) {
      return Err(k.loc,
                 absl::StrCat("the kernel binds ", Plural(k.block_vars.size(), "block variable"),
                              " but its grid has ", Plural(k.grid.size(), "dimension")));
    }
    for (size_t d = 0; d < k.grid.size(); ++d) {
      RETURN_IF_ERROR(CheckIntegral(k.grid[d], k.loc, "grid extent"));
      std::optional<int64_t> c = ConstInt(k.grid[d]);
      if (c && *c <= 0) {
        return Err(Or(k.grid[d].loc, k.loc),
                   absl::StrCat("grid extent ", *c, " in dimension ", d, " must be positive"));
      }
    }
    if (k.threads.empty() || k.threads.size() > 3) {
      return Err(k.loc, absl::StrCat("the kernel must have 1 to 3 thread extents, got ",
                                     k.threads.size()));
    }
    int64_t total = 1;
    for (int64_t t : k.threads) {
      if (t <= 0) return Err(k.loc, absl::StrCat("thread extent ", t, " must be positive"));
      if (t > kMaxThreads || total * t > kMaxThreads) {
        return Err(k.loc,
                   absl::StrCat("the kernel asks for more than ", kMaxThreads,
                                " threads per block (", absl::StrJoin(k.threads, " x "), ")"));
      }
      total *= t;
    }
    for (const std::string& v : k.block_vars) {
      RETURN_IF_ERROR(Bind(v, Def{Kind::kBlockVar, DType::kInt32, nullptr}));
    }
    in_kernel_ = true;
    return CheckStmts(k.body, 0);
  }

  absl::Status UsePass() {
    for (const Symbol& s : p_.symbols) {
      RETURN_IF_ERROR(CheckDType(s.dtype, s.loc));
      if (!IsInteger(s.dtype)) {
        return Err(s.loc, absl::StrCat("symbol '", s.name, "' must have an integer dtype, got ",
                                       DT(s.dtype)));
      }
      RETURN_IF_ERROR(Bind(s.name, Def{Kind::kSymbol, s.dtype, nullptr}));
    }
    for (const Param& prm : p_.params) {
      const Buffer& b = prm.buffer;
      if (b.has_init) {
        return Err(b.loc, absl::StrCat("parameter '", b.name, "' cannot have an initial value"));
      }
      if (prm.is_scalar) {
        RETURN_IF_ERROR(CheckDType(b.dtype, b.loc));
        if (!b.shape.empty() || b.index_layout) {
          return Err(b.loc, absl::StrCat("scalar parameter '", b.name, "' cannot have a shape",
                                         b.index_layout ? " or a layout" : ""));
        }
        RETURN_IF_ERROR(Bind(b.name, Def{Kind::kScalar, b.dtype, nullptr}));
        continue;
      }
      RETURN_IF_ERROR(CheckShape(b, b.loc));
      if (b.scope != Scope::kGlobal) {
        return Err(b.loc, absl::StrCat("tensor parameter '", b.name,
                                       "' must be in global scope, not ", SC(b.scope)));
      }
      RETURN_IF_ERROR(Bind(b.name, Def{Kind::kTensor, b.dtype, &b}));
      if (b.index_layout) RETURN_IF_ERROR(CheckIndexLayout(b));
    }
    return CheckKernel();
  }

  // A tensor's T.Layout: indices typed over its own variables (visible only
  // there), and a physical shape that IndexLayoutShape can bound.
  absl::Status CheckIndexLayout(const Buffer& b) {
    const IndexLayout& l = *b.index_layout;
    for (const std::string& v : l.vars) scope_[v] = Def{Kind::kLoopVar, DType::kInt32, nullptr};
    absl::Status st = absl::OkStatus();
    for (const Expr& f : l.forward) {
      st = CheckIntegral(f, Or(l.loc, b.loc), absl::StrCat("layout index of '", b.name, "'"));
      if (!st.ok()) break;
    }
    for (const std::string& v : l.vars) scope_.erase(v);
    RETURN_IF_ERROR(st);
    return IndexLayoutShape(l, b.shape, p_.source_name).status();
  }

  const Program& p_;
  std::map<std::string, Loc> declared_; // every defined name, for uniqueness
  std::map<std::string, Def> scope_;    // names visible at the current point
  int ws_depth_ = 0;                    // T.ws regions around the current point
  int parallel_depth_ = 0;              // T.Parallel loops around the current point
  bool in_kernel_ = false;
};

} // namespace

absl::Status Verify(const Program& program) {
  if (program.next_kernels.empty() && program.workspaces.empty()) {
    return Verifier(program).Run();
  }
  // Several kernels or workspaces: each kernel as the one-kernel program
  // that lowering sees (workspaces as parameters there, so their names are
  // checked against the parameters' and symbols').
  if (program.next_kernels.size() + 1 > static_cast<size_t>(kMaxKernels)) {
    return ErrorAt(
        program.source_name, program.next_kernels[kMaxKernels - 1].loc,
        absl::StrCat("a program has at most ", kMaxKernels, " kernels (T.Kernel blocks)"));
  }
  if (program.workspaces.size() > static_cast<size_t>(kMaxWorkspaces)) {
    return ErrorAt(program.source_name, program.workspaces[kMaxWorkspaces].loc,
                   absl::StrCat("a program has at most ", kMaxWorkspaces,
                                " global workspaces (T.alloc_global)"));
  }
  for (const Buffer& w : program.workspaces) {
    if (w.scope != Scope::kGlobal || w.index_layout || w.has_init) {
      return ErrorAt(program.source_name, w.loc,
                     absl::StrCat("workspace '", w.name, "' must be a plain global buffer"));
    }
  }
  for (const Program& one : SplitKernels(program)) RETURN_IF_ERROR(Verifier(one).Run());
  return absl::OkStatus();
}

} // namespace kiln::ir
