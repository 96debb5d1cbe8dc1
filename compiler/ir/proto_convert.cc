// Conversion between ir::Program and kiln.v1.Program.
//
// Wire conventions (they make FromProto(ToProto(p)) == p exact):
//  - IR enums map to wire values by explicit tables below. An enum field that
//    means something for the node's kind (Expr.bin_op of a binary, Stmt.policy
//    of a gemm, every dtype and scope, ...) must be set: UNSPECIFIED there is
//    an error. An enum field that the kind ignores may be left UNSPECIFIED by
//    hand-written clients and then reads as the IR default; ToProto writes it
//    only when it differs from that default. Unknown values are errors
//    everywhere, so a newer client's value is never misread.
//  - Buffer.init and Stmt.value are present iff has_init / has_value.
//    Stmt.buffer and Stmt.cond are written when the kind uses them or when
//    they differ from the default; absent, they read as the default.
//  - Locations are written only when known (non-zero).
//  - Plain scalars (k_pack, clear, enable, ...) and strings are copied as is;
//    checking their values is the verifier's job, except for identifiers,
//    which are validated here because codegen relies on them being safe.
//  - The wire carries tile IR only. Thread IR (ExprKind::kAddress,
//    StmtKind::kCall) exists only after lowering, inside one process, and has
//    no wire value in the tables below: ToProto rejects it, so FromProto
//    never produces it.
#include "compiler/ir/proto_convert.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/diagnostic.h"
#include "compiler/ir/limits.h"
#include "util/status_macros.h"

namespace kiln::ir {
namespace {

namespace pb = ::kiln::v1;

constexpr uint32_t kIrVersion = 1;

// Deepest expression tree and deepest statement nesting accepted. Decoding
// recurses, so this bounds the stack; real programs stay far below it.
constexpr int kMaxDepth = 256;

// Longest identifier accepted (the verifier's limit too).
constexpr size_t kMaxIdentifierLength = 256;

// ---------------------------------------------------------------------------
// Enum tables. Entry i holds the IR enumerator with ordinal i, so that
// encoding is an index; the static_asserts keep that true.

template <typename Ir, typename Pb>
struct EnumPair {
  Ir ir;
  Pb pb;
};

template <typename Ir, typename Pb, size_t N>
using EnumTable = std::array<EnumPair<Ir, Pb>, N>;

template <typename Ir, typename Pb, size_t N>
constexpr bool IndexedByOrdinal(const EnumTable<Ir, Pb, N>& table) {
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(table[i].ir) != i) return false;
  }
  return true;
}

constexpr EnumTable<DType, pb::DType, 15> kDTypes = {{
    {DType::kBool, pb::DTYPE_BOOL},
    {DType::kInt8, pb::DTYPE_INT8},
    {DType::kInt16, pb::DTYPE_INT16},
    {DType::kInt32, pb::DTYPE_INT32},
    {DType::kInt64, pb::DTYPE_INT64},
    {DType::kUInt8, pb::DTYPE_UINT8},
    {DType::kUInt16, pb::DTYPE_UINT16},
    {DType::kUInt32, pb::DTYPE_UINT32},
    {DType::kUInt64, pb::DTYPE_UINT64},
    {DType::kFloat16, pb::DTYPE_FLOAT16},
    {DType::kBFloat16, pb::DTYPE_BFLOAT16},
    {DType::kFloat32, pb::DTYPE_FLOAT32},
    {DType::kFloat64, pb::DTYPE_FLOAT64},
    {DType::kFloat8E4M3, pb::DTYPE_FLOAT8_E4M3},
    {DType::kFloat8E5M2, pb::DTYPE_FLOAT8_E5M2},
}};
static_assert(IndexedByOrdinal(kDTypes));

constexpr EnumTable<BinOp, pb::BinOp, 21> kBinOps = {{
    {BinOp::kAdd, pb::BIN_OP_ADD},
    {BinOp::kSub, pb::BIN_OP_SUB},
    {BinOp::kMul, pb::BIN_OP_MUL},
    {BinOp::kDiv, pb::BIN_OP_DIV},
    {BinOp::kFloorDiv, pb::BIN_OP_FLOOR_DIV},
    {BinOp::kFloorMod, pb::BIN_OP_FLOOR_MOD},
    {BinOp::kMin, pb::BIN_OP_MIN},
    {BinOp::kMax, pb::BIN_OP_MAX},
    {BinOp::kEq, pb::BIN_OP_EQ},
    {BinOp::kNe, pb::BIN_OP_NE},
    {BinOp::kLt, pb::BIN_OP_LT},
    {BinOp::kLe, pb::BIN_OP_LE},
    {BinOp::kGt, pb::BIN_OP_GT},
    {BinOp::kGe, pb::BIN_OP_GE},
    {BinOp::kAnd, pb::BIN_OP_AND},
    {BinOp::kOr, pb::BIN_OP_OR},
    {BinOp::kBitAnd, pb::BIN_OP_BIT_AND},
    {BinOp::kBitOr, pb::BIN_OP_BIT_OR},
    {BinOp::kBitXor, pb::BIN_OP_BIT_XOR},
    {BinOp::kShl, pb::BIN_OP_SHL},
    {BinOp::kShr, pb::BIN_OP_SHR},
}};
static_assert(IndexedByOrdinal(kBinOps));

constexpr EnumTable<UnOp, pb::UnOp, 3> kUnOps = {{
    {UnOp::kNeg, pb::UN_OP_NEG},
    {UnOp::kNot, pb::UN_OP_NOT},
    {UnOp::kBitNot, pb::UN_OP_BIT_NOT},
}};
static_assert(IndexedByOrdinal(kUnOps));

constexpr EnumTable<Intrinsic, pb::Intrinsic, 17> kIntrinsics = {{
    {Intrinsic::kExp, pb::INTRINSIC_EXP},
    {Intrinsic::kExp2, pb::INTRINSIC_EXP2},
    {Intrinsic::kLog, pb::INTRINSIC_LOG},
    {Intrinsic::kLog2, pb::INTRINSIC_LOG2},
    {Intrinsic::kSqrt, pb::INTRINSIC_SQRT},
    {Intrinsic::kRsqrt, pb::INTRINSIC_RSQRT},
    {Intrinsic::kAbs, pb::INTRINSIC_ABS},
    {Intrinsic::kPow, pb::INTRINSIC_POW},
    {Intrinsic::kTanh, pb::INTRINSIC_TANH},
    {Intrinsic::kFloor, pb::INTRINSIC_FLOOR},
    {Intrinsic::kCeil, pb::INTRINSIC_CEIL},
    {Intrinsic::kSin, pb::INTRINSIC_SIN},
    {Intrinsic::kCos, pb::INTRINSIC_COS},
    {Intrinsic::kRound, pb::INTRINSIC_ROUND},
    {Intrinsic::kTrunc, pb::INTRINSIC_TRUNC},
    {Intrinsic::kSigmoid, pb::INTRINSIC_SIGMOID},
    {Intrinsic::kReinterpret, pb::INTRINSIC_REINTERPRET},
}};
static_assert(IndexedByOrdinal(kIntrinsics));

