#include "compiler/ir/printer.h"

#include <charconv>
#include <cmath>
#include <string_view>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/text_lexer.h"

namespace kiln::ir {
namespace {

using text::BinOpPrecedence;
using text::kAtomPrecedence;
using text::kUnaryPrecedence;

std::string DTypeText(DType t) {
  if (static_cast<size_t>(t) >= AllDTypes().size()) return "?";
  return std::string(DTypeName(t));
}

std::string ScopeText(Scope s) {
  if (static_cast<size_t>(s) > static_cast<size_t>(Scope::kBarrier)) return "?";
  return std::string(ScopeName(s));
}

// Shortest text that reads back to exactly `v`, always recognisable as a
// float (it has a `.`, an exponent, or is inf/nan).
std::string FloatText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string S(std::string_view sv) { return std::string(sv); }

std::string LocText(Loc loc) { return absl::StrCat(loc.line, ":", loc.col); }

std::string Quoted(const std::string& s) { return text::QuoteString(s); }

// ` as "out"` after a symbol's or parameter's name when the user knows it by
// another name (a string: user names may be the text IR's keywords).
std::string UserNameText(const std::string& user_name) {
  return user_name.empty() ? "" : absl::StrCat(" as ", Quoted(user_name));
}

// A name the lexer reads as one token, or a quoted string.
std::string WordOrString(const std::string& s) {
  return text::IsDottedIdentifier(s) ? s : Quoted(s);
}

class Printer {
 public:
  explicit Printer(bool locations) : locations_(locations) {}

  // The precedence of `e` as printed: atoms (including annotated, which
  // are wrapped in parentheses) bind tightest.
  int Precedence(const Expr& e, Loc parent) const {
    if (NeedsAnnotation(e.loc, parent)) return kAtomPrecedence;
    if (e.kind == ExprKind::kBinary) {
      int p = BinOpPrecedence(e.bop);
      return p == 0 ? kAtomPrecedence : p; // min/max print as calls
    }
    if (e.kind == ExprKind::kUnary) return kUnaryPrecedence;
    return kAtomPrecedence;
  }

  void Expr_(const Expr& e, Loc parent, std::string* out) const {
    bool annotate = NeedsAnnotation(e.loc, parent);
    // A compound expression with its own location is parenthesised so that
    // the postfix `@L:C` attaches to all of it.
    bool wrap = annotate && (e.kind == ExprKind::kUnary ||
                             (e.kind == ExprKind::kBinary && BinOpPrecedence(e.bop) != 0));
    if (wrap) out->push_back('(');
    Bare(e, out);
    if (wrap) out->push_back(')');
    if (annotate) Annotate(e.loc, out);
  }

  // The printer recurses over statements (Stmt_, Block) and expressions
  // (Expr_, Bare, Operand, ExprList); what formats numbers and locations
  // runs out of line so that those frames stay small (docs/design/ir-text.md,
  // Limits).
  ABSL_ATTRIBUTE_NOINLINE static void Annotate(Loc loc, std::string* out) {
    absl::StrAppend(out, "@", LocText(loc));
  }

  void Region_(const Region& r, Loc parent, std::string* out) const {
    absl::StrAppend(out, r.buffer, "[");
    for (size_t i = 0; i < r.ranges.size(); ++i) {
      if (i > 0) out->append(", ");
      Expr_(r.ranges[i].min, r.loc, out);
      out->append(" +: ");
      Expr_(r.ranges[i].extent, r.loc, out);
    }
    out->push_back(']');
    if (NeedsAnnotation(r.loc, parent)) absl::StrAppend(out, "@", LocText(r.loc));
  }

