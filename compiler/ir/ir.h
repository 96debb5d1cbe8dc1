// The Kiln tile IR: the program a client sends, after the frontend has bound
// its parameters and evaluated the Python around the kernel.
//
// The IR is a plain value tree (vectors of values, no shared pointers), so a
// copy is deep and `==` is structural. Source locations take part in `==`;
// use StripLocations() (ir_util.h) before comparing for structure only.
//
// Identity is by name: buffers, symbols, loop and block variables are
// referred to by their name, which the verifier checks is unique within the
// program. Expressions are fully typed: every binary operation has operands of
// one dtype (the frontend inserts explicit casts), comparisons yield bool.
//
// Thread-safety: plain data; no internal synchronization.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::ir {

enum class DType : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kFloat8E4M3,
  kFloat8E5M2,
};

// A position in the tile program's source (1-based); 0:0 means unknown.
struct Loc {
  int32_t line = 0;
  int32_t col = 0;
  bool operator==(const Loc&) const = default;
};

enum class BinOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,      // true division for floats, truncating for integers
  kFloorDiv, // rounds toward -inf
  kFloorMod, // sign of the divisor (Python's %)
  kMin,
  kMax,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd, // logical, bool operands
  kOr,  // logical, bool operands
  kBitAnd,
  kBitOr,
  kBitXor,
  kShl,
  kShr,
};

enum class UnOp : uint8_t { kNeg, kNot, kBitNot };

// Math intrinsics callable from tile programs (T.exp, T.sqrt, ...).
enum class Intrinsic : uint8_t {
  kExp,
  kExp2,
  kLog,
  kLog2,
  kSqrt,
  kRsqrt,
  kAbs,
  kPow, // two arguments
  kTanh,
  kFloor,
  kCeil,
  kSin,
  kCos,
  kRound,
  kTrunc,
  kSigmoid,
  // The bits of args[0] as the call's dtype, of the same width (not bool):
  // T.reinterpret. Printed reinterpret<DTYPE>(x).
  kReinterpret,
};

enum class ExprKind : uint8_t {
  kInt,       // integer or bool literal: ival (bool: 0/1)
  kFloat,     // floating literal: fval (may be +-inf or nan)
  kVar,       // name: symbol, scalar param, loop var or block var
  kLoad,      // name = buffer; args = indices (one per dimension)
  kBinary,    // bop; args = {lhs, rhs}
  kUnary,     // uop; args = {x}
  kCall,      // fn; args
  kCast,      // dtype is the target type; args = {x}
  kSelect,    // if_then_else: args = {cond, true_value, false_value}
  kThreadIdx, // the thread index along dimension ival (T.get_thread_binding)
  // Thread IR only (after lowering; never on the wire): the address of one
  // element, name = buffer, args = {flat element index}. dtype is the
  // buffer's element type. Only valid as an argument of a kCall statement.
  kAddress,
};

struct Expr {
  ExprKind kind = ExprKind::kInt;
  DType dtype = DType::kInt32;
  int64_t ival = 0;
  double fval = 0.0;
  std::string name;
  BinOp bop = BinOp::kAdd;
  UnOp uop = UnOp::kNeg;
  Intrinsic fn = Intrinsic::kExp;
  std::vector<Expr> args;
  Loc loc;
  bool operator==(const Expr&) const = default;
};

enum class Scope : uint8_t {
  kGlobal,
  kShared,
  kSharedDyn,
  kFragment,
  kLocal,
  kVar, // a mutable scalar (T.alloc_var): shape {1}
  // Hopper transaction barriers (T.alloc_barrier): dtype uint64, shape {n};
  // the kAlloc statement's `indices` hold the n arrival counts (integer
  // literals). Only barrier statements and tma_copy may name them.
  kBarrier,
};

// A user-defined index layout of a global tensor (TileLang's T.Layout with
// T.annotate_layout): the element at logical index (vars[0], ..., vars[n-1]),
// one variable per dimension of the tensor, each over [0, shape[d]), is
// stored at physical index (forward[0], ..., forward[m-1]) of a row-major
// array whose extent in dimension k is the largest value of forward[k] plus
// one (index_layout.h computes it). `vars` are int32 names bound only inside
// `forward`, distinct from every other name of the program.
struct IndexLayout {
  std::vector<std::string> vars;
  std::vector<Expr> forward;
  Loc loc; // of the T.Layout call
  bool operator==(const IndexLayout&) const = default;
};

struct Buffer {
  std::string name;
  DType dtype = DType::kFloat32;
  Scope scope = Scope::kGlobal;
  std::vector<Expr> shape; // one extent per dimension; may be symbolic
  bool has_init = false;   // kVar only: initial value in `init`
  Expr init;
  Loc loc;
  // Tensor parameters only: the storage order of the tensor's elements.
  std::optional<IndexLayout> index_layout = std::nullopt;
  bool operator==(const Buffer&) const = default;
};