constexpr EnumTable<ExprKind, pb::ExprKind, 10> kExprKinds = {{
    {ExprKind::kInt, pb::EXPR_KIND_INT},
    {ExprKind::kFloat, pb::EXPR_KIND_FLOAT},
    {ExprKind::kVar, pb::EXPR_KIND_VAR},
    {ExprKind::kLoad, pb::EXPR_KIND_LOAD},
    {ExprKind::kBinary, pb::EXPR_KIND_BINARY},
    {ExprKind::kUnary, pb::EXPR_KIND_UNARY},
    {ExprKind::kCall, pb::EXPR_KIND_CALL},
    {ExprKind::kCast, pb::EXPR_KIND_CAST},
    {ExprKind::kSelect, pb::EXPR_KIND_SELECT},
    {ExprKind::kThreadIdx, pb::EXPR_KIND_THREAD_IDX},
}};
static_assert(IndexedByOrdinal(kExprKinds));

constexpr EnumTable<Scope, pb::Scope, 7> kScopes = {{
    {Scope::kGlobal, pb::SCOPE_GLOBAL},
    {Scope::kShared, pb::SCOPE_SHARED},
    {Scope::kSharedDyn, pb::SCOPE_SHARED_DYN},
    {Scope::kFragment, pb::SCOPE_FRAGMENT},
    {Scope::kLocal, pb::SCOPE_LOCAL},
    {Scope::kVar, pb::SCOPE_VAR},
    {Scope::kBarrier, pb::SCOPE_BARRIER},
}};
static_assert(IndexedByOrdinal(kScopes));

constexpr EnumTable<StmtKind, pb::StmtKind, 18> kStmtKinds = {{
    {StmtKind::kAlloc, pb::STMT_KIND_ALLOC},
    {StmtKind::kCopy, pb::STMT_KIND_COPY},
    {StmtKind::kGemm, pb::STMT_KIND_GEMM},
    {StmtKind::kFill, pb::STMT_KIND_FILL},
    {StmtKind::kReduce, pb::STMT_KIND_REDUCE},
    {StmtKind::kAtomic, pb::STMT_KIND_ATOMIC},
    {StmtKind::kFor, pb::STMT_KIND_FOR},
    {StmtKind::kIf, pb::STMT_KIND_IF},
    {StmtKind::kStore, pb::STMT_KIND_STORE},
    {StmtKind::kAnnotateLayout, pb::STMT_KIND_ANNOTATE_LAYOUT},
    {StmtKind::kUseSwizzle, pb::STMT_KIND_USE_SWIZZLE},
    {StmtKind::kWarpSpecialize, pb::STMT_KIND_WARP_SPECIALIZE},
    {StmtKind::kTmaCopy, pb::STMT_KIND_TMA_COPY},
    {StmtKind::kBarrierArrive, pb::STMT_KIND_BARRIER_ARRIVE},
    {StmtKind::kBarrierWait, pb::STMT_KIND_BARRIER_WAIT},
    {StmtKind::kBarrierExpectTx, pb::STMT_KIND_BARRIER_EXPECT_TX},
    {StmtKind::kAssert, pb::STMT_KIND_ASSERT},
    {StmtKind::kWaitWgmma, pb::STMT_KIND_WAIT_WGMMA},
}};
static_assert(IndexedByOrdinal(kStmtKinds));

constexpr EnumTable<ForKind, pb::ForKind, 5> kForKinds = {{
    {ForKind::kSerial, pb::FOR_KIND_SERIAL},
    {ForKind::kUnroll, pb::FOR_KIND_UNROLL},
    {ForKind::kVectorized, pb::FOR_KIND_VECTORIZED},
    {ForKind::kParallel, pb::FOR_KIND_PARALLEL},
    {ForKind::kPipelined, pb::FOR_KIND_PIPELINED},
}};
static_assert(IndexedByOrdinal(kForKinds));

constexpr EnumTable<ReduceKind, pb::ReduceKind, 5> kReduceKinds = {{
    {ReduceKind::kSum, pb::REDUCE_KIND_SUM},
    {ReduceKind::kMax, pb::REDUCE_KIND_MAX},
    {ReduceKind::kMin, pb::REDUCE_KIND_MIN},
    {ReduceKind::kAbsSum, pb::REDUCE_KIND_ABS_SUM},
    {ReduceKind::kAbsMax, pb::REDUCE_KIND_ABS_MAX},
}};
static_assert(IndexedByOrdinal(kReduceKinds));

constexpr EnumTable<AtomicOp, pb::AtomicOp, 3> kAtomicOps = {{
    {AtomicOp::kAdd, pb::ATOMIC_OP_ADD},
    {AtomicOp::kMax, pb::ATOMIC_OP_MAX},
    {AtomicOp::kMin, pb::ATOMIC_OP_MIN},
}};
static_assert(IndexedByOrdinal(kAtomicOps));

constexpr EnumTable<GemmPolicy, pb::GemmPolicy, 3> kGemmPolicies = {{
    {GemmPolicy::kSquare, pb::GEMM_POLICY_SQUARE},
    {GemmPolicy::kFullRow, pb::GEMM_POLICY_FULL_ROW},
    {GemmPolicy::kFullCol, pb::GEMM_POLICY_FULL_COL},
}};
static_assert(IndexedByOrdinal(kGemmPolicies));

template <typename Ir, typename Pb, size_t N>
Pb Encode(const EnumTable<Ir, Pb, N>& table, Ir value) {
  size_t i = static_cast<size_t>(value);
  return i < N ? table[i].pb : static_cast<Pb>(0);
}

// Encodes a field that only some kinds use: UNSPECIFIED stands for the IR
// default when the kind ignores the field.
template <typename Ir, typename Pb, size_t N>
Pb EncodeOptional(const EnumTable<Ir, Pb, N>& table, Ir value, bool used) {
  return (used || value != Ir{}) ? Encode(table, value) : static_cast<Pb>(0);
}

bool IsKnownLoc(const Loc& loc) { return loc.line != 0 || loc.col != 0; }

// ---------------------------------------------------------------------------
// ToProto.

void EncodeLoc(const Loc& loc, pb::Loc* out) {
  out->set_line(loc.line);
  out->set_col(loc.col);
}

