#include "compiler/codegen/cxx_emitter.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/dtype.h"
#include "compiler/ir/int_range.h"
#include "compiler/ir/intrinsics.h"
#include "compiler/ir/simplify.h"
#include "compiler/ir/text_lexer.h"
#include "compiler/passes/layout_inference.h"
#include "util/status_macros.h"

namespace kiln::codegen {

using ir::BinOp;
using ir::DType;
using ir::Expr;
using ir::ExprKind;
using ir::Stmt;
using ir::StmtKind;

std::string CType(DType t) {
  switch (t) {
  case DType::kBool:
    return "bool";
  case DType::kInt8:
    return "signed char";
  case DType::kInt16:
    return "short";
  case DType::kInt32:
    return "int";
  case DType::kInt64:
    return "long long";
  case DType::kUInt8:
    return "unsigned char";
  case DType::kUInt16:
    return "unsigned short";
  case DType::kUInt32:
    return "unsigned int";
  case DType::kUInt64:
    return "unsigned long long";
  case DType::kFloat16:
    return "kiln::rt::half_t";
  case DType::kBFloat16:
    return "kiln::rt::bfloat16_t";
  case DType::kFloat32:
    return "float";
  case DType::kFloat64:
    return "double";
  case DType::kFloat8E4M3:
    return "kiln::rt::fp8_e4m3_t";
  case DType::kFloat8E5M2:
    return "kiln::rt::fp8_e5m2_t";
  }
  return "void";
}

std::string CName(const std::string& name) {
  static const std::set<std::string>* reserved =
      new std::set<std::string>{"alignas",       "alignof",     "and",
                                "and_eq",        "asm",         "auto",
                                "bitand",        "bitor",       "bool",
                                "break",         "case",        "catch",
                                "char",          "char8_t",     "char16_t",
                                "char32_t",      "class",       "compl",
                                "concept",       "const",       "consteval",
                                "constexpr",     "constinit",   "const_cast",
                                "continue",      "co_await",    "co_return",
                                "co_yield",      "decltype",    "default",
                                "delete",        "do",          "double",
                                "dynamic_cast",  "else",        "enum",
                                "explicit",      "export",      "extern",
                                "false",         "float",       "for",
                                "friend",        "goto",        "if",
                                "inline",        "int",         "long",
                                "mutable",       "namespace",   "new",
                                "noexcept",      "not",         "not_eq",
                                "nullptr",       "operator",    "or",
                                "or_eq",         "private",     "protected",
                                "public",        "register",    "reinterpret_cast",
                                "requires",      "return",      "short",
                                "signed",        "sizeof",      "static",
                                "static_assert", "static_cast", "struct",
                                "switch",        "template",    "this",
                                "thread_local",  "throw",       "true",
                                "try",           "typedef",     "typeid",
                                "typename",      "union",       "unsigned",
                                "using",         "virtual",     "void",
                                "volatile",      "wchar_t",     "while",
                                "xor",           "xor_eq",      "kiln",
                                "std",           "main",        "threadIdx",
                                "blockIdx",      "blockDim",    "gridDim",
                                "warpSize",      "int8_t",      "int16_t",
                                "int32_t",       "int64_t",     "uint8_t",
                                "uint16_t",      "uint32_t",    "uint64_t",
                                "size_t"};
  if (reserved->count(name) || name.find("__") != std::string::npos ||
      (name.size() > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z')) {
    return name + "_";
  }
  return name;
}

namespace {

bool IsNarrowFloat(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat8E4M3 ||
         t == DType::kFloat8E5M2;
}

bool IsNarrowInt(DType t) { return ir::IsInteger(t) && ir::DTypeBits(t) < 32; }

std::string FloatLiteral(double v, DType t) {
  const bool single = t != DType::kFloat64;
  if (std::isnan(v)) {
    return single ? "kiln::rt::bits_float(0x7fc00000u)"
                  : "((double)kiln::rt::bits_float(0x7fc00000u))";
  }
  if (std::isinf(v)) {
    std::string f =
        v > 0 ? "kiln::rt::bits_float(0x7f800000u)" : "kiln::rt::bits_float(0xff800000u)";
    return single ? f : absl::StrCat("((double)", f, ")");
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, single ? "%.9g" : "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  if (single) s += "f";
  if (s[0] == '-') s = "(" + s + ")";
  return s;
}

const char* MathName(ir::Intrinsic fn) {
  switch (fn) {
  case ir::Intrinsic::kExp:
    return "exp";
  case ir::Intrinsic::kExp2:
    return "exp2";
  case ir::Intrinsic::kLog:
    return "log";
  case ir::Intrinsic::kLog2:
    return "log2";
  case ir::Intrinsic::kSqrt:
    return "sqrt";
  case ir::Intrinsic::kRsqrt:
    return "rsqrt";
  case ir::Intrinsic::kAbs:
    return "abs";
  case ir::Intrinsic::kPow:
    return "pow";
  case ir::Intrinsic::kTanh:
    return "tanh";
  case ir::Intrinsic::kFloor:
    return "floor";
  case ir::Intrinsic::kCeil:
    return "ceil";
  case ir::Intrinsic::kSin:
    return "sin";
  case ir::Intrinsic::kCos:
    return "cos";
  case ir::Intrinsic::kRound:
    return "round";
  case ir::Intrinsic::kTrunc:
    return "trunc";
  case ir::Intrinsic::kSigmoid:
    return "sigmoid";
  case ir::Intrinsic::kReinterpret:
    return "bit_cast";
  }
  return "exp";
}

class Emitter {
 public:
  explicit Emitter(const ir::Program& p) : p_(p) {
    for (const ir::Param& param : p.params) {
      if (!param.is_scalar) globals_[param.buffer.name] = &param.buffer;
      if (param.is_scalar) scalars_.insert(param.buffer.name);
    }
  }

  absl::StatusOr<EmittedBody> Run() {
    EmittedBody out;
    int index = 0;
    auto add_param = [&](const std::string& decl, const std::string& name,
                         const std::string& type) {
      if (!out.params.empty()) {
        out.params += ", ";
        out.param_names += ", ";
      }
      out.params += decl;
      out.param_names += name;
      absl::StrAppend(&out.unpack_args, "  ", type, " ", name, " = *static_cast<", type,
                      "*>(kiln_args[", index++, "]);\n");
    };
    // kernel_spec.h's order: parameters, symbols, then workspaces.
    for (const ir::Param& param : p_.params) {
      if (param.is_workspace) continue;
      const std::string name = CName(param.buffer.name);
      const std::string t = CType(param.buffer.dtype);
      if (param.is_scalar) {
        add_param(absl::StrCat(t, " ", name), name, t);
      } else {
        add_param(absl::StrCat(t, "* __restrict__ ", name), name, t + "*");
      }
    }
    for (const ir::Symbol& s : p_.symbols) {
      const std::string name = CName(s.name);
      add_param(absl::StrCat(CType(s.dtype), " ", name), name, CType(s.dtype));
    }
    for (const ir::Param& param : p_.params) {
      if (!param.is_workspace) continue;
      const std::string name = CName(param.buffer.name);
      const std::string t = CType(param.buffer.dtype);
      add_param(absl::StrCat(t, "* __restrict__ ", name), name, t + "*");
    }
    RETURN_IF_ERROR(TensorMaps(&out));
    RETURN_IF_ERROR(BlockVars());
    RETURN_IF_ERROR(Stmts(p_.kernel.body, 1));
    out.body = std::move(text_);
    out.smem_bytes = smem_;
    out.uses_wgmma = uses_wgmma_;
    out.uses_wgmma_rs = uses_wgmma_rs_;
    out.uses_wgmma_fp8 = uses_wgmma_fp8_;
    out.local_bytes = local_bytes_;
    out.uses_tma = uses_tma_ || !out.tma_maps.empty();
    return out;
  }

 private:
  absl::Status Error(ir::Loc loc, const std::string& msg) const {
    return ir::ErrorAt(p_.source_name, loc, msg);
  }

  void Line(int indent, const std::string& s) {
    text_.append(static_cast<size_t>(indent) * 2, ' ');
    text_ += s;
    text_ += "\n";
  }

  // The tensor maps the lowering recorded (ir/tma_attr.h).
  absl::Status TensorMaps(EmittedBody* out) {
    std::optional<std::vector<ir::TmaMapAttr>> maps = ir::TmaMaps(p_.attrs);
    if (!maps) return Error(p_.kernel.loc, "internal: a malformed kiln.tma attr");
    for (size_t k = 0; k < maps->size(); ++k) {
      const ir::TmaMapAttr& m = (*maps)[k];
      int arg = -1;
      for (size_t i = 0; i < p_.params.size(); ++i) {
        if (!p_.params[i].is_scalar && p_.params[i].buffer.name == m.param) {
          arg = static_cast<int>(i);
        }
      }
      if (arg < 0) {
        return Error(p_.kernel.loc,
                     absl::StrCat("internal: tensor map ", k, " names no tensor '", m.param, "'"));
      }
      const ir::Buffer& b = p_.params[static_cast<size_t>(arg)].buffer;
      if (b.shape.size() != m.box.size()) {
        return Error(p_.kernel.loc, absl::StrCat("internal: tensor map ", k, " of '", m.param,
                                                 "' has a box of another rank"));
      }
      const std::string name = absl::StrCat("kiln_tmap_", k);
      absl::StrAppend(&out->tma_params, ", const __grid_constant__ kiln::rt::TmaDesc ", name);
      // CPU: dims and box innermost first, padded with 1 to five.
      std::string dims, box;
      for (size_t d = 0; d < 5; ++d) {
        std::string v = "1";
        if (d < b.shape.size()) {
          ASSIGN_OR_RETURN(v, E(b.shape[b.shape.size() - 1 - d]));
        }
        absl::StrAppend(&dims, ", (long long)(", v, ")");
        absl::StrAppend(&box, ", ", d < m.box.size() ? m.box[m.box.size() - 1 - d] : 1);
      }
      absl::StrAppend(&out->tma_locals, "  const kiln::rt::TmaDesc ", name,
                      " = kiln::rt::make_tma_desc(", CName(b.name), ", ",
                      std::max(1, ir::DTypeBits(b.dtype) / 8), ", ", m.swizzle_bytes, ", ",
                      m.box.size(), dims, box, ");\n");
      out->tma_maps.push_back(m);
      out->tma_map_args.push_back(arg);
    }
    return absl::OkStatus();
  }

  absl::Status BlockVars() {
    const ir::Kernel& k = p_.kernel;
    const Stmt* swizzle = nullptr;
    for (const Stmt& s : k.body) {
      if (s.kind == StmtKind::kUseSwizzle && s.enable && k.grid.size() >= 2) swizzle = &s;
    }
    std::vector<std::string> vals = BlockValues(swizzle, "kiln_", "kiln::rt::bid_x()");
    for (size_t d = 0; d < k.block_vars.size(); ++d) {
      Line(1, absl::StrCat("const int ", CName(k.block_vars[d]), " = ", vals[d], ";"));
    }
    auto pair = p_.attrs.find(passes::kClusterDimsAttr);
    if (pair == p_.attrs.end()) return absl::OkStatus();
    // A cluster pair (blocks 2i and 2i + 1 along x; the grid's x extent is
    // even, so their linear indices differ in the lowest bit too): the
    // block's rank in it and the other block's block variables.
    Line(1, absl::StrCat("const int ", passes::kClusterRankVar,
                         " = static_cast<int>(kiln::rt::bid_x() & 1);"));
    vals = BlockValues(swizzle, "kiln_peer_", "(kiln::rt::bid_x() ^ 1)");
    for (size_t d = 0; d < k.block_vars.size(); ++d) {
      Line(1, absl::StrCat("const int ", CName(passes::kClusterPeerPrefix + k.block_vars[d]), " = ",
                           vals[d], ";"));
    }
    return absl::OkStatus();
  }

  // The block variables' values for the block whose x index is `bid_x`,
  // its temporaries named `prefix`... .
  std::vector<std::string> BlockValues(const Stmt* swizzle, const std::string& prefix,
                                       const std::string& bid_x) {
    std::vector<std::string> vals = {bid_x, "kiln::rt::bid_y()", "kiln::rt::bid_z()"};
    if (!swizzle) return vals;
    // TileLang's block rasterization (T.use_swizzle): the linear block
    // index walks panels of `panel` rows (block y; "col" order: columns,
    // block x) that span the whole grid the other way; inside a panel
    // consecutive blocks go down its rows first, so the blocks running at
    // once share operand tiles in L2, and every other panel runs its
    // columns backwards, so that a panel starts on the tiles its
    // predecessor ended with. The last panel is as tall as the rows left.
    // In 64 bits: the linear index of a grid of more than 2**31 blocks
    // overflows int; the indices that come out are below the grid's
    // extents and fit int again.
    const bool row = swizzle->swizzle_order != "col";
    const std::string across = row ? "x" : "y", down = row ? "y" : "x";
    const int64_t panel = swizzle->panel_size;
    const std::string& q = prefix;
    Line(1, absl::StrCat("const long long ", q, "na = kiln::rt::nbid_", across, "(), ", q,
                         "nd = kiln::rt::nbid_", down, "();"));
    Line(1, absl::StrCat("const long long ", q, "lin = kiln::rt::bid_y() * kiln::rt::nbid_x() + ",
                         bid_x, ";"));
    Line(1, absl::StrCat("const long long ", q, "psize = ", panel, "LL * ", q, "na;"));
    Line(1, absl::StrCat("const long long ", q, "pidx = ", q, "lin / ", q, "psize, ", q,
                         "poff = ", q, "lin % ", q, "psize;"));
    Line(1, absl::StrCat("const long long ", q, "tall = (", q, "pidx + 1) * ", panel, "LL <= ", q,
                         "nd ? ", panel, "LL : ", q, "nd - ", q, "pidx * ", panel, "LL;"));
    Line(1, absl::StrCat("const long long ", q, "a = ", q, "pidx % 2 == 0 ? ", q, "poff / ", q,
                         "tall : ", q, "na - 1 - ", q, "poff / ", q, "tall;"));
    Line(1, absl::StrCat("const long long ", q, "d = ", q, "poff % ", q, "tall + ", q, "pidx * ",
                         panel, "LL;"));
    const std::string a = absl::StrCat("static_cast<int>(", q, "a)");
    const std::string d = absl::StrCat("static_cast<int>(", q, "d)");
    vals[0] = row ? a : d;
    vals[1] = row ? d : a;
    return vals;
  }

  absl::StatusOr<std::string> GlobalIndex(const std::string& name, const std::vector<Expr>& idx,
                                          ir::Loc loc) {
    auto it = globals_.find(name);
    if (it == globals_.end()) {
      if (idx.size() != 1) return Error(loc, absl::StrCat("internal: '", name, "' is not flat"));
      return E(idx[0]);
    }
    if (idx.size() == 1) return E(idx[0]);
    const ir::Buffer& b = *it->second;
    Expr flat = ir::IntImm(0, DType::kInt64);
    Expr stride = ir::IntImm(1, DType::kInt64);
    for (size_t d = idx.size(); d-- > 0;) {
      flat = ir::Binary(BinOp::kAdd, flat,
                        ir::Binary(BinOp::kMul, ir::Cast(DType::kInt64, idx[d]), stride));
      stride = ir::Binary(BinOp::kMul, stride, ir::Cast(DType::kInt64, b.shape[d]));
    }
    return E(ir::Simplify(flat));
  }

  // Expression text.
  absl::StatusOr<std::string> E(const Expr& e) {
    switch (e.kind) {
    case ExprKind::kInt: {
      if (e.dtype == DType::kBool) return std::string(e.ival ? "true" : "false");
      std::string v = std::to_string(e.ival);
      if (e.dtype == DType::kInt64) v += "LL";
      if (e.dtype == DType::kUInt64) v = std::to_string(static_cast<uint64_t>(e.ival)) + "ULL";
      if (e.dtype == DType::kUInt32) v = std::to_string(static_cast<uint32_t>(e.ival)) + "u";
      if (e.dtype != DType::kInt32 && e.dtype != DType::kInt64 && e.dtype != DType::kUInt64 &&
          e.dtype != DType::kUInt32) {
        return absl::StrCat("((", CType(e.dtype), ")", v, ")");
      }
      return e.ival < 0 ? "(" + v + ")" : v;
    }
    case ExprKind::kFloat:
      if (IsNarrowFloat(e.dtype)) {
        return absl::StrCat("kiln::rt::cvt<", CType(e.dtype), ">(",
                            FloatLiteral(e.fval, DType::kFloat32), ")");
      }
      return FloatLiteral(e.fval, e.dtype);
    case ExprKind::kVar:
      return CName(e.name);
    case ExprKind::kThreadIdx:
      return std::string(e.ival == 0   ? "kiln::rt::tid_x()"
                         : e.ival == 1 ? "kiln::rt::tid_y()"
                                       : "kiln::rt::tid_z()");
    case ExprKind::kLoad:
    case ExprKind::kAddress: {
      ASSIGN_OR_RETURN(std::string idx, GlobalIndex(e.name, e.args, e.loc));
      std::string s = absl::StrCat(CName(e.name), "[", idx, "]");
      return e.kind == ExprKind::kAddress ? "(&" + s + ")" : s;
    }
    case ExprKind::kCast: {
      ASSIGN_OR_RETURN(std::string x, E(e.args[0]));
      const DType from = e.args[0].dtype;
      if (from == e.dtype) return x;
      if (!IsNarrowFloat(from) && !IsNarrowFloat(e.dtype) && e.dtype != DType::kBool &&
          from != DType::kBool) {
        return absl::StrCat("((", CType(e.dtype), ")", x, ")");
      }
      return absl::StrCat("kiln::rt::cvt<", CType(e.dtype), ">(", x, ")");
    }
    case ExprKind::kSelect: {
      ASSIGN_OR_RETURN(std::string c, E(e.args[0]));
      ASSIGN_OR_RETURN(std::string a, E(e.args[1]));
      ASSIGN_OR_RETURN(std::string b, E(e.args[2]));
      return absl::StrCat("(", c, " ? ", a, " : ", b, ")");
    }
    case ExprKind::kUnary: {
      ASSIGN_OR_RETURN(std::string x, AsCompute(e.args[0]));
      const char* op = e.uop == ir::UnOp::kNeg ? "-" : e.uop == ir::UnOp::kNot ? "!" : "~";
      return Narrow(absl::StrCat("(", op, x, ")"), e.dtype);
    }
    case ExprKind::kCall: {
      if (e.fn == ir::Intrinsic::kReinterpret) {
        // The operand in its own storage type (a promoted narrow int is
        // converted back first), its bits as the call's type.
        ASSIGN_OR_RETURN(std::string x, E(e.args[0]));
        return absl::StrCat("kiln::rt::bit_cast<", CType(e.dtype), ", ", CType(e.args[0].dtype),
                            ">(", x, ")");
      }
      std::string args;
      for (const Expr& a : e.args) {
        ASSIGN_OR_RETURN(std::string x, AsCompute(a));
        absl::StrAppend(&args, args.empty() ? "" : ", ", x);
      }
      if (e.fn == ir::Intrinsic::kAbs && ir::IsInteger(e.dtype)) {
        return Narrow(absl::StrCat("((", args, ") < 0 ? -(", args, ") : (", args, "))"), e.dtype);
      }
      return Narrow(absl::StrCat("kiln::rt::", MathName(e.fn), "(", args, ")"), e.dtype);
    }
    case ExprKind::kBinary:
      return Binary(e);
    }
    return Error(e.loc, "internal: unknown expression kind");
  }

  // Operands of arithmetic on 8/16-bit floats are computed in float.
  absl::StatusOr<std::string> AsCompute(const Expr& e) {
    ASSIGN_OR_RETURN(std::string x, E(e));
    if (IsNarrowFloat(e.dtype)) return absl::StrCat("kiln::rt::cvt<float>(", x, ")");
    return x;
  }

  // Brings a value computed in float (or promoted int) back to `t`.
  std::string Narrow(const std::string& x, DType t) {
    if (IsNarrowFloat(t)) return absl::StrCat("kiln::rt::cvt<", CType(t), ">(", x, ")");
    if (IsNarrowInt(t)) return absl::StrCat("((", CType(t), ")", x, ")");
    return x;
  }

  // Provably >= 0: literals, thread/block/loop indices and shape symbols,
  // and sums, products, quotients, min/max of such (scalar params and
  // loads may be negative).
  bool NonNegative(const Expr& e) const {
    switch (e.kind) {
    case ExprKind::kInt:
      return e.ival >= 0;
    case ExprKind::kThreadIdx:
      return true;
    case ExprKind::kVar:
      return !scalars_.count(e.name);
    case ExprKind::kCast:
      return ir::IsInteger(e.args[0].dtype) && NonNegative(e.args[0]);
    case ExprKind::kSelect:
      return NonNegative(e.args[1]) && NonNegative(e.args[2]);
    case ExprKind::kBinary:
      switch (e.bop) {
      case BinOp::kAdd:
      case BinOp::kMul:
      case BinOp::kFloorDiv:
      case BinOp::kFloorMod:
      case BinOp::kDiv:
      case BinOp::kMin:
      case BinOp::kMax:
      case BinOp::kBitAnd:
      case BinOp::kBitXor:
      case BinOp::kBitOr:
      case BinOp::kShr:
        return NonNegative(e.args[0]) && NonNegative(e.args[1]);
      default:
        return false;
      }
    default:
      return false;
    }
  }

  absl::StatusOr<std::string> Binary(const Expr& e) {
    ASSIGN_OR_RETURN(std::string a, AsCompute(e.args[0]));
    ASSIGN_OR_RETURN(std::string b, AsCompute(e.args[1]));
    const DType t = e.args[0].dtype;
    const bool plain_int = ir::IsInteger(t) && NonNegative(e.args[0]) && NonNegative(e.args[1]);
    switch (e.bop) {
    case BinOp::kFloorDiv:
      // Floor and truncation agree on non-negative operands; plain C lets
      // the compiler strength-reduce index arithmetic.
      if (plain_int) return Narrow(absl::StrCat("(", a, " / ", b, ")"), e.dtype);
      return Narrow(absl::StrCat("kiln::rt::floordiv(", a, ", ", b, ")"), e.dtype);
    case BinOp::kFloorMod:
      if (plain_int) return Narrow(absl::StrCat("(", a, " % ", b, ")"), e.dtype);
      return Narrow(absl::StrCat("kiln::rt::floormod(", a, ", ", b, ")"), e.dtype);
    case BinOp::kMin:
      return Narrow(absl::StrCat("kiln::rt::min(", a, ", ", b, ")"), e.dtype);
    case BinOp::kMax:
      return Narrow(absl::StrCat("kiln::rt::max(", a, ", ", b, ")"), e.dtype);
    default:
      break;
    }
    // Every operator left here is spelled the same in the IR text and in C.
    std::string s =
        absl::StrCat("(", a, " ", std::string(ir::text::BinOpSpelling(e.bop)), " ", b, ")");
    if (ir::IsComparison(e.bop) || ir::IsLogical(e.bop)) return s;
    (void)t;
    return Narrow(s, e.dtype);
  }

  absl::Status Stmts(const std::vector<Stmt>& body, int indent) {
    for (const Stmt& s : body) RETURN_IF_ERROR(S(s, indent));
    return absl::OkStatus();
  }

  absl::Status S(const Stmt& s, int indent) {
    switch (s.kind) {
    case StmtKind::kAlloc: {
      const ir::Buffer& b = s.buffer;
      std::optional<int64_t> n = b.shape.empty() ? 1 : ir::ConstInt(ir::Simplify(b.shape[0]));
      if (!n || b.shape.size() > 1) {
        return Error(s.loc, absl::StrCat("internal: buffer '", b.name, "' is not flat"));
      }
      const std::string t = CType(b.dtype), name = CName(b.name);
      if (b.scope == ir::Scope::kSharedDyn || b.scope == ir::Scope::kShared) {
        // 128-byte aligned; wgmma operands (attr kiln.smem_align.<buffer>,
        // set by lowering) to their swizzle period.
        int64_t align = 128;
        auto al = p_.attrs.find(absl::StrCat("kiln.smem_align.", b.name));
        if (al != p_.attrs.end() && al->second == "1024") align = 1024;
        int64_t offset = (smem_ + align - 1) / align * align;
        // Pass shared-placement's offset, where buffers share bytes; the
        // size is the highest end either way.
        auto placed = p_.attrs.find(absl::StrCat("kiln.smem_offset.", b.name));
        if (placed != p_.attrs.end() && (!absl::SimpleAtoi(placed->second, &offset) || offset < 0 ||
                                         offset % align != 0 || offset > (int64_t{1} << 40))) {
          return Error(s.loc, absl::StrCat("internal: shared buffer '", b.name, "' placed at '",
                                           placed->second, "', not a multiple of ", align));
        }
        Line(indent, absl::StrCat(t, "* ", name, " = reinterpret_cast<", t,
                                  "*>(kiln::rt::dyn_smem() + ", offset, ");"));
        smem_ = std::max(smem_, offset + *n * std::max(1, ir::DTypeBits(b.dtype) / 8));
        return absl::OkStatus();
      }
      if (b.scope == ir::Scope::kVar && b.has_init) {
        ASSIGN_OR_RETURN(std::string init, E(b.init));
        Line(indent, absl::StrCat(t, " ", name, "[1] = {", init, "};"));
        return absl::OkStatus();
      }
      if (b.scope == ir::Scope::kGlobal || b.scope == ir::Scope::kFragment) {
        return Error(s.loc, absl::StrCat("internal: ", std::string(ir::ScopeName(b.scope)),
                                         " buffer '", b.name, "' after lowering"));
      }
      Line(indent, absl::StrCat("alignas(16) ", t, " ", name, "[", *n, "];"));
      local_bytes_ += *n * std::max(1, ir::DTypeBits(b.dtype) / 8);
      return absl::OkStatus();
    }
    case StmtKind::kFor: {
      if (s.for_kind == ir::ForKind::kParallel || s.loop_vars.size() != 1) {
        return Error(s.loc, "internal: T.Parallel loop after lowering");
      }
      // The loop variable is a C int: a constant trip count beyond it would
      // wrap or never end. verify-resources refuses such programs; this
      // keeps a lowering bug from becoming a wrong kernel.
      if (std::optional<int64_t> n = ir::ConstInt(s.extents[0]);
          n && (*n < 0 || *n > ir::kInt32Max)) {
        return Error(s.loc, absl::StrCat("loop extent ", *n, " does not fit int32"));
      }
      ASSIGN_OR_RETURN(std::string ext, E(s.extents[0]));
      if (s.for_kind == ir::ForKind::kUnroll || s.for_kind == ir::ForKind::kVectorized) {
        Line(indent, "#pragma unroll");
      }
      const std::string v = CName(s.loop_vars[0]);
      Line(indent, absl::StrCat("for (int ", v, " = 0; ", v, " < ", ext, "; ++", v, ") {"));
      RETURN_IF_ERROR(Stmts(s.body, indent + 1));
      Line(indent, "}");
      return absl::OkStatus();
    }
    case StmtKind::kIf: {
      ASSIGN_OR_RETURN(std::string c, E(s.cond));
      Line(indent, absl::StrCat("if (", c, ") {"));
      RETURN_IF_ERROR(Stmts(s.body, indent + 1));
      if (!s.else_body.empty()) {
        Line(indent, "} else {");
        RETURN_IF_ERROR(Stmts(s.else_body, indent + 1));
      }
      Line(indent, "}");
      return absl::OkStatus();
    }
    case StmtKind::kAssert: {
      // The message is spelled out in octal escapes: no byte of the
      // program's text reaches the generated source as itself.
      if (!ir::IsValidAssertMessage(s.message)) {
        return Error(s.loc, "internal: assert message is not printable text");
      }
      ASSIGN_OR_RETURN(std::string c, E(s.cond));
      std::string text;
      for (char ch : s.message) {
        char esc[8];
        std::snprintf(esc, sizeof esc, "\\%03o", static_cast<unsigned>(ch));
        text += esc;
      }
      Line(indent, absl::StrCat("if (!(", c, ")) kiln::rt::assert_fail(\"", text, "\");"));
      return absl::OkStatus();
    }
    case StmtKind::kStore: {
      ASSIGN_OR_RETURN(std::string idx, GlobalIndex(s.name, s.indices, s.loc));
      ASSIGN_OR_RETURN(std::string v, E(s.value));
      Line(indent, absl::StrCat(CName(s.name), "[", idx, "] = ", v, ";"));
      return absl::OkStatus();
    }
    case StmtKind::kCall: {
      const ir::IntrinsicInfo* info = ir::FindIntrinsic(s.name);
      if (!info) return Error(s.loc, absl::StrCat("unknown intrinsic '", s.name, "'"));
      if (absl::StartsWith(s.name, "wgmma_") || s.name == "fence_proxy_async") uses_wgmma_ = true;
      if (absl::StartsWith(s.name, "wgmma_m64") && absl::StrContains(s.name, "_rs_")) {
        uses_wgmma_rs_ = true;
      }
      if (absl::StartsWith(s.name, "wgmma_m64") && absl::StrContains(s.name, "k32_")) {
        uses_wgmma_fp8_ = true;
      }
      const bool tma_load = absl::StartsWith(s.name, "tma_load_");
      if (tma_load || absl::StartsWith(s.name, "mbarrier_") ||
          absl::StartsWith(s.name, "setmaxnreg_") || s.name == "named_barrier_sync" ||
          s.name == "named_barrier_arrive" || s.name == "fence_barrier_init" ||
          s.name == "prefetch_tma_desc") {
        uses_tma_ = true;
      }
      const bool tma_store = absl::StartsWith(s.name, "tma_store_");
      if (tma_store) uses_tma_ = true;
      if (s.name == "cp_async_wait" || s.name == "wgmma_wait" || s.name == "tma_store_wait" ||
          s.name == "tma_store_wait_read" || absl::StartsWith(s.name, "setmaxnreg_")) {
        Line(indent, absl::StrCat("kiln::rt::", s.name, "<", s.indices[0].ival, ">();"));
        return absl::OkStatus();
      }
      // The tensor map operand is a kernel argument (CUDA) or a local (CPU)
      // of the same name.
      const size_t map_arg = tma_load                            ? 2
                             : tma_store && s.indices.size() > 1 ? 1
                             : s.name == "prefetch_tma_desc"     ? 0
                                                                 : s.indices.size();
      // wgmma's constants (transposes, descriptor offsets, swizzle modes)
      // are template arguments: they become PTX immediates; so is the
      // register count of wgmma_fence_regs (one asm operand each).
      std::string targs;
      for (size_t i = 0; i < s.indices.size(); ++i) {
        if (info->args[i] != ir::IntrinsicArg::kConstInt ||
            (s.name.rfind("wgmma_m64", 0) != 0 && s.name != "wgmma_fence_regs")) {
          continue;
        }
        absl::StrAppend(&targs, targs.empty() ? "<" : ", ", s.indices[i].ival);
      }
      if (!targs.empty()) targs += ">";
      std::string args;
      for (size_t i = 0; i < s.indices.size(); ++i) {
        const Expr& a = s.indices[i];
        if (!targs.empty() && info->args[i] == ir::IntrinsicArg::kConstInt) continue;
        if (i == map_arg) {
          if (!ir::TmaMaps(p_.attrs) || a.ival < 0 ||
              static_cast<size_t>(a.ival) >= ir::TmaMaps(p_.attrs)->size()) {
            return Error(s.loc, absl::StrCat("internal: ", s.name, " names tensor map ", a.ival,
                                             ", which the program does not declare"));
          }
          absl::StrAppend(&args, args.empty() ? "" : ", ", "kiln_tmap_", a.ival);
          continue;
        }
        ASSIGN_OR_RETURN(std::string x, E(a));
        absl::StrAppend(&args, args.empty() ? "" : ", ", x);
      }
      Line(indent, absl::StrCat("kiln::rt::", std::string(info->name), targs, "(", args, ");"));
      return absl::OkStatus();
    }
    case StmtKind::kUseSwizzle:
    case StmtKind::kAnnotateLayout:
      return absl::OkStatus();
    case StmtKind::kCopy:
    case StmtKind::kGemm:
    case StmtKind::kFill:
    case StmtKind::kReduce:
    case StmtKind::kAtomic:
    case StmtKind::kWarpSpecialize:
    case StmtKind::kTmaCopy:
    case StmtKind::kBarrierArrive:
    case StmtKind::kBarrierWait:
    case StmtKind::kBarrierExpectTx:
    case StmtKind::kWaitWgmma:
      return Error(s.loc, "internal: tile op left after lowering");
    }
    return Error(s.loc, "internal: unknown statement kind");
  }

  const ir::Program& p_;
  std::map<std::string, const ir::Buffer*> globals_;
  std::set<std::string> scalars_;
  std::string text_;
  int64_t smem_ = 0;
  bool uses_wgmma_ = false;
  bool uses_wgmma_rs_ = false;
  bool uses_wgmma_fp8_ = false;
  int64_t local_bytes_ = 0;
  bool uses_tma_ = false;
};

} // namespace

absl::StatusOr<EmittedBody> EmitBody(const ir::Program& lowered) {
  Emitter emitter(lowered);
  return emitter.Run();
}

} // namespace kiln::codegen
