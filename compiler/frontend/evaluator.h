// The compile-time (meta) evaluator: runs the Python around a TileLang kernel
// and lowers the kernel body to tile IR as it goes. One Evaluator compiles one
// entry function of one parsed module; CompileSource (frontend.cc) drives it.
//
// How it works, in short:
//  1. Module-level names (defs, imports, NAME = ... constants) are bound
//     lazily: a constant is evaluated the first time the kernel needs it, so
//     test drivers and argparse code at the bottom of example files never run.
//  2. The entry function runs with its parameters bound from the bindings.
//     Python statements execute at compile time; values known at compile
//     time stay Python values, everything that depends on a loop or block
//     variable or a dynamic symbol is an IR expression.
//  3. `with T.Kernel(...)` switches statement execution into lowering mode:
//     tile ops, stores, IR loops and IR ifs are appended to the current IR
//     statement list (`sink_`). Python-level bindings made inside an IR loop
//     or branch are undone when it closes, so a name bound to a loop variable
//     never leaks out of its loop.
// Implementation is split by responsibility: entry.cc (entry selection and
// parameters), evaluator.cc (statements), eval_expr.cc (expressions),
// python_builtins.cc (range, len, ...), tl_builtins.cc
// (the T.* namespace and allocations), tile_ops.cc (regions and tile ops),
// kernel_lowering.cc (T.Kernel and loops).
//
// Errors: every failure is a located InvalidArgument ("file:line:col: ...").
// Limits: nesting depth is bounded, and all compile-time work is charged to
// one budget (eval_budget.h: steps, bytes, wall time, the caller's deadline
// and cancellation), including the work inside one operation whose cost
// grows with its operands.
// Thread-safety: an Evaluator is single-threaded; distinct instances are
// independent.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/frontend/arith.h"
#include "compiler/frontend/ast.h"
#include "compiler/frontend/eval_budget.h"
#include "compiler/frontend/frontend.h"
#include "compiler/frontend/value.h"
#include "compiler/ir/ir.h"

namespace kiln::frontend {

// The budget's charge for a call of a user function (or a comprehension):
// its steps and the bytes of its frame, which lives as long as the
// evaluation (closures refer to it).
inline constexpr int64_t kCallSteps = 16;
inline constexpr int64_t kFrameBytes = 256;

// Most items a compile-time sequence (list, range iteration) may hold.
inline constexpr size_t kMaxCompileTimeItems = 1 << 20;
// Longest string an f-string or str.join may build (as `+` on strings).
inline constexpr size_t kMaxStringBytes = 1 << 16;

// An evaluated call argument (positional when name is empty).
struct Arg {
  Value value;
  Loc loc;          // of the value
  std::string name; // keyword name; empty for positional arguments
  Loc name_loc;     // of the keyword
};

class Evaluator {
 public:
  Evaluator(const Module& module, const FrontendOptions& options);

  // Selects the entry, runs it and returns the lowered program.
  absl::StatusOr<ir::Program> Run();
  // A kernel function may define several @T.prim_func and return one of
  // them (a split and a no-split variant, say). A run lowers the first it
  // defines; when the function returns another, Run fails and
  // ReturnedPrimFunc() names the one returned: a fresh Evaluator with
  // LowerOnly(that) lowers it instead (CompileSource does this).
  void LowerOnly(const PyStmt* def) { lower_only_ = def; }
  const PyStmt* ReturnedPrimFunc() const { return returned_prim_func_; }
  // Selects the entry and describes its parameters without running it.
  absl::StatusOr<EntrySignature> DescribeEntry();

 private:
  struct Frame {
    absl::flat_hash_map<std::string, Value> vars;
    int parent = -1; // enclosing frame (closure); -1 for the module frame
  };
  struct BufferInfo {
    ir::Buffer buffer;
    bool is_param = false;
    std::string user_name = {}; // params: ir::Param::user_name
    // T.reshape / T.view: the buffer whose storage this view names (never
    // itself a view); -1 for buffers with their own storage. A view is never
    // allocated: its accesses are rewritten to that buffer (ResolveView).
    int view_of = -1;
    // T.alloc_reducer: the reducer's op (compiler/ir/reducer.h).
    std::optional<ir::ReduceKind> reducer = std::nullopt;
  };
  // A lazily evaluated module-level binding.
  struct ModuleName {
    const PyStmt* stmt = nullptr;
    bool evaluating = false;
  };
  enum class Flow { kNormal, kReturn, kBreak, kContinue };
  // What an IR-level operand of a tile op denotes.
  struct Operand {
    int buffer = -1;
    enum Form { kWhole, kCorner, kRegion } form = kWhole;
    std::vector<ir::Expr> mins;
    std::vector<ir::Expr> extents; // empty for kCorner
    Loc loc;
  };