  void Program_(const Program& p, std::string* out) {
    std::string name = text::IsIdentifier(p.name) ? p.name : Quoted(p.name);
    absl::StrAppend(out, "program @", name, " {\n");
    for (const auto& [key, value] : p.attrs) {
      absl::StrAppend(out, "  attr ", WordOrString(key), " = ", Quoted(value), "\n");
    }
    for (const Symbol& s : p.symbols) {
      absl::StrAppend(out, "  sym ", s.name, UserNameText(s.user_name), ": ", DTypeText(s.dtype),
                      StmtLoc(s.loc), "\n");
    }
    for (const Param& param : p.params) {
      const Buffer& b = param.buffer;
      absl::StrAppend(out, "  param ", b.name, UserNameText(param.user_name), ": ");
      if (param.is_scalar) {
        absl::StrAppend(out, "scalar ", DTypeText(b.dtype));
      } else {
        absl::StrAppend(out, ScopeText(b.scope), " ", DTypeText(b.dtype));
        ExprList(b.shape, b.loc, "[", "]", out);
        IndexLayout_(b, out);
      }
      if (param.is_output) out->append(" out");
      absl::StrAppend(out, StmtLoc(b.loc), "\n");
    }
    for (const Buffer& b : p.workspaces) {
      absl::StrAppend(out, "  workspace ", b.name, ": ", DTypeText(b.dtype));
      ExprList(b.shape, b.loc, "[", "]", out);
      absl::StrAppend(out, StmtLoc(b.loc), "\n");
    }
    Kernel_(p.kernel, out);
    for (const Kernel& k : p.next_kernels) Kernel_(k, out);
    out->append("}\n");
  }

 private:
  void Kernel_(const Kernel& k, std::string* out) {
    out->append("  kernel grid");
    ExprList(k.grid, k.loc, "(", ")", out);
    out->append(" threads(");
    for (size_t i = 0; i < k.threads.size(); ++i) {
      absl::StrAppend(out, i > 0 ? ", " : "", k.threads[i]);
    }
    out->push_back(')');
    if (!k.block_vars.empty()) {
      absl::StrAppend(out, " as (", absl::StrJoin(k.block_vars, ", "), ")");
    }
    absl::StrAppend(out, StmtLoc(k.loc), " {\n");
    Block(k.body, 2, out);
    out->append("  }\n");
  }

  bool NeedsAnnotation(Loc loc, Loc parent) const { return locations_ && !(loc == parent); }

  // ` layout(v0, v1)@L:C -> [f0, f1]` (ir::IndexLayout).
  void IndexLayout_(const Buffer& b, std::string* out) const {
    if (!b.index_layout) return;
    const IndexLayout& l = *b.index_layout;
    absl::StrAppend(out, " layout(", absl::StrJoin(l.vars, ", "), ")");
    if (NeedsAnnotation(l.loc, b.loc)) absl::StrAppend(out, "@", LocText(l.loc));
    out->append(" -> ");
    ExprList(l.forward, l.loc, "[", "]", out);
  }

  // ` loc(L:C)` for statement-level constructs. In location mode it is
  // printed even when unknown (0:0): without it the parser would use the
  // position in the text.
  std::string StmtLoc(Loc loc) const {
    return locations_ ? absl::StrCat(" loc(", LocText(loc), ")") : std::string();
  }

  void ExprList(const std::vector<Expr>& es, Loc parent, std::string_view open,
                std::string_view close, std::string* out) const {
    out->append(open);
    for (size_t i = 0; i < es.size(); ++i) {
      if (i > 0) out->append(", ");
      Expr_(es[i], parent, out);
    }
    out->append(close);
  }

  // Operand `i` of `e`, printed with parentheses if it binds looser than
  // `min_prec`. Missing operands (a corrupt tree) print as `?`.
  void Operand(const Expr& e, size_t i, int min_prec, std::string* out) const {
    if (i >= e.args.size()) {
      out->push_back('?');
      return;
    }
    const Expr& a = e.args[i];
    bool parens = Precedence(a, e.loc) < min_prec;
    if (parens) out->push_back('(');
    Expr_(a, e.loc, out);
    if (parens) out->push_back(')');
  }