void EncodeExpr(const Expr& e, pb::Expr* out) {
  out->set_kind(Encode(kExprKinds, e.kind));
  out->set_dtype(Encode(kDTypes, e.dtype));
  out->set_int_value(e.ival);
  out->set_float_value(e.fval);
  out->set_name(e.name);
  out->set_bin_op(EncodeOptional(kBinOps, e.bop, e.kind == ExprKind::kBinary));
  out->set_un_op(EncodeOptional(kUnOps, e.uop, e.kind == ExprKind::kUnary));
  out->set_intrinsic(EncodeOptional(kIntrinsics, e.fn, e.kind == ExprKind::kCall));
  out->mutable_args()->Reserve(static_cast<int>(e.args.size()));
  for (const Expr& arg : e.args) EncodeExpr(arg, out->add_args());
  if (IsKnownLoc(e.loc)) EncodeLoc(e.loc, out->mutable_loc());
}

void EncodeBuffer(const Buffer& b, pb::Buffer* out) {
  out->set_name(b.name);
  out->set_dtype(Encode(kDTypes, b.dtype));
  out->set_scope(Encode(kScopes, b.scope));
  for (const Expr& extent : b.shape) EncodeExpr(extent, out->add_shape());
  if (b.has_init) EncodeExpr(b.init, out->mutable_init());
  if (IsKnownLoc(b.loc)) EncodeLoc(b.loc, out->mutable_loc());
  if (b.index_layout) {
    pb::IndexLayout* l = out->mutable_index_layout();
    for (const std::string& v : b.index_layout->vars) l->add_vars(v);
    for (const Expr& f : b.index_layout->forward) EncodeExpr(f, l->add_forward());
    if (IsKnownLoc(b.index_layout->loc)) EncodeLoc(b.index_layout->loc, l->mutable_loc());
  }
}

void EncodeRegion(const Region& r, pb::Region* out) {
  out->set_buffer(r.buffer);
  for (const Range& range : r.ranges) {
    pb::Range* pr = out->add_ranges();
    EncodeExpr(range.min, pr->mutable_min());
    EncodeExpr(range.extent, pr->mutable_extent());
  }
  if (IsKnownLoc(r.loc)) EncodeLoc(r.loc, out->mutable_loc());
}

void EncodeStmt(const Stmt& s, pb::Stmt* out) {
  out->set_kind(Encode(kStmtKinds, s.kind));
  if (IsKnownLoc(s.loc)) EncodeLoc(s.loc, out->mutable_loc());
  if (s.kind == StmtKind::kAlloc || !(s.buffer == Buffer{})) {
    EncodeBuffer(s.buffer, out->mutable_buffer());
  }
  for (const Region& r : s.regions) EncodeRegion(r, out->add_regions());
  if (s.has_value) EncodeExpr(s.value, out->mutable_value());
  out->set_transpose_a(s.transpose_a);
  out->set_transpose_b(s.transpose_b);
  out->set_clear_accum(s.clear_accum);
  out->set_k_pack(s.k_pack);
  out->set_wg_wait(s.wg_wait);
  out->set_policy(EncodeOptional(kGemmPolicies, s.policy, s.kind == StmtKind::kGemm));
  out->set_reduce_kind(EncodeOptional(kReduceKinds, s.reduce_kind, s.kind == StmtKind::kReduce));
  out->set_dim(s.dim);
  out->set_clear(s.clear);
  out->set_atomic_op(EncodeOptional(kAtomicOps, s.atomic_op, s.kind == StmtKind::kAtomic));
  out->set_for_kind(EncodeOptional(kForKinds, s.for_kind, s.kind == StmtKind::kFor));
  for (const std::string& v : s.loop_vars) out->add_loop_vars(v);
  for (const Expr& e : s.extents) EncodeExpr(e, out->add_extents());
  out->set_num_stages(s.num_stages);
  for (int32_t v : s.order) out->add_order(v);
  for (int32_t v : s.stage) out->add_stage(v);
  if (s.kind == StmtKind::kIf || s.kind == StmtKind::kAssert || !(s.cond == Expr{})) {
    EncodeExpr(s.cond, out->mutable_cond());
  }
  for (const Stmt& b : s.body) EncodeStmt(b, out->add_body());
  for (const Stmt& b : s.else_body) EncodeStmt(b, out->add_else_body());
  out->set_name(s.name);
  for (const Expr& e : s.indices) EncodeExpr(e, out->add_indices());
  out->set_layout(s.layout);
  out->set_panel_size(s.panel_size);
  out->set_swizzle_order(s.swizzle_order);
  out->set_enable(s.enable);
  out->set_message(s.message);
}

// The first thread-IR node of a program, for ToProto's error.
struct ThreadIrUse {
  Loc loc;
  std::string what;
};

Loc KnownOr(Loc loc, Loc fallback) { return IsKnownLoc(loc) ? loc : fallback; }

// Every Find* walks all the fields that ToProto encodes, used or not.
bool FindThreadIr(const Expr& e, Loc at, ThreadIrUse* use) {
  const Loc loc = KnownOr(e.loc, at);
  if (e.kind == ExprKind::kAddress) {
    *use = ThreadIrUse{loc, absl::StrCat("address &", e.name, "[...]")};
    return true;
  }
  for (const Expr& a : e.args) {
    if (FindThreadIr(a, loc, use)) return true;
  }
  return false;
}

bool FindThreadIr(const std::vector<Expr>& es, Loc at, ThreadIrUse* use) {
  for (const Expr& e : es) {
    if (FindThreadIr(e, at, use)) return true;
  }
  return false;
}

bool FindThreadIr(const Buffer& b, Loc at, ThreadIrUse* use) {
  const Loc loc = KnownOr(b.loc, at);
  return FindThreadIr(b.shape, loc, use) || FindThreadIr(b.init, loc, use) ||
         (b.index_layout && FindThreadIr(b.index_layout->forward, loc, use));
}

bool FindThreadIr(const std::vector<Stmt>& stmts, ThreadIrUse* use) {
  for (const Stmt& s : stmts) {
    if (s.kind == StmtKind::kCall) {
      *use = ThreadIrUse{s.loc, absl::StrCat("call ", s.name)};
      return true;
    }
    if (FindThreadIr(s.buffer, s.loc, use)) return true;
    for (const Region& r : s.regions) {
      for (const Range& range : r.ranges) {
        if (FindThreadIr(range.min, KnownOr(r.loc, s.loc), use) ||
            FindThreadIr(range.extent, KnownOr(r.loc, s.loc), use)) {
          return true;
        }
      }
    }
    if (FindThreadIr(s.value, s.loc, use) || FindThreadIr(s.extents, s.loc, use) ||
        FindThreadIr(s.cond, s.loc, use) || FindThreadIr(s.indices, s.loc, use) ||
        FindThreadIr(s.body, use) || FindThreadIr(s.else_body, use)) {
      return true;
    }
  }
  return false;
}