// One dimension of a region: [min, min + extent).
struct Range {
  Expr min;
  Expr extent;
  bool operator==(const Range&) const = default;
};

// A rectangular part of a buffer. A whole buffer is the region with min 0
// and extent shape[d] on every dimension. Regions always have one range per
// buffer dimension; the frontend fills in extents for TileLang's start-corner
// form (T.copy(A[by * bm, k * bk], A_shared)) from the other operand.
struct Region {
  std::string buffer;
  std::vector<Range> ranges;
  Loc loc;
  bool operator==(const Region&) const = default;
};

enum class StmtKind : uint8_t {
  kAlloc,          // buffer
  kCopy,           // regions = {src, dst}
  kGemm,           // regions = {A, B, C}; gemm fields
  kFill,           // regions = {dst}; value (dtype of the buffer)
  kReduce,         // regions = {src, dst}; reduce_kind, dim, clear
  kAtomic,         // atomic_op; regions = {dst} and value, or {dst, src}
  kFor,            // for_kind, loop_vars, extents, stages, body
  kIf,             // cond, body, else_body
  kStore,          // name = buffer, indices, value
  kAnnotateLayout, // name = buffer, layout = layout kind (e.g. "swizzled")
  kUseSwizzle,     // panel_size, swizzle_order ("row"|"col"), enable
  // Explicit Hopper synchronization (TileLang's T.ws, T.tma_copy and the
  // mbarrier calls; docs/design/ir-text.md). A barrier operand is a
  // one-element region of a kBarrier buffer.
  kWarpSpecialize,  // indices = warpgroup ids (distinct integer literals); body
                    // runs on threads [128 g, 128 g + 128) of each listed g
  kTmaCopy,         // regions = {src (global), dst (shared), barrier}
  kBarrierArrive,   // regions = {barrier}: each executing thread arrives
  kBarrierWait,     // regions = {barrier}; value = parity (0/1) of the phase
  kBarrierExpectTx, // regions = {barrier}; value = transaction bytes
  // A check made when the kernel runs (Python's assert on a value only
  // known then, T.device_assert): cond (bool); when it is false the kernel
  // stops with `message` (printable ASCII, at most kMaxAssertMessage bytes).
  kAssert,
  // TileLang's T.wait_wgmma(n): value = n (an int literal, 0..7); the
  // executing warpgroup waits until at most n of its wgmma groups are in
  // flight (Stmt::wg_wait).
  kWaitWgmma,
  // Thread IR only (after lowering; never on the wire): a call of one of
  // the runtime's thread-level intrinsics (barrier, ldmatrix, mma, cp.async,
  // shuffles, vector copies, atomics; see compiler/ir/intrinsics.h).
  // name = intrinsic, indices = arguments.
  kCall,
};

// The longest kAssert message (bytes); the verifier refuses longer ones.
inline constexpr size_t kMaxAssertMessage = 256;