  void Args(const Expr& e, std::string* out) const { ExprList(e.args, e.loc, "(", ")", out); }

  void Bare(const Expr& e, std::string* out) const {
    switch (e.kind) {
    case ExprKind::kInt:
    case ExprKind::kFloat:
    case ExprKind::kThreadIdx:
      Leaf(e, out);
      return;
    case ExprKind::kVar:
      out->append(e.name);
      return;
    case ExprKind::kLoad:
      out->append(e.name);
      ExprList(e.args, e.loc, "[", "]", out);
      return;
    case ExprKind::kBinary: {
      int p = BinOpPrecedence(e.bop);
      if (p == 0) {
        out->append(e.bop == BinOp::kMin ? "min" : "max");
        Args(e, out);
        return;
      }
      Operand(e, 0, p, out);
      out->push_back(' ');
      out->append(text::BinOpSpelling(e.bop));
      out->push_back(' ');
      Operand(e, 1, p + 1, out); // left-associative
      return;
    }
    case ExprKind::kUnary:
      if (e.uop == UnOp::kNeg) {
        // Always parenthesised so that `-(5)` and the literal `-5` differ.
        out->append("-(");
        Operand(e, 0, 0, out);
        out->push_back(')');
      } else {
        out->push_back(e.uop == UnOp::kNot ? '!' : '~');
        Operand(e, 0, kUnaryPrecedence, out);
      }
      return;
    case ExprKind::kCall:
      out->append(text::IntrinsicName(e.fn));
      // The one intrinsic whose dtype its argument does not give.
      if (e.fn == Intrinsic::kReinterpret) absl::StrAppend(out, "<", DTypeText(e.dtype), ">");
      Args(e, out);
      return;
    case ExprKind::kCast:
      CastHeader(e.dtype, out);
      Args(e, out);
      return;
    case ExprKind::kSelect:
      out->append("select");
      Args(e, out);
      return;
    case ExprKind::kAddress:
      out->push_back('&');
      out->append(e.name);
      ExprList(e.args, e.loc, "[", "]", out);
      return;
    }
    out->push_back('?');
  }

  ABSL_ATTRIBUTE_NOINLINE static void CastHeader(DType dtype, std::string* out) {
    absl::StrAppend(out, "cast<", DTypeText(dtype), ">");
  }

  // Literals and thread_idx (no operands).
  ABSL_ATTRIBUTE_NOINLINE static void Leaf(const Expr& e, std::string* out) {
    switch (e.kind) {
    case ExprKind::kInt: {
      if (e.dtype == DType::kInt32) {
        absl::StrAppend(out, e.ival);
      } else if (e.dtype == DType::kBool && (e.ival == 0 || e.ival == 1)) {
        out->append(e.ival ? "true" : "false");
      } else {
        absl::StrAppend(out, DTypeText(e.dtype), "(", e.ival, ")");
      }
      return;
    }
    case ExprKind::kFloat:
      if (e.dtype == DType::kFloat32) {
        out->append(FloatText(e.fval));
      } else {
        absl::StrAppend(out, DTypeText(e.dtype), "(", FloatText(e.fval), ")");
      }
      return;
    case ExprKind::kThreadIdx:
      absl::StrAppend(out, "thread_idx(", e.ival, ")");
      return;
    default:
      break;
    }
    out->push_back('?');
  }

  void Indent(int level, std::string* out) const { out->append(2 * level, ' '); }

  void Block(const std::vector<Stmt>& body, int level, std::string* out) {
    for (const Stmt& s : body) Stmt_(s, level, out);
  }

  const Region& RegionAt(const Stmt& s, size_t i) const {
    static const Region* const kMissing = new Region{"?", {}, {}};
    return i < s.regions.size() ? s.regions[i] : *kMissing;
  }

  static std::string IntList(const std::vector<int32_t>& v) {
    return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
  }