  // ---- evaluator.cc: entry, statements, scopes.
  absl::Status IndexModule();
  absl::StatusOr<const PyStmt*> SelectEntry();
  absl::Status RunEntry(const PyStmt& entry);
  absl::Status ApplyJitDecorator(const PyExpr& call);
  // Binds the parameters of `fn` (the kernel function when `is_kernel`, else
  // a function enclosing it in a dotted entry) in `frame`; defaults are
  // evaluated in `def_frame`, where `fn` is defined.
  absl::Status BindEntryParams(const PyStmt& fn, int frame, int def_frame, bool is_kernel);
  // ---- entry.cc: dotted entries ("outer.inner", a kernel function defined
  // inside another function). Each enclosing function runs with its
  // parameters bound until it reaches the definition of the next name; the
  // kernel function then closes over its frame.
  absl::StatusOr<const PyStmt*> RunToNestedEntry(const std::vector<std::string>& path);
  absl::StatusOr<EntrySignature> DescribeNestedEntry(const std::vector<std::string>& path);
  // The "outer.inner" names of kernel functions defined inside module-level
  // functions (for diagnostics).
  std::vector<std::string> NestedCandidates() const;
  // The error for a dotted entry whose first name is no module-level function.
  absl::Status OuterNotFound(const std::string& name) const;
  // True (and the frame recorded) when `def` is the definition that the
  // enclosing function being run for a dotted entry is to stop at; called
  // by ExecStmt before it executes a def.
  bool StopsAtNestedEntry(const PyStmt& def);
  // The entry as the user named it, for diagnostics.
  std::string EntryDisplayName() const;
  absl::Status CheckBindingsUsed();
  bool IsDynamicParam(const std::string& name) const;
  // A shape symbol standing for the entry parameter `p`.
  Value DeclareDynamicParam(const Param& p);
  absl::Status LowerPrimFunc(const PyStmt& def);
  absl::StatusOr<Flow> ExecBlock(const std::vector<PyStmt>& body);
  absl::StatusOr<Flow> ExecStmt(const PyStmt& s);
  absl::StatusOr<Flow> ExecAssign(const PyStmt& s);
  absl::StatusOr<Flow> ExecAugAssign(const PyStmt& s);
  absl::StatusOr<Flow> ExecAnnAssign(const PyStmt& s);
  absl::StatusOr<Flow> ExecIf(const PyStmt& s);
  absl::StatusOr<Flow> ExecWith(const PyStmt& s);
  // TVM's reduce scope around one T.tvm_thread_allreduce (thread_allreduce.cc).
  absl::StatusOr<Flow> ExecThreadAllreduce(const PyStmt& s, const PyExpr& cm);
  // True when `e` calls T.<fn> (T being tilelang.language under any alias).
  bool IsTCall(const PyExpr& e, std::string_view fn);
  absl::StatusOr<Flow> ExecFunctionDef(const PyStmt& s);
  absl::StatusOr<Flow> ExecImport(const PyStmt& s, int frame);
  absl::StatusOr<Flow> ExecCompileTimeFor(const PyStmt& s, const Value& iterable);
  absl::StatusOr<Flow> ExecWhile(const PyStmt& s);
  absl::Status Assign(const PyExpr& target, const Value& v);
  absl::Status StoreTo(const Value& access, const Value& v, Loc loc);
  void Bind(const std::string& name, Value v);
  std::optional<Value> LookupLocal(const std::string& name);
  absl::StatusOr<Value> LookupName(const std::string& name, Loc loc);
  absl::StatusOr<Value> LookupModuleName(const std::string& name, Loc loc);
  // Undo log for bindings made inside IR loops and branches.
  size_t OpenScope();
  void CloseScope(size_t mark);
  // Rejects rebinding, inside an IR loop or branch, a name bound outside it.
  absl::Status CheckRebind(const std::string& name, Loc loc);