bool FindThreadIr(const Program& p, ThreadIrUse* use) {
  for (const Param& param : p.params) {
    if (FindThreadIr(param.buffer, Loc{}, use)) return true;
  }
  for (const Buffer& b : p.workspaces) {
    if (FindThreadIr(b, Loc{}, use)) return true;
  }
  if (FindThreadIr(p.kernel.grid, p.kernel.loc, use) || FindThreadIr(p.kernel.body, use)) {
    return true;
  }
  for (const Kernel& k : p.next_kernels) {
    if (FindThreadIr(k.grid, k.loc, use) || FindThreadIr(k.body, use)) return true;
  }
  return false;
}

// Tile IR only (callers check FindThreadIr first). *out is empty.
void EncodeProgram(const Program& program, pb::Program* out) {
  out->set_ir_version(kIrVersion);
  out->set_name(program.name);
  out->set_source_name(program.source_name);
  for (const Symbol& s : program.symbols) {
    pb::Symbol* ps = out->add_symbols();
    ps->set_name(s.name);
    ps->set_dtype(Encode(kDTypes, s.dtype));
    if (IsKnownLoc(s.loc)) EncodeLoc(s.loc, ps->mutable_loc());
    ps->set_user_name(s.user_name);
  }
  for (const Param& p : program.params) {
    pb::Param* pp = out->add_params();
    EncodeBuffer(p.buffer, pp->mutable_buffer());
    pp->set_is_scalar(p.is_scalar);
    pp->set_is_output(p.is_output);
    pp->set_user_name(p.user_name);
  }
  auto kernel = [&](const Kernel& k, pb::Kernel* pk) {
    for (const Expr& e : k.grid) EncodeExpr(e, pk->add_grid());
    for (const std::string& v : k.block_vars) pk->add_block_vars(v);
    for (int64_t t : k.threads) pk->add_threads(t);
    for (const Stmt& s : k.body) EncodeStmt(s, pk->add_body());
    if (IsKnownLoc(k.loc)) EncodeLoc(k.loc, pk->mutable_loc());
  };
  kernel(program.kernel, out->mutable_kernel());
  for (const Kernel& k : program.next_kernels) kernel(k, out->add_next_kernels());
  for (const Buffer& b : program.workspaces) EncodeBuffer(b, out->add_workspaces());
  for (const auto& [key, value] : program.attrs) (*out->mutable_attrs())[key] = value;
}

// ---------------------------------------------------------------------------
// FromProto.

bool IsIdentifier(const std::string& s, bool allow_dot) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s) {
    if (!alpha(c) && !(c >= '0' && c <= '9') && !(allow_dot && c == '.')) return false;
  }
  return true;
}

// A client string, escaped and shortened for an error message.
std::string Quote(const std::string& s) {
  constexpr size_t kMax = 64;
  std::string shown = absl::CHexEscape(s.substr(0, kMax));
  return absl::StrCat("\"", shown, s.size() > kMax ? "\"..." : "\"");
}

// "STMT_KIND_COPY" -> "copy": the wire name without the enum's prefix.
template <typename Pb>
std::string ShortName(Pb value) {
  const google::protobuf::EnumDescriptor* desc = google::protobuf::GetEnumDescriptor<Pb>();
  const google::protobuf::EnumValueDescriptor* v = desc->FindValueByNumber(value);
  if (v == nullptr) return absl::StrCat(static_cast<int>(value));
  std::string prefix = desc->value(0)->name(); // FOO_UNSPECIFIED
  prefix.resize(prefix.size() - std::string_view("UNSPECIFIED").size());
  std::string name = v->name();
  if (name.rfind(prefix, 0) == 0) name.erase(0, prefix.size());
  for (char& c : name) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return name;
}

Loc DecodeLoc(bool has, const pb::Loc& loc) {
  if (!has) return Loc{};
  return Loc{loc.line(), loc.col()};
}

// One FromProto call. Tracks the path from the root to the node being decoded
// (for messages like "kernel.body[2].value.args[0]: ...") and the innermost
// known source location on that path.
class Decoder {
 public:
  explicit Decoder(std::string file) : file_(std::move(file)) {}

  absl::Status DecodeProgram(const pb::Program& in, Program* out);

 private:
  struct Segment {
    const char* field;
    int index; // -1: not an element of a repeated field
    Loc loc;
  };

  // Pushes a path segment for the lifetime of the object.
  class Enter {
   public:
    Enter(Decoder* d, const char* field, int index = -1) : d_(d) {
      d_->path_.push_back(Segment{field, index, Loc{}});
    }
    ~Enter() { d_->path_.pop_back(); }
    Enter(const Enter&) = delete;
    Enter& operator=(const Enter&) = delete;

   private:
    Decoder* d_;
  };

  void SetLoc(Loc loc) {
    if (!path_.empty() && loc.line > 0) path_.back().loc = loc;
  }

  std::string Path(const char* field) const;
  absl::Status Error(const std::string& message, const char* field = nullptr) const;

  template <typename Ir, typename Pb, size_t N>
  absl::Status DecodeEnum(const EnumTable<Ir, Pb, N>& table, Pb value, bool required,
                          const char* field, Ir* out) const;
  absl::Status CheckName(const std::string& name, bool required, const char* field,
                         const std::string& what) const;

  // The recursion (DecodeExpr, DecodeStmts, DecodeStmt) keeps small frames:
  // each node's fields are decoded out of line (docs/design/ir-text.md,
  // Limits).
  absl::Status DecodeExpr(const pb::Expr& in, int depth, Expr* out);
  ABSL_ATTRIBUTE_NOINLINE absl::Status DecodeExprNode(const pb::Expr& in, Expr* out);
  ABSL_ATTRIBUTE_NOINLINE absl::Status TooDeep(const char* what) const;
  absl::Status DecodeExprs(const google::protobuf::RepeatedPtrField<pb::Expr>& in,
                           const char* field, std::vector<Expr>* out);
  absl::Status DecodeExprField(bool has, const pb::Expr& in, const char* field, Expr* out);
  absl::Status DecodeBuffer(const pb::Buffer& in, bool name_required, Buffer* out);
  absl::Status DecodeRegion(const pb::Region& in, Region* out);
  absl::Status DecodeStmts(const google::protobuf::RepeatedPtrField<pb::Stmt>& in,
                           const char* field, int depth, std::vector<Stmt>* out);
  absl::Status DecodeStmt(const pb::Stmt& in, int depth, Stmt* out);
  ABSL_ATTRIBUTE_NOINLINE absl::Status DecodeStmtHead(const pb::Stmt& in, Stmt* out);
  ABSL_ATTRIBUTE_NOINLINE absl::Status DecodeStmtTail(const pb::Stmt& in, Stmt* out);
  absl::Status CheckStmtOperands(const Stmt& s, const pb::Stmt& in);
  absl::Status DecodeKernel(const pb::Kernel& in, Kernel* out);