  // Statements with bodies recurse through here and Block; the others, and
  // the headers of these, are printed out of line (see Annotate).
  void Stmt_(const Stmt& s, int level, std::string* out) {
    Indent(level, out);
    if (s.kind == StmtKind::kFor) {
      ForHeader(s, out);
      Block(s.body, level + 1, out);
      Indent(level, out);
      out->append("}\n");
      return;
    }
    if (s.kind == StmtKind::kWarpSpecialize) {
      out->append("ws");
      ExprList(s.indices, s.loc, "(", ")", out);
      OpenBlock(s.loc, out);
      Block(s.body, level + 1, out);
      Indent(level, out);
      out->append("}\n");
      return;
    }
    if (s.kind == StmtKind::kIf) {
      out->append("if ");
      Expr_(s.cond, s.loc, out);
      OpenBlock(s.loc, out);
      Block(s.body, level + 1, out);
      Indent(level, out);
      out->push_back('}');
      if (!s.else_body.empty()) {
        out->append(" else {\n");
        Block(s.else_body, level + 1, out);
        Indent(level, out);
        out->push_back('}');
      }
      out->push_back('\n');
      return;
    }
    SimpleStmt(s, out);
  }

  ABSL_ATTRIBUTE_NOINLINE void OpenBlock(Loc l, std::string* out) const {
    absl::StrAppend(out, StmtLoc(l), " {\n");
  }

  ABSL_ATTRIBUTE_NOINLINE void ForHeader(const Stmt& s, std::string* out) const {
    const Loc l = s.loc;
    absl::StrAppend(out, "for ", absl::StrJoin(s.loop_vars, ", "), " in ",
                    S(text::ForKindName(s.for_kind)));
    ExprList(s.extents, l, "(", ")", out);
    if (s.for_kind == ForKind::kPipelined) {
      absl::StrAppend(out, " stages=", s.num_stages);
      if (!s.order.empty()) absl::StrAppend(out, " order=", IntList(s.order));
      if (!s.stage.empty()) absl::StrAppend(out, " stage=", IntList(s.stage));
    }
    OpenBlock(l, out);
  }