// A kAssert message: printable ASCII (0x20..0x7e), at most
// kMaxAssertMessage bytes. Generated code spells it out byte by byte.
inline bool IsValidAssertMessage(const std::string& m) {
  if (m.size() > kMaxAssertMessage) return false;
  for (char c : m) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

enum class ForKind : uint8_t { kSerial, kUnroll, kVectorized, kParallel, kPipelined };
enum class ReduceKind : uint8_t { kSum, kMax, kMin, kAbsSum, kAbsMax };
enum class AtomicOp : uint8_t { kAdd, kMax, kMin };
enum class GemmPolicy : uint8_t { kSquare, kFullRow, kFullCol };
// Stmt::wg_wait of a gemm that does not wait for its own wgmma group.
inline constexpr int32_t kGemmNoWait = -1;
// The most wgmma groups a wait may leave in flight (wgmma.wait_group N).
inline constexpr int32_t kMaxWgmmaInFlight = 7;

struct Stmt {
  StmtKind kind = StmtKind::kStore;
  Loc loc;

  // kAlloc.
  Buffer buffer;

  // kCopy, kGemm, kFill, kReduce, kAtomic: operands as regions.
  std::vector<Region> regions;

  // kFill (fill value), kAtomic with a scalar source, kStore (stored value).
  bool has_value = false;
  Expr value;

  // kGemm.
  bool transpose_a = false;
  bool transpose_b = false;
  bool clear_accum = false;
  int32_t k_pack = 1;
  GemmPolicy policy = GemmPolicy::kSquare;
  // Where the gemm lowers to wgmma: 0 completes it before the next
  // statement; n in 1..7 leaves at most n wgmma groups (its own first) in
  // flight; kGemmNoWait leaves it in flight (T.wgmma_gemm). Its accumulator
  // and register A may be touched only after a kWaitWgmma (or a gemm's own
  // wait) has completed it. Other instructions complete every gemm at once.
  int32_t wg_wait = 0;

  // kReduce.
  ReduceKind reduce_kind = ReduceKind::kSum;
  int32_t dim = 0;
  bool clear = true;

  // kAtomic.
  AtomicOp atomic_op = AtomicOp::kAdd;

  // kFor. Serial/unroll/vectorized/pipelined loops have one variable;
  // parallel loops have one or more (a multi-dimensional T.Parallel).
  ForKind for_kind = ForKind::kSerial;
  std::vector<std::string> loop_vars;
  std::vector<Expr> extents;  // each loop variable runs over [0, extent)
  int32_t num_stages = 0;     // kPipelined: 0 means "not given"
  std::vector<int32_t> order; // kPipelined, optional
  std::vector<int32_t> stage; // kPipelined, optional

  // kIf.
  Expr cond;
  std::vector<Stmt> body;      // kFor body, kIf then-branch
  std::vector<Stmt> else_body; // kIf else-branch

  // kStore (name = buffer), kAnnotateLayout (name = buffer).
  std::string name;
  std::vector<Expr> indices;

  // kAnnotateLayout.
  std::string layout;

  // kUseSwizzle.
  int32_t panel_size = 0;
  std::string swizzle_order = "row";
  bool enable = true;

  // kAssert: what a failing check reports.
  std::string message;

  bool operator==(const Stmt&) const = default;
};

// One `with T.Kernel(...)` block of a program.
struct Kernel {
  std::vector<Expr> grid;              // 1 to 3 extents (blockIdx.x, .y, .z)
  std::vector<std::string> block_vars; // names bound to blockIdx.{x,y,z}
  std::vector<int64_t> threads;        // 1 to 3 constant extents
  std::vector<Stmt> body;
  Loc loc;
  bool operator==(const Kernel&) const = default;
};

// Symbols and parameters are the kernel's interface: a launcher binds them
// by name. Their IR name is internal (unique, clear of the text IR's
// keywords: a Python parameter `out` is `out_` in the IR); `user_name` is the
// name the user wrote, where it differs, and the one everything outside the
// compiler shows (launch metadata, kiln-run's flags, clients). Empty means
// the IR name is the user's name. ir::UserName (ir_util.h) reads either.
// Unlike other names, user names are part of the cache key (the launch
// metadata stored with an artifact carries them).

// A dynamic shape symbol (an unbound T.const / T.symbolic name).
struct Symbol {
  std::string name;
  DType dtype = DType::kInt32;
  Loc loc;
  std::string user_name = {};
  bool operator==(const Symbol&) const = default;
};

// A kernel argument: a global tensor (buffer.scope == kGlobal) or a scalar
// (is_scalar; buffer.name and buffer.dtype describe it, shape is empty).
struct Param {
  Buffer buffer;
  bool is_scalar = false;
  bool is_output = false; // T.empty(...) in the @tilelang.jit form, or out_idx
  std::string user_name = {};
  // A T.alloc_global workspace as a kernel sees it. Only in the one-kernel
  // programs that SplitKernels (ir_util.h) makes for lowering: the launcher
  // allocates it, the caller never binds it. Never printed, hashed or sent.
  bool is_workspace = false;
  bool operator==(const Param&) const = default;
};

struct Program {
  std::string name;        // the kernel function's name (not hashed)
  std::string source_name; // file name for diagnostics (not hashed)
  std::vector<Symbol> symbols;
  std::vector<Param> params;
  // A program is a sequence of kernels over the same parameters, launched in
  // order on one stream (each T.Kernel block of the function is one): each
  // sees everything its predecessors wrote. `kernel` is the first and
  // `next_kernels` the rest (empty for the usual one-kernel program, whose
  // key, text and launch metadata are then what they were before).
  Kernel kernel;
  std::vector<Kernel> next_kernels;
  // Global workspaces (T.alloc_global): scope kGlobal, shapes over symbols
  // and scalar parameters, names distinct from every parameter's. The
  // launcher allocates each (zero-filled) before the first kernel and frees
  // it after the last; kernels read and write them like tensor parameters.
  std::vector<Buffer> workspaces;
  // Compile-affecting annotations from the source (e.g. "fast_math" ->
  // "true"). Hashed.
  std::map<std::string, std::string> attrs;
  bool operator==(const Program&) const = default;
};

} // namespace kiln::ir