  // Count `n` more statements (symbols and params included) or expression
  // nodes (regions, ranges and loop variables included) before they are
  // allocated: an empty element is ~2 bytes on the wire and ~100 to 700
  // bytes in the IR.
  absl::Status CountStmts(int n, const char* field);
  absl::Status CountExprs(int n, const char* field);

  std::string file_;
  std::vector<Segment> path_;
  int stmts_ = 0;
  int exprs_ = 0;
};

absl::Status Decoder::CountStmts(int n, const char* field) {
  if (n > kMaxStatements - stmts_) {
    return Error(
        absl::StrCat("program has more than ", kMaxStatements, " statements and declarations"),
        field);
  }
  stmts_ += n;
  return absl::OkStatus();
}

absl::Status Decoder::CountExprs(int n, const char* field) {
  if (n > kMaxExprNodes - exprs_) {
    return Error(absl::StrCat("program has more than ", kMaxExprNodes, " expression nodes"), field);
  }
  exprs_ += n;
  return absl::OkStatus();
}

std::string Decoder::Path(const char* field) const {
  // The path of a node 256 levels down is mostly "args[0]." repeated; keep
  // its two ends.
  constexpr size_t kKeep = 8;
  std::string path;
  auto append = [&](const Segment& s) {
    if (!path.empty()) path += '.';
    path += s.field;
    if (s.index >= 0) absl::StrAppend(&path, "[", s.index, "]");
  };
  if (path_.size() <= 3 * kKeep) {
    for (const Segment& s : path_) append(s);
  } else {
    for (size_t i = 0; i < kKeep; ++i) append(path_[i]);
    absl::StrAppend(&path, ".<", path_.size() - 2 * kKeep, " more>");
    for (size_t i = path_.size() - kKeep; i < path_.size(); ++i) append(path_[i]);
  }
  if (field != nullptr) {
    if (!path.empty()) path += '.';
    path += field;
  }
  return path;
}

absl::Status Decoder::Error(const std::string& message, const char* field) const {
  Loc loc;
  for (auto it = path_.rbegin(); it != path_.rend(); ++it) {
    if (it->loc.line > 0) {
      loc = it->loc;
      break;
    }
  }
  std::string path = Path(field);
  std::string text = path.empty() ? message : absl::StrCat(path, ": ", message);
  return ErrorAt(file_, loc, text);
}

template <typename Ir, typename Pb, size_t N>
absl::Status Decoder::DecodeEnum(const EnumTable<Ir, Pb, N>& table, Pb value, bool required,
                                 const char* field, Ir* out) const {
  const google::protobuf::EnumDescriptor* desc = google::protobuf::GetEnumDescriptor<Pb>();
  int number = static_cast<int>(value);
  if (number == 0) {
    if (!required) {
      *out = Ir{};
      return absl::OkStatus();
    }
    return Error(absl::StrCat(desc->value(0)->name(), " (0) is not allowed; a ", desc->name(),
                              " value is required"),
                 field);
  }
  for (const EnumPair<Ir, Pb>& pair : table) {
    if (pair.pb == value) {
      *out = pair.ir;
      return absl::OkStatus();
    }
  }
  return Error(absl::StrCat("unknown ", desc->name(), " value ", number), field);
}

absl::Status Decoder::CheckName(const std::string& name, bool required, const char* field,
                                const std::string& what) const {
  if (name.empty()) {
    if (!required) return absl::OkStatus();
    return Error(absl::StrCat("missing ", what), field);
  }
  if (name.size() > kMaxIdentifierLength) {
    return Error(absl::StrCat(what, " ", Quote(name), " is longer than ", kMaxIdentifierLength,
                              " characters"),
                 field);
  }
  if (!IsIdentifier(name, /*allow_dot=*/false)) {
    return Error(
        absl::StrCat("invalid ", what, " ", Quote(name), " (expected [A-Za-z_][A-Za-z0-9_]*)"),
        field);
  }
  return absl::OkStatus();
}

// The number of operands each expression kind takes; -1: any.
int ExprArity(ExprKind kind, Intrinsic fn) {
  switch (kind) {
  case ExprKind::kInt:
  case ExprKind::kFloat:
  case ExprKind::kVar:
  case ExprKind::kThreadIdx:
    return 0;
  case ExprKind::kLoad:
    return -1;
  case ExprKind::kBinary:
    return 2;
  case ExprKind::kUnary:
  case ExprKind::kCast:
    return 1;
  case ExprKind::kCall:
    return fn == Intrinsic::kPow ? 2 : 1;
  case ExprKind::kSelect:
    return 3;
  case ExprKind::kAddress: // thread IR: no wire value, never decoded
    return 1;
  }
  return -1;
}

std::string_view ExprKindName(ExprKind kind) {
  switch (kind) {
  case ExprKind::kInt:
    return "int literal";
  case ExprKind::kFloat:
    return "float literal";
  case ExprKind::kVar:
    return "var";
  case ExprKind::kLoad:
    return "load";
  case ExprKind::kBinary:
    return "binary expression";
  case ExprKind::kUnary:
    return "unary expression";
  case ExprKind::kCall:
    return "call";
  case ExprKind::kCast:
    return "cast";
  case ExprKind::kSelect:
    return "select";
  case ExprKind::kThreadIdx:
    return "thread index";
  case ExprKind::kAddress: // thread IR: no wire value, never decoded
    return "address";
  }
  return "expression";
}

absl::Status Decoder::TooDeep(const char* what) const {
  return Error(absl::StrCat(what, " nesting is deeper than ", kMaxDepth, " levels"));
}

absl::Status Decoder::DecodeExpr(const pb::Expr& in, int depth, Expr* out) {
  if (depth > kMaxDepth) return TooDeep("expression");
  RETURN_IF_ERROR(DecodeExprNode(in, out));
  RETURN_IF_ERROR(CountExprs(in.args_size(), "args"));
  out->args.resize(in.args_size());
  for (int i = 0; i < in.args_size(); ++i) {
    Enter enter(this, "args", i);
    RETURN_IF_ERROR(DecodeExpr(in.args(i), depth + 1, &out->args[i]));
  }
  return absl::OkStatus();
}

