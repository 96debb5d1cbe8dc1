// The TileLang source frontend: Python source text of a TileLang kernel plus
// parameter bindings in, a specialized tile IR program out.
//
// Both of TileLang's forms are accepted:
//  - the factory form: `def f(M, N, ..., dtype="float16"):` containing a
//    `@T.prim_func def main(A: T.Tensor((M, K), dtype), ...)` and `return main`
//    (or a top-level @T.prim_func);
//  - the @tilelang.jit form: `M, N = T.const("M, N")`, `A: T.Tensor(...)`
//    annotations on arguments, `C = T.empty(...)`, `return C`.
// The Python around the kernel is evaluated at compile time; nothing runs on
// the host. Anything outside the supported subset is a located error
// ("file:line:col: message").
// Thread-safe (no shared state).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "compiler/ir/ir.h"

namespace kiln::frontend {

// A value bound to a parameter or T.const symbol by name.
struct BindingValue {
  // kIntList: a Python list of ints ([64, 128]), or a tuple when `tuple`;
  // the kernel sees a list (tuple) of those ints (TileLang's grouped GEMM
  // takes its group sizes so).
  enum class Kind : uint8_t { kInt, kFloat, kBool, kString, kIntList };
  Kind kind = Kind::kInt;
  int64_t ival = 0;
  double fval = 0.0;
  bool bval = false;
  std::string sval;           // strings; dtype names ("float16") are strings too
  std::vector<int64_t> ivals; // kIntList
  bool tuple = false;         // kIntList: a tuple, not a list
  bool operator==(const BindingValue&) const = default;
};

// The most items a list binding may hold (kiln-opt --bind, the wire's
// BindingValue.int_list): a longer one is an InvalidArgument that names the
// binding (CheckBinding).
inline constexpr size_t kMaxBindingListItems = 4096;

// Parses the text of a --bind value: an integer, a float, True/False (or
// true/false), a list or tuple of integers ("[64, 128]", "(1, 2)", "[]",
// "(3,)"), and anything else is a string (e.g. "float16" or "T.float16").
BindingValue ParseBindingText(std::string_view text);

// OK, or InvalidArgument "binding 'NAME': a list of N items; at most
// kMaxBindingListItems" for a list binding past the bound.
absl::Status CheckBinding(std::string_view name, const BindingValue& value);
// The same check on a list's item count alone (before building the value).
absl::Status CheckBindingListSize(std::string_view name, size_t items);

// The binding as Python would write it ("64", "True", "[64, 128]", "(3,)",
// a string as is): for messages and the text of a --bind flag.
std::string BindingValueText(const BindingValue& value);

// The budget of one compile-time evaluation (eval_budget.h): a program that
// needs more fails with a located error instead of running on. The
// defaults are far above what real kernels use (the examples take a few
// thousand steps, kilobytes and milliseconds).
struct EvalLimits {
  int64_t max_steps = 2'000'000; // statements, loop iterations, expression nodes, items walked
  int64_t max_bytes = int64_t{256} << 20; // bytes of values allocated, in total
  double max_seconds = 10;                // wall time
  // The caller's deadline (an RPC's): past it, DeadlineExceeded.
  absl::Time deadline = absl::InfiniteFuture();
  // Set (from any thread) to stop the evaluation with Cancelled; must
  // outlive the call. Null: not cancellable.
  const std::atomic<bool>* cancelled = nullptr;
};

// The device that a program's build-time device queries describe
// (torch.cuda.get_device_properties(...).multi_processor_count,
// torch.cuda.get_device_capability(), tilelang.carver.arch.driver.get_num_sms(),
// ...): the compile's target, never the machine the compiler runs on, so one
// source and target give one program (and one cache key) everywhere.
struct DeviceModel {
  // The compile's target, named in diagnostics ("cpu", "cuda:sm_90"); empty
  // when the caller named none.
  std::string target;
  // False (the CPU target, no target): every device query is a located
  // error that says which target to compile for.
  bool known = false;
  std::string name; // torch.cuda.get_device_name(), e.g. "NVIDIA H100 80GB HBM3"
  int sm_count = 0; // multi_processor_count, carver's get_num_sms()
  int cc_major = 0; // get_device_capability() == (cc_major, cc_minor)
  int cc_minor = 0;
  int64_t shared_memory_per_block = 0;       // bytes, without opt-in
  int64_t shared_memory_per_block_optin = 0; // bytes, with opt-in
  int64_t shared_memory_per_sm = 0;          // bytes
  int64_t registers_per_block = 0;           // 32-bit registers
  int64_t registers_per_sm = 0;
  int max_threads_per_sm = 0;
  int warp_size = 32;
  int64_t l2_cache_bytes = 0;
  int64_t total_memory_bytes = 0;
};

// The model of the device a compile for `target` ("cuda:sm_80" ...
// "cuda:sm_90a", as passes::ParseTarget spells them) builds for: one
// representative data-center part per architecture (sm_80: A100-SXM4-80GB,
// sm_86: A40, sm_89: L40S, sm_90/sm_90a: H100 SXM5 80GB; an H200 has the
// same SMs and limits). Any other target (cpu, unknown) gives known=false.
DeviceModel DeviceModelForTarget(std::string_view target);

struct FrontendOptions {
  std::string file_name = "<input>"; // used in diagnostics only
  // The kernel function to compile. Empty: the only candidate in the file
  // (a function decorated with @tilelang.jit / @jit / @T.prim_func, or a
  // function whose body defines a @T.prim_func); several candidates are an
  // error that lists them. A dotted name ("outer.inner", any depth) is a
  // function defined inside a module-level function: `outer` runs at compile
  // time, its parameters bound from `bindings`, up to its `def inner`, which
  // then compiles as the kernel function, closing over `outer`'s locals. A
  // binding binds the parameter of its name at every level that declares one.
  std::string entry;
  std::vector<std::pair<std::string, BindingValue>> bindings;
  // Integer parameters of the kernel function to compile as dynamic shape
  // symbols (like T.dynamic) instead of binding them: the kernel then takes
  // their values at launch (LaunchInfo.symbols). For values only known at
  // run time, e.g. the total token count of a variable-length batch. A
  // T.const symbol named here stays dynamic too. A name that is also bound,
  // is neither a parameter nor a symbol of the entry, or is a tensor
  // parameter is a located error; so is a use that needs a compile-time
  // value (Python control flow on it; a shared-memory shape, which
  // verify-resources refuses).
  std::vector<std::string> dynamic_params;
  EvalLimits limits;
  // What build-time device queries answer; default: none known.
  DeviceModel device;
};

// Errors: InvalidArgument "file:line:col: message" for a bad program;
// ResourceExhausted / DeadlineExceeded / Cancelled (also located) when the
// evaluation runs out of its budget (EvalLimits).
absl::StatusOr<ir::Program> CompileSource(std::string_view source, const FrontendOptions& options);

// One parameter of a kernel function, as the tuner sees it before binding.
struct EntryParam {
  std::string name;
  // A tensor (annotated in the body, or a T.Tensor / T.Buffer annotation) or
  // a @T.prim_func scalar: never bound, so never tuned.
  bool is_tensor = false;
  bool has_default = false;
  // The default when it is a literal (int, float, bool, string); nullopt
  // for an expression such as `T.float16`.
  std::optional<BindingValue> default_value;
};

struct EntrySignature {
  std::string name; // the entry function
  std::vector<EntryParam> params;
};

// The entry function of `source` (chosen as CompileSource chooses it) and its
// parameters in order; nothing is evaluated. For a dotted entry: the kernel
// function's parameters, then each enclosing function's (innermost first; a
// name several levels declare once, as the innermost declares it), and
// `name` is the dotted entry. Errors: as CompileSource's for
// a file that does not parse or has no (or no unique) entry.
absl::StatusOr<EntrySignature> DescribeEntry(std::string_view source,
                                             const FrontendOptions& options);

} // namespace kiln::frontend