  // A statement without a body, on one line.
  ABSL_ATTRIBUTE_NOINLINE void SimpleStmt(const Stmt& s, std::string* out) {
    Loc l = s.loc;
    // A corrupt kind prints as `?`; the switch below has no default, so
    // that -Wswitch points here when a statement kind is added.
    if (static_cast<size_t>(s.kind) > static_cast<size_t>(StmtKind::kCall)) {
      absl::StrAppend(out, "?", StmtLoc(l), "\n");
      return;
    }
    switch (s.kind) {
    case StmtKind::kAlloc: {
      const Buffer& b = s.buffer;
      absl::StrAppend(out, "alloc ", b.name);
      if (NeedsAnnotation(b.loc, l)) absl::StrAppend(out, "@", LocText(b.loc));
      absl::StrAppend(out, ": ", ScopeText(b.scope), " ", DTypeText(b.dtype));
      ExprList(b.shape, b.loc, "[", "]", out);
      IndexLayout_(b, out);
      if (b.has_init) {
        out->append(" = ");
        Expr_(b.init, b.loc, out);
      }
      if (b.scope == Scope::kBarrier) {
        out->append(" arrive");
        ExprList(s.indices, l, "(", ")", out);
      }
      break;
    }
    case StmtKind::kCopy:
      out->append("copy ");
      Region_(RegionAt(s, 0), l, out);
      out->append(" -> ");
      Region_(RegionAt(s, 1), l, out);
      break;
    case StmtKind::kGemm:
      out->append("gemm ");
      for (size_t i = 0; i < 3; ++i) {
        if (i > 0) out->append(", ");
        Region_(RegionAt(s, i), l, out);
      }
      absl::StrAppend(out, " transpose_a=", Bool(s.transpose_a),
                      " transpose_b=", Bool(s.transpose_b), " clear_accum=", Bool(s.clear_accum),
                      " k_pack=", s.k_pack, " policy=", S(text::GemmPolicyName(s.policy)));
      // Printed only where it is not the default (every gemm waited for
      // itself before wg_wait existed; their text is unchanged).
      if (s.wg_wait != 0) absl::StrAppend(out, " wg_wait=", s.wg_wait);
      break;
    case StmtKind::kFill:
      out->append("fill ");
      Region_(RegionAt(s, 0), l, out);
      out->append(", ");
      Expr_(s.value, l, out);
      break;
    case StmtKind::kReduce:
      absl::StrAppend(out, S(text::ReduceKindName(s.reduce_kind)), " ");
      Region_(RegionAt(s, 0), l, out);
      out->append(" -> ");
      Region_(RegionAt(s, 1), l, out);
      absl::StrAppend(out, " dim=", s.dim, " clear=", Bool(s.clear));
      break;
    case StmtKind::kAtomic:
      absl::StrAppend(out, S(text::AtomicOpName(s.atomic_op)), " ");
      Region_(RegionAt(s, 0), l, out);
      if (s.has_value) {
        out->append(", ");
        Expr_(s.value, l, out);
      } else {
        out->append(" <- ");
        Region_(RegionAt(s, 1), l, out);
      }
      break;
    case StmtKind::kFor:
    case StmtKind::kIf:
    case StmtKind::kWarpSpecialize:
      return; // Stmt_ prints these
    case StmtKind::kTmaCopy:
      out->append("tma_copy ");
      Region_(RegionAt(s, 0), l, out);
      out->append(" -> ");
      Region_(RegionAt(s, 1), l, out);
      out->append(", ");
      Region_(RegionAt(s, 2), l, out);
      break;
    case StmtKind::kBarrierArrive:
      out->append("barrier_arrive ");
      Region_(RegionAt(s, 0), l, out);
      break;
    case StmtKind::kBarrierWait:
    case StmtKind::kBarrierExpectTx:
      out->append(s.kind == StmtKind::kBarrierWait ? "barrier_wait " : "barrier_expect_tx ");
      Region_(RegionAt(s, 0), l, out);
      out->append(", ");
      Expr_(s.value, l, out);
      break;
    case StmtKind::kStore:
      out->append(s.name);
      ExprList(s.indices, l, "[", "]", out);
      out->append(" = ");
      Expr_(s.value, l, out);
      break;
    case StmtKind::kAnnotateLayout:
      absl::StrAppend(out, "annotate_layout ", s.name, " ", WordOrString(s.layout));
      break;
    case StmtKind::kUseSwizzle:
      absl::StrAppend(out, "use_swizzle panel=", s.panel_size,
                      " order=", WordOrString(s.swizzle_order), " enable=", Bool(s.enable));
      break;
    case StmtKind::kCall:
      absl::StrAppend(out, "call ", s.name);
      ExprList(s.indices, l, "(", ")", out);
      break;
    case StmtKind::kAssert:
      out->append("assert ");
      Expr_(s.cond, l, out);
      absl::StrAppend(out, ", ", Quoted(s.message));
      break;
    case StmtKind::kWaitWgmma:
      out->append("wait_wgmma ");
      Expr_(s.value, l, out);
      break;
    }
    absl::StrAppend(out, StmtLoc(l), "\n");
  }

  static const char* Bool(bool b) { return b ? "true" : "false"; }

  bool locations_;
};

} // namespace

std::string PrintProgram(const Program& program, const PrintOptions& options) {
  std::string out;
  Printer(options.locations).Program_(program, &out);
  return out;
}

std::string PrintExpr(const Expr& expr) {
  std::string out;
  Printer(false).Expr_(expr, expr.loc, &out);
  return out;
}

} // namespace kiln::ir