// Everything of one expression but its operands.
absl::Status Decoder::DecodeExprNode(const pb::Expr& in, Expr* out) {
  out->loc = DecodeLoc(in.has_loc(), in.loc());
  SetLoc(out->loc);
  RETURN_IF_ERROR(DecodeEnum(kExprKinds, in.kind(), true, "kind", &out->kind));
  RETURN_IF_ERROR(DecodeEnum(kDTypes, in.dtype(), true, "dtype", &out->dtype));
  RETURN_IF_ERROR(
      DecodeEnum(kBinOps, in.bin_op(), out->kind == ExprKind::kBinary, "bin_op", &out->bop));
  RETURN_IF_ERROR(
      DecodeEnum(kUnOps, in.un_op(), out->kind == ExprKind::kUnary, "un_op", &out->uop));
  RETURN_IF_ERROR(
      DecodeEnum(kIntrinsics, in.intrinsic(), out->kind == ExprKind::kCall, "intrinsic", &out->fn));
  out->ival = in.int_value();
  out->fval = in.float_value();

  switch (out->kind) {
  case ExprKind::kVar:
    RETURN_IF_ERROR(CheckName(in.name(), true, "name", "variable name"));
    break;
  case ExprKind::kLoad:
    RETURN_IF_ERROR(CheckName(in.name(), true, "name", "buffer name"));
    break;
  default:
    RETURN_IF_ERROR(CheckName(in.name(), false, "name", "name"));
    break;
  }
  out->name = in.name();
  if (out->kind == ExprKind::kThreadIdx && (out->ival < 0 || out->ival > 2)) {
    return Error(absl::StrCat("thread index dimension must be 0, 1 or 2, got ", out->ival),
                 "int_value");
  }

  int arity = ExprArity(out->kind, out->fn);
  if (arity >= 0 && in.args_size() != arity) {
    std::string what(ExprKindName(out->kind));
    if (out->kind == ExprKind::kCall) {
      what = absl::StrCat("call to ", ShortName(in.intrinsic()));
    }
    return Error(absl::StrCat(what, " needs ", arity, arity == 1 ? " arg" : " args", ", got ",
                              in.args_size()),
                 "args");
  }
  return absl::OkStatus();
}

absl::Status Decoder::DecodeExprs(const google::protobuf::RepeatedPtrField<pb::Expr>& in,
                                  const char* field, std::vector<Expr>* out) {
  RETURN_IF_ERROR(CountExprs(in.size(), field));
  out->resize(in.size());
  for (int i = 0; i < in.size(); ++i) {
    Enter enter(this, field, i);
    RETURN_IF_ERROR(DecodeExpr(in.Get(i), 1, &(*out)[i]));
  }
  return absl::OkStatus();
}

// A singular expression field; absent reads as the default expression.
absl::Status Decoder::DecodeExprField(bool has, const pb::Expr& in, const char* field, Expr* out) {
  if (!has) {
    *out = Expr{};
    return absl::OkStatus();
  }
  Enter enter(this, field);
  return DecodeExpr(in, 1, out);
}

absl::Status Decoder::DecodeBuffer(const pb::Buffer& in, bool name_required, Buffer* out) {
  out->loc = DecodeLoc(in.has_loc(), in.loc());
  SetLoc(out->loc);
  RETURN_IF_ERROR(CheckName(in.name(), name_required, "name", "buffer name"));
  out->name = in.name();
  RETURN_IF_ERROR(DecodeEnum(kDTypes, in.dtype(), true, "dtype", &out->dtype));
  RETURN_IF_ERROR(DecodeEnum(kScopes, in.scope(), true, "scope", &out->scope));
  RETURN_IF_ERROR(DecodeExprs(in.shape(), "shape", &out->shape));
  out->has_init = in.has_init();
  RETURN_IF_ERROR(DecodeExprField(in.has_init(), in.init(), "init", &out->init));
  out->index_layout.reset();
  if (!in.has_index_layout()) return absl::OkStatus();
  Enter enter(this, "index_layout");
  const pb::IndexLayout& l = in.index_layout();
  IndexLayout layout;
  layout.loc = DecodeLoc(l.has_loc(), l.loc());
  RETURN_IF_ERROR(CountExprs(l.vars_size(), "vars"));
  for (int i = 0; i < l.vars_size(); ++i) {
    Enter var(this, "vars", i);
    RETURN_IF_ERROR(CheckName(l.vars(i), true, "vars", "layout variable"));
    layout.vars.push_back(l.vars(i));
  }
  RETURN_IF_ERROR(DecodeExprs(l.forward(), "forward", &layout.forward));
  out->index_layout = std::move(layout);
  return absl::OkStatus();
}

absl::Status Decoder::DecodeRegion(const pb::Region& in, Region* out) {
  out->loc = DecodeLoc(in.has_loc(), in.loc());
  SetLoc(out->loc);
  RETURN_IF_ERROR(CheckName(in.buffer(), true, "buffer", "buffer name"));
  out->buffer = in.buffer();
  RETURN_IF_ERROR(CountExprs(in.ranges_size(), "ranges"));
  out->ranges.resize(in.ranges_size());
  for (int i = 0; i < in.ranges_size(); ++i) {
    Enter enter(this, "ranges", i);
    const pb::Range& range = in.ranges(i);
    if (!range.has_min()) return Error("range without min");
    if (!range.has_extent()) return Error("range without extent");
    RETURN_IF_ERROR(DecodeExprField(true, range.min(), "min", &out->ranges[i].min));
    RETURN_IF_ERROR(DecodeExprField(true, range.extent(), "extent", &out->ranges[i].extent));
  }
  return absl::OkStatus();
}

absl::Status Decoder::DecodeStmts(const google::protobuf::RepeatedPtrField<pb::Stmt>& in,
                                  const char* field, int depth, std::vector<Stmt>* out) {
  RETURN_IF_ERROR(CountStmts(in.size(), field));
  out->resize(in.size());
  for (int i = 0; i < in.size(); ++i) {
    Enter enter(this, field, i);
    RETURN_IF_ERROR(DecodeStmt(in.Get(i), depth, &(*out)[i]));
  }
  return absl::OkStatus();
}

absl::Status Decoder::DecodeStmt(const pb::Stmt& in, int depth, Stmt* out) {
  if (depth > kMaxDepth) return TooDeep("statement");
  RETURN_IF_ERROR(DecodeStmtHead(in, out));
  RETURN_IF_ERROR(DecodeStmts(in.body(), "body", depth + 1, &out->body));
  RETURN_IF_ERROR(DecodeStmts(in.else_body(), "else_body", depth + 1, &out->else_body));
  return DecodeStmtTail(in, out);
}