  // ---- eval_expr.cc: expressions, Python builtins, calls of user code.
  absl::StatusOr<Value> Eval(const PyExpr& e);
  // Eval and turn a buffer access into a load (a value usable in arithmetic).
  absl::StatusOr<Value> EvalScalar(const PyExpr& e);
  absl::StatusOr<Value> Materialize(const Value& v, Loc loc);
  absl::StatusOr<Value> EvalAttribute(const PyExpr& e);
  absl::StatusOr<Value> EvalSubscript(const PyExpr& e);
  absl::StatusOr<Value> EvalCall(const PyExpr& e);
  absl::StatusOr<Value> EvalCompare(const PyExpr& e);
  absl::StatusOr<Value> EvalBoolOp(const PyExpr& e);
  absl::StatusOr<Value> EvalComprehension(const PyExpr& e);
  absl::StatusOr<Value> EvalFString(const PyExpr& e);
  absl::StatusOr<std::vector<Arg>> EvalArgs(const PyExpr& call);
  absl::StatusOr<Value> CallValue(const Value& callee, std::vector<Arg> args, const PyExpr& call);
  absl::StatusOr<Value> CallUserFunction(const Value& fn, const std::vector<Arg>& args, Loc loc);
  absl::StatusOr<Value> CallPythonBuiltin(const std::string& name, std::vector<Arg>& args, Loc loc);
  absl::StatusOr<Value> CallMethod(const Value& method, std::vector<Arg>& args, Loc loc);
  absl::StatusOr<std::vector<Value>> Iterate(const Value& v, Loc loc);
  absl::StatusOr<Value> IndexSequence(const Value& seq, const Value& index, Loc loc);
  absl::StatusOr<Value> ResolveModuleAttr(const std::string& path, Loc loc);

  // ---- device_query.cc: build-time device queries, answered from
  // options_.device (torch.cuda.*, tilelang.carver.arch.driver.*).
  // The module, function or property object `path` names, if it is one.
  static std::optional<Value> ResolveDeviceQueryName(const std::string& path);
  static bool IsDeviceQuery(const std::string& builtin);
  absl::StatusOr<Value> CallDeviceQuery(const std::string& name, std::vector<Arg>& args, Loc loc);
  absl::StatusOr<Value> DevicePropertyAttr(const std::string& attr, Loc loc);