// The fields decoded before the bodies, in the order errors are reported.
absl::Status Decoder::DecodeStmtHead(const pb::Stmt& in, Stmt* out) {
  out->loc = DecodeLoc(in.has_loc(), in.loc());
  SetLoc(out->loc);
  RETURN_IF_ERROR(DecodeEnum(kStmtKinds, in.kind(), true, "kind", &out->kind));
  const StmtKind kind = out->kind;
  RETURN_IF_ERROR(CheckStmtOperands(*out, in));

  if (in.has_buffer()) {
    Enter enter(this, "buffer");
    RETURN_IF_ERROR(DecodeBuffer(in.buffer(), kind == StmtKind::kAlloc, &out->buffer));
  }
  RETURN_IF_ERROR(CountExprs(in.regions_size(), "regions"));
  out->regions.resize(in.regions_size());
  for (int i = 0; i < in.regions_size(); ++i) {
    Enter enter(this, "regions", i);
    RETURN_IF_ERROR(DecodeRegion(in.regions(i), &out->regions[i]));
  }
  out->has_value = in.has_value();
  RETURN_IF_ERROR(DecodeExprField(in.has_value(), in.value(), "value", &out->value));

  out->transpose_a = in.transpose_a();
  out->transpose_b = in.transpose_b();
  out->clear_accum = in.clear_accum();
  out->k_pack = in.k_pack();
  out->wg_wait = in.wg_wait();
  RETURN_IF_ERROR(
      DecodeEnum(kGemmPolicies, in.policy(), kind == StmtKind::kGemm, "policy", &out->policy));
  RETURN_IF_ERROR(DecodeEnum(kReduceKinds, in.reduce_kind(), kind == StmtKind::kReduce,
                             "reduce_kind", &out->reduce_kind));
  out->dim = in.dim();
  out->clear = in.clear();
  RETURN_IF_ERROR(DecodeEnum(kAtomicOps, in.atomic_op(), kind == StmtKind::kAtomic, "atomic_op",
                             &out->atomic_op));

  RETURN_IF_ERROR(
      DecodeEnum(kForKinds, in.for_kind(), kind == StmtKind::kFor, "for_kind", &out->for_kind));
  RETURN_IF_ERROR(CountExprs(in.loop_vars_size(), "loop_vars"));
  out->loop_vars.reserve(in.loop_vars_size());
  for (int i = 0; i < in.loop_vars_size(); ++i) {
    Enter enter(this, "loop_vars", i);
    RETURN_IF_ERROR(CheckName(in.loop_vars(i), true, nullptr, "loop variable name"));
    out->loop_vars.push_back(in.loop_vars(i));
  }
  if (kind == StmtKind::kFor) {
    if (in.loop_vars_size() == 0) return Error("for loop without loop variables", "loop_vars");
    if (in.loop_vars_size() != in.extents_size()) {
      return Error(absl::StrCat("for loop has ", in.loop_vars_size(), " loop_vars but ",
                                in.extents_size(), " extents"),
                   "extents");
    }
    if (out->for_kind != ForKind::kParallel && in.loop_vars_size() != 1) {
      return Error(absl::StrCat(ShortName(in.for_kind()), " loop has ", in.loop_vars_size(),
                                " loop_vars; only a parallel loop may have more than one"),
                   "loop_vars");
    }
  }
  RETURN_IF_ERROR(DecodeExprs(in.extents(), "extents", &out->extents));
  out->num_stages = in.num_stages();
  out->order.assign(in.order().begin(), in.order().end());
  out->stage.assign(in.stage().begin(), in.stage().end());

  if ((kind == StmtKind::kIf || kind == StmtKind::kAssert) && !in.has_cond()) {
    return Error(absl::StrCat(ShortName(in.kind()), " statement without cond"), "cond");
  }
  RETURN_IF_ERROR(DecodeExprField(in.has_cond(), in.cond(), "cond", &out->cond));
  return absl::OkStatus();
}

// The fields decoded after the bodies.
absl::Status Decoder::DecodeStmtTail(const pb::Stmt& in, Stmt* out) {
  const StmtKind kind = out->kind;
  bool names_buffer = kind == StmtKind::kStore || kind == StmtKind::kAnnotateLayout;
  RETURN_IF_ERROR(CheckName(in.name(), names_buffer, "name", "buffer name"));
  out->name = in.name();
  RETURN_IF_ERROR(DecodeExprs(in.indices(), "indices", &out->indices));
  RETURN_IF_ERROR(
      CheckName(in.layout(), kind == StmtKind::kAnnotateLayout, "layout", "layout kind"));
  out->layout = in.layout();

  out->panel_size = in.panel_size();
  const std::string& order = in.swizzle_order();
  bool order_ok =
      order == "row" || order == "col" || (order.empty() && kind != StmtKind::kUseSwizzle);
  if (!order_ok) {
    return Error(absl::StrCat("swizzle order must be \"row\" or \"col\", got ", Quote(order)),
                 "swizzle_order");
  }
  out->swizzle_order = order;
  out->enable = in.enable();
  // Checked here as well as by the verifier: generated code spells the
  // message out byte by byte, and only printable text may reach it.
  const std::string& message = in.message();
  if (!IsValidAssertMessage(message) || (!message.empty() && kind != StmtKind::kAssert)) {
    return Error(absl::StrCat("message must be printable ASCII of at most ", kMaxAssertMessage,
                              " bytes, on an assert statement only"),
                 "message");
  }
  out->message = message;
  return absl::OkStatus();
}

// Operands each statement kind needs, checked before the fields are decoded
// so that the message names the statement rather than a missing part.
absl::Status Decoder::CheckStmtOperands(const Stmt& s, const pb::Stmt& in) {
  auto regions = [&](int want, const char* names) -> absl::Status {
    if (in.regions_size() == want) return absl::OkStatus();
    return Error(absl::StrCat(ShortName(in.kind()), " needs ", want,
                              want == 1 ? " region (" : " regions (", names, "), got ",
                              in.regions_size()),
                 "regions");
  };
  auto value = [&]() -> absl::Status {
    if (in.has_value()) return absl::OkStatus();
    return Error(absl::StrCat(ShortName(in.kind()), " without value"), "value");
  };
  switch (s.kind) {
  case StmtKind::kAlloc:
    if (!in.has_buffer()) return Error("alloc without buffer", "buffer");
    return absl::OkStatus();
  case StmtKind::kCopy:
    return regions(2, "src, dst");
  case StmtKind::kGemm:
    return regions(3, "A, B, C");
  case StmtKind::kFill:
    RETURN_IF_ERROR(regions(1, "dst"));
    return value();
  case StmtKind::kReduce:
    return regions(2, "src, dst");
  case StmtKind::kAtomic:
    if ((in.regions_size() == 1 && in.has_value()) || (in.regions_size() == 2 && !in.has_value())) {
      return absl::OkStatus();
    }
    return Error(absl::StrCat("atomic needs regions {dst} and a value, or regions "
                              "{dst, src} and no value; got ",
                              in.regions_size(), in.regions_size() == 1 ? " region" : " regions",
                              in.has_value() ? " and a value" : " and no value"),
                 "regions");
  case StmtKind::kStore:
    return value();
  case StmtKind::kTmaCopy:
    return regions(3, "src, dst, barrier");
  case StmtKind::kBarrierArrive:
    return regions(1, "barrier");
  case StmtKind::kBarrierWait:
  case StmtKind::kBarrierExpectTx:
    RETURN_IF_ERROR(regions(1, "barrier"));
    return value();
  case StmtKind::kWaitWgmma:
    RETURN_IF_ERROR(regions(0, "none"));
    return value();
  case StmtKind::kWarpSpecialize:
    return absl::OkStatus(); // the verifier checks the warpgroup ids
  case StmtKind::kFor:
  case StmtKind::kIf:
  case StmtKind::kAssert:
  case StmtKind::kAnnotateLayout:
  case StmtKind::kUseSwizzle:
    return absl::OkStatus(); // checked with their fields
  case StmtKind::kCall:
    // Thread IR has no wire value (kStmtKinds), so this is never reached.
    return Error("thread-level call statements cannot be sent over the wire", "kind");
  }
  return absl::OkStatus();
}