  // ---- tl_builtins.cc: T.* calls, dtypes, allocations, symbols.
  absl::StatusOr<Value> CallTBuiltin(const std::string& name, std::vector<Arg>& args,
                                     const PyExpr& call);
  absl::StatusOr<Value> CallMath(const std::string& name, std::vector<Arg>& args, Loc loc);
  // T.reinterpret / tvm.tirx.reinterpret: the bits of `value` as `dtype`.
  absl::StatusOr<Value> Reinterpret(const Value& value, const Value& dtype, Loc loc);
  absl::StatusOr<Value> AllocateGlobal(const std::string& fn, std::vector<Arg>& args, Loc loc);
  absl::StatusOr<Value> Allocate(const std::string& name, std::vector<Arg>& args, Loc loc);
  absl::StatusOr<Value> DeclareSymbols(const std::string& name, std::vector<Arg>& args, Loc loc);
  absl::StatusOr<Value> DeclareOutput(std::vector<Arg>& args, Loc loc);
  absl::StatusOr<Value> MakeTensorType(const Value& shape, const Value& dtype, Loc loc);
  // T.reshape(src, shape) and T.view(src, shape=None, dtype=None).
  absl::StatusOr<Value> MakeView(const std::string& name, std::vector<Arg>& args, Loc loc);
  // An element access of a view (T.reshape / T.view) as the access of the
  // same element of the buffer it views: the view's indices are taken to a
  // row-major offset and back to the viewed buffer's indices. Other accesses
  // are returned unchanged. A store (`store`) through a view of a fragment
  // that regroups dimensions is refused: a fragment's layout follows the
  // T.Parallel variables that index its stores.
  absl::StatusOr<Value> ResolveView(const Value& access, Loc loc, bool store = false);
  // ---- view_copy.cc: tensors over another buffer's storage, copies through
  // reshaped views.
  // `x.data`: a value standing for the storage of `buffer` (of the buffer it
  // views, for a view); T.Tensor / T.Buffer take it as their `data`.
  Value StorageOf(int buffer) const;
  // True for what StorageOf returns.
  static bool IsStorage(const Value& v);
  // T.Tensor(shape, dtype, data) / T.Buffer(...): a view, as T.view, of the
  // global tensor whose storage `data` stands for. Located errors for data
  // that is no x.data, storage that is not global, a dtype change and an
  // element-count mismatch.
  absl::StatusOr<Value> TensorOverStorage(const std::string& name, std::vector<Arg>& args, Loc loc);
  // True for a buffer or element access of a view of a global tensor whose
  // shape differs from the tensor's.
  bool IsReshapedGlobalView(const Value& v) const;
  // Region `r` of view `buffer` as a region of the tensor it views, when it
  // is one rectangle there that the view's dimension groups show (nullopt
  // otherwise); `r` itself for a buffer that is no view.
  absl::StatusOr<std::optional<ir::Region>> ViewRegionToBase(int buffer, const ir::Region& r);
  // T.copy between regions rs and rd (view coordinates) of operands src and
  // dst, one of them a reshaped view of a global tensor: a T.copy of the
  // tensor's rectangle where ViewRegionToBase finds one, else an element-wise
  // T.Parallel copy with T.copy's bounds checks.
  absl::StatusOr<Value> CopyThroughView(const Operand& src, const Operand& dst,
                                        const ir::Region& rs, const ir::Region& rd, Loc loc);
  // ---- im2col.cc: T.im2col / T.c2d_im2col as a T.Parallel loop over the
  // destination tile.
  absl::StatusOr<Value> LowerIm2col(const std::string& name, std::vector<Arg>& args, Loc loc);
  // ---- scan_op.cc: T.cumsum as a T.Parallel loop over lines, each scanned
  // by a serial loop (fragments through a shared copy).
  absl::StatusOr<Value> LowerCumsum(std::vector<Arg>& args, Loc loc);
  // A tile op's `dim` argument (a compile-time int in [-rank, rank), made
  // non-negative; `fallback` when not given), located at `at`; `of` names
  // the operand in the message ("the 2-d source 'x'").
  absl::StatusOr<int64_t> DimArg(const std::optional<Value>& v, Loc at, int64_t rank,
                                 int64_t fallback, const std::string& what,
                                 const std::string& of) const;
  // T.thread_binding(start, stop, thread="threadIdx.x"): the thread index
  // along that dimension (plus start); the extent must be the kernel's.
  absl::StatusOr<Value> ThreadBinding(std::vector<Arg>& args, Loc loc);
  // `for v in T.thread_binding(...)`: the body runs once, in every thread,
  // with v bound to the thread index.
  absl::StatusOr<Flow> ExecThreadBindingFor(const PyStmt& s, std::vector<Arg>& args, Loc loc);
  // persistent.cc: `for bx, by in T.Persistent(domain, wave_size, index, group_size)`.
  absl::StatusOr<Flow> ExecPersistentFor(const PyStmt& s, std::vector<Arg>& args, Loc loc);
  // T.sync_threads([barrier_id[, arrive_count]]): an explicit block barrier
  // (a named barrier of arrive_count threads when given).
  absl::StatusOr<Value> SyncThreads(std::vector<Arg>& args, Loc loc);
  // A kAssert statement checking `cond` (a symbolic value, or a constant
  // for T.device_assert) when the kernel runs; `message` is the user's,
  // shown when it is printable text. Inside T.Kernel it goes where it
  // stands; outside (an assert on a parameter only known at launch), to
  // the start of the kernel body, after earlier ones.
  absl::Status EmitRuntimeCheck(const Value& cond, const std::optional<Value>& message, Loc loc,
                                std::string_view what);
  // T.device_assert(cond, msg="", no_stack_info=False).
  absl::StatusOr<Value> DeviceAssert(std::vector<Arg>& args, Loc loc);
  absl::StatusOr<ir::DType> ToDType(const Value& v, Loc loc);
  absl::StatusOr<std::vector<ir::Expr>> ToShape(const Value& v, Loc loc);
  absl::StatusOr<int> AddParamBuffer(const std::string& name, const Value& type, Loc loc,
                                     bool is_output);
  absl::StatusOr<Value> AddScalarParam(const std::string& name, ir::DType dtype, Loc loc,
                                       ir::Param* out);

  // ---- tile_ops.cc: operands, regions and the tile-op statements.
  absl::StatusOr<Value> CallTileOp(const std::string& name, std::vector<Arg>& args, Loc loc);
  // A view with the shape of its buffer is that buffer; another view is an
  // error unless `keep_views` (then the operand is in the view's coordinates).
  absl::StatusOr<Operand> ToOperand(const Arg& arg, std::string_view op, bool keep_views = false);
  absl::StatusOr<ir::Region> OperandRegion(const Operand& op, const std::vector<ir::Expr>& other,
                                           std::string_view what);
  absl::StatusOr<Value> LowerCopy(std::vector<Arg>& args, Loc loc);
  // T.gemm, or T.wgmma_gemm when `explicit_wgmma` (TileLang's asynchronous
  // Hopper form: T.gemm with wg_wait = -1; see LowerGemm).
  absl::StatusOr<Value> LowerGemm(std::vector<Arg>& args, Loc loc, bool explicit_wgmma = false);
  // T.wait_wgmma(n): a kWaitWgmma statement.
  absl::StatusOr<Value> WaitWgmma(std::vector<Arg>& args, Loc loc);
  absl::StatusOr<Value> LowerFill(const std::string& name, std::vector<Arg>& args, Loc loc);
  absl::StatusOr<Value> LowerReduce(const std::string& name, std::vector<Arg>& args, Loc loc);
  absl::StatusOr<Value> LowerAtomic(const std::string& name, std::vector<Arg>& args, Loc loc);
  absl::StatusOr<Value> LowerAnnotateLayout(std::vector<Arg>& args, Loc loc);
  absl::StatusOr<Value> LowerUseSwizzle(std::vector<Arg>& args, Loc loc);

  // ---- layout_fn.cc: T.Layout (user-defined index layouts) and lambdas.
  // The layout value's kind (Value::s of a kLayout made by T.Layout).
  static constexpr std::string_view kIndexLayout = "index";
  absl::StatusOr<Value> MakeLambda(const PyExpr& e);
  absl::StatusOr<Value> MakeIndexLayout(std::vector<Arg>& args, Loc loc);
  // Attaches a T.Layout value to tensor parameter `buffer` (T.annotate_layout).
  absl::Status AnnotateIndexLayout(int buffer, const Value& layout, Loc loc);

  // ---- hopper_ops.cc: T.alloc_barrier, T.ws, T.tma_copy, mbarrier calls.
  absl::StatusOr<Value> CallHopperOp(const std::string& name, std::vector<Arg>& args, Loc loc);
  absl::StatusOr<ir::Region> BarrierOperand(const Value& v, Loc loc, const std::string& op);
  absl::StatusOr<Flow> LowerWarpSpecialize(const PyStmt& with, const PyExpr& call);
  absl::StatusOr<ir::Expr> LoadOf(const Value& access, Loc loc);
  absl::StatusOr<std::vector<ir::Expr>> ScalarIndices(const Value& access, Loc loc);

  // ---- kernel_lowering.cc: T.Kernel and loops.
  absl::StatusOr<Flow> LowerKernel(const PyStmt& with, const PyExpr& call, const PyExpr& target);
  absl::StatusOr<Flow> ExecFor(const PyStmt& s);
  absl::StatusOr<Flow> LowerLoop(const PyStmt& s, const std::string& kind, std::vector<Arg>& args,
                                 Loc loc);

  // ---- helpers.
  absl::Status Error(Loc loc, std::string_view message) const;
  ArithContext Ctx(Loc loc) const { return ArithContext{options_.file_name, loc, &budget_}; }
  absl::Status RequireKernel(Loc loc, std::string_view what) const;
  // "parameter 'X' has no binding (its default is None)" at `loc` when `v`
  // is (or directly holds) the None of an entry parameter left unbound;
  // else OK. Called where a value was refused, so that the message names
  // the real mistake.
  absl::Status CheckBound(const Value& v, Loc loc) const;
  // `status` (an InvalidArgument of a builtin called with `args`) replaced
  // by CheckBound's error of the first argument that is unbound.
  absl::Status BlameUnbound(absl::Status status, const std::vector<Arg>& args) const;
  // A fresh IR name based on `hint` (a validated Python identifier).
  std::string UniqueName(std::string_view hint);
  // The user_name (ir.h) of a symbol or parameter named `hint` in the source
  // and `ir_name` in the IR: "" when the two agree. The user's spelling is
  // kept unless another symbol or parameter already shows it.
  std::string UserNameFor(std::string_view hint, const std::string& ir_name);
  // Appends `s` to the current IR statement list, charging the budget for
  // the expression nodes it holds (the next Step reports a budget run out
  // here): inlining a function that stores a 2,000-node expression is one
  // step per call but a deep copy of the expression each time.
  void Emit(ir::Stmt s);
  absl::Status EnterNesting(Loc loc);
  void LeaveNesting() { --depth_; }
  absl::Status Step(Loc loc) { return budget_.Charge(loc, 1); }
  // Charges an operation that walks or copies `items` values (and `bytes`
  // of strings) to the budget.
  absl::Status ChargeItems(Loc loc, size_t items, size_t bytes = 0) {
    return budget_.Charge(loc, static_cast<int64_t>(items),
                          static_cast<int64_t>(items * sizeof(Value) + bytes));
  }
  // Charges a scan that walks `items` values without copying them.
  absl::Status ChargeScan(Loc loc, size_t items) {
    return budget_.Charge(loc, static_cast<int64_t>(items));
  }
  // PyEquals charged to the budget: the budget's error when it ran out.
  absl::StatusOr<bool> Equals(const Value& a, const Value& b, bool* known, Loc loc);