absl::Status Decoder::DecodeKernel(const pb::Kernel& in, Kernel* out) {
  out->loc = DecodeLoc(in.has_loc(), in.loc());
  SetLoc(out->loc);
  if (in.grid_size() < 1 || in.grid_size() > 3) {
    return Error(absl::StrCat("grid must have 1 to 3 dimensions, got ", in.grid_size()), "grid");
  }
  RETURN_IF_ERROR(DecodeExprs(in.grid(), "grid", &out->grid));
  if (in.block_vars_size() != in.grid_size()) {
    return Error(absl::StrCat(in.block_vars_size(), " block vars for a ", in.grid_size(),
                              "-dimensional grid"),
                 "block_vars");
  }
  for (int i = 0; i < in.block_vars_size(); ++i) {
    Enter enter(this, "block_vars", i);
    RETURN_IF_ERROR(CheckName(in.block_vars(i), true, nullptr, "block variable name"));
    out->block_vars.push_back(in.block_vars(i));
  }
  if (in.threads_size() < 1 || in.threads_size() > 3) {
    return Error(absl::StrCat("threads must have 1 to 3 entries, got ", in.threads_size()),
                 "threads");
  }
  for (int i = 0; i < in.threads_size(); ++i) {
    if (in.threads(i) <= 0) {
      Enter enter(this, "threads", i);
      return Error(absl::StrCat("thread extent must be positive, got ", in.threads(i)));
    }
    out->threads.push_back(in.threads(i));
  }
  return DecodeStmts(in.body(), "body", 1, &out->body);
}

absl::Status Decoder::DecodeProgram(const pb::Program& in, Program* out) {
  if (in.ir_version() != kIrVersion) {
    return Error(absl::StrCat("unsupported ir_version ", in.ir_version(),
                              "; this server supports ir_version ", kIrVersion),
                 "ir_version");
  }
  RETURN_IF_ERROR(CheckName(in.name(), true, "name", "program name"));
  out->name = in.name();
  out->source_name = in.source_name();

  RETURN_IF_ERROR(CountStmts(in.symbols_size(), "symbols"));
  out->symbols.resize(in.symbols_size());
  for (int i = 0; i < in.symbols_size(); ++i) {
    Enter enter(this, "symbols", i);
    const pb::Symbol& sym = in.symbols(i);
    Symbol& s = out->symbols[i];
    s.loc = DecodeLoc(sym.has_loc(), sym.loc());
    SetLoc(s.loc);
    RETURN_IF_ERROR(CheckName(sym.name(), true, "name", "symbol name"));
    s.name = sym.name();
    RETURN_IF_ERROR(DecodeEnum(kDTypes, sym.dtype(), true, "dtype", &s.dtype));
    RETURN_IF_ERROR(CheckName(sym.user_name(), false, "user_name", "symbol user name"));
    if (sym.user_name() != s.name) s.user_name = sym.user_name();
  }

  RETURN_IF_ERROR(CountStmts(in.params_size(), "params"));
  out->params.resize(in.params_size());
  for (int i = 0; i < in.params_size(); ++i) {
    Enter enter(this, "params", i);
    const pb::Param& param = in.params(i);
    if (!param.has_buffer()) return Error("param without buffer", "buffer");
    {
      Enter buffer(this, "buffer");
      RETURN_IF_ERROR(DecodeBuffer(param.buffer(), true, &out->params[i].buffer));
    }
    out->params[i].is_scalar = param.is_scalar();
    out->params[i].is_output = param.is_output();
    RETURN_IF_ERROR(CheckName(param.user_name(), false, "user_name", "parameter user name"));
    if (param.user_name() != out->params[i].buffer.name) {
      out->params[i].user_name = param.user_name();
    }
  }

  if (!in.has_kernel()) return Error("program without kernel", "kernel");
  {
    Enter enter(this, "kernel");
    RETURN_IF_ERROR(DecodeKernel(in.kernel(), &out->kernel));
  }
  if (in.next_kernels_size() + 1 > kMaxKernels) {
    return Error(absl::StrCat("more than ", kMaxKernels, " kernels"), "next_kernels");
  }
  for (int i = 0; i < in.next_kernels_size(); ++i) {
    Enter enter(this, "next_kernels", i);
    RETURN_IF_ERROR(DecodeKernel(in.next_kernels(i), &out->next_kernels.emplace_back()));
  }
  if (in.workspaces_size() > kMaxWorkspaces) {
    return Error(absl::StrCat("more than ", kMaxWorkspaces, " workspaces"), "workspaces");
  }
  for (int i = 0; i < in.workspaces_size(); ++i) {
    Enter enter(this, "workspaces", i);
    RETURN_IF_ERROR(DecodeBuffer(in.workspaces(i), true, &out->workspaces.emplace_back()));
  }

  for (const auto& [key, value] : in.attrs()) {
    if (!IsIdentifier(key, /*allow_dot=*/true) || key.size() > kMaxIdentifierLength) {
      return Error(absl::StrCat("invalid attribute key ", Quote(key),
                                " (expected [A-Za-z_][A-Za-z0-9_.]*, at most ",
                                kMaxIdentifierLength, " characters)"),
                   "attrs");
    }
    out->attrs.emplace(key, value);
  }
  return absl::OkStatus();
}

} // namespace

absl::StatusOr<kiln::v1::Program> ToProto(const Program& program) {
  if (ThreadIrUse use; FindThreadIr(program, &use)) {
    return ErrorAt(program.source_name, use.loc,
                   absl::StrCat("thread-level IR (", use.what,
                                ") cannot be serialized; the wire carries tile IR only, so "
                                "convert the program before lowering"));
  }
  kiln::v1::Program out;
  EncodeProgram(program, &out);
  return out;
}

void ToProto(const Program& program, kiln::v1::Program* out) {
  out->Clear();
  if (ThreadIrUse use; FindThreadIr(program, &use)) return;
  EncodeProgram(program, out);
}

absl::StatusOr<Program> FromProto(const kiln::v1::Program& proto) {
  Program program;
  Decoder decoder(proto.source_name());
  RETURN_IF_ERROR(decoder.DecodeProgram(proto, &program));
  return program;
}

pb::DType DTypeToProto(DType dtype) { return Encode(kDTypes, dtype); }

} // namespace kiln::ir