  const Module& module_;
  const FrontendOptions& options_;

  std::vector<std::unique_ptr<Frame>> frames_; // frames_[0]: module
  int frame_ = 0;                              // current frame
  absl::flat_hash_map<std::string, ModuleName> module_names_;
  absl::flat_hash_map<std::string, const BrokenStmt*> broken_names_;
  absl::flat_hash_map<const PyExpr*, std::pair<std::string, Value>> module_attr_cache_;

  struct UndoEntry {
    int frame;
    std::string name;
    std::optional<Value> old;
  };
  std::vector<UndoEntry> undo_;
  int open_scopes_ = 0;
  // undo_.size() and frames_.size() when each open scope began.
  std::vector<std::pair<size_t, size_t>> scope_marks_;

  std::vector<BufferInfo> buffers_;
  ir::Program program_;
  absl::flat_hash_set<std::string> used_names_;
  absl::flat_hash_set<std::string> user_names_; // of symbols and parameters so far
  // The T.Kernel being lowered (or the last one lowered): each T.Kernel
  // block after the first is a further kernel of the program (ir.h).
  ir::Kernel& CurrentKernel() {
    return program_.next_kernels.empty() ? program_.kernel : program_.next_kernels.back();
  }
  bool kernel_seen_ = false;
  bool in_kernel_ = false;
  std::vector<ir::Stmt>* sink_ = nullptr;
  std::string name_hint_; // the assignment target an allocation is named after
  std::string call_hint_; // name_hint_ as seen by the call being dispatched
  int ct_loop_depth_ = 0; // compile-time for loops being executed
  int user_calls_in_kernel_ = 0;
  int host_checks_ = 0;     // run-time checks placed at the start of the kernel body
  int call_scope_base_ = 0; // open_scopes_ when the innermost user call began

  // The entry function and its parameters.
  const PyStmt* entry_ = nullptr;
  // The frame the entry function is defined in: the module's, or for a
  // dotted entry the frame of the function that defines it.
  int entry_def_frame_ = 0;
  // While a dotted entry's enclosing function runs: the defs of the next
  // name it may reach, the frame its body runs in, and the def reached.
  std::vector<const PyStmt*> nested_stop_defs_;
  int nested_run_frame_ = -1;
  const PyStmt* nested_reached_ = nullptr;
  // Dynamic parameters already declared, by name: one symbol for a name
  // that several levels of a dotted entry declare.
  absl::flat_hash_map<std::string, Value> dynamic_values_;
  int entry_frame_ = -1; // the frame of the entry function's body
  bool prim_func_lowered_ = false;
  const PyStmt* lower_only_ = nullptr;         // LowerOnly
  const PyStmt* returned_prim_func_ = nullptr; // ReturnedPrimFunc
  const PyStmt* prim_func_ = nullptr;
  // Tensor parameters of the @tilelang.jit form, by position in the entry's
  // parameter list; outputs from T.empty in order of creation.
  std::vector<std::pair<int, ir::Param>> jit_inputs_;
  std::vector<ir::Param> jit_outputs_;
  absl::flat_hash_map<std::string, int> entry_param_index_;
  absl::flat_hash_set<std::string> pending_tensor_params_;
  std::vector<int64_t> out_idx_;
  std::vector<std::string> binding_names_valid_;
  // FrontendOptions::dynamic_params that named a parameter of the entry.
  absl::flat_hash_set<std::string> dynamic_used_;
  absl::flat_hash_set<std::string> bindings_used_;
  Value return_value_;
  // The def each lambda expression of the source stands for (MakeLambda).
  absl::flat_hash_map<const PyExpr*, std::unique_ptr<PyStmt>> lambda_defs_;

  int depth_ = 0;
  // Mutable: ArithContexts (made by the const Ctx) charge it.
  mutable EvalBudget budget_;
};

} // namespace kiln::frontend
