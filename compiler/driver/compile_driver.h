// The compiler behind two calls, for kilnd's compile jobs and the tuner:
//
//   Prepare: a program (TileLang source, textual IR or wire IR, with its
//            bindings) and build options -> the specialized, verified,
//            canonical tile IR and its cache key. Cheap (well under a
//            millisecond for the examples): the hit path runs only this.
//   Build:   a prepared program -> the artifact files (cubin, PTX, source,
//            the CPU target's shared object, canonical IR text) and the
//            launch metadata. The expensive part (NVRTC, nvcc or the host
//            compiler).
//
// The key covers everything that changes the generated code: the canonical
// program (so cosmetic source edits still hit), the target, the canonical
// options (CanonicalOptions) and the toolchain fingerprint (Kiln's codegen
// version and the compiler's version).
//
// Thread-safe (no shared mutable state; NVRTC programs are per call; host
// compiles run in their own directories and processes).
//
// Errors: InvalidArgument with "file:line:col: message" for bad programs
// and for options that do not apply to the target; ResourceExhausted,
// DeadlineExceeded or Cancelled (located too) from Prepare when the
// program's compile-time evaluation runs out of ProgramInput::limits; the
// toolchain's errors from Build (DeadlineExceeded / ResourceExhausted for a subprocess past its
// limits); FailedPrecondition when the target's toolchain is not installed.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/kernel_spec.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/ir.h"
#include "compiler/toolchain/resource_usage.h"

namespace kiln::driver {

struct ProgramInput {
  enum class Kind : uint8_t { kTileLang, kIrText, kProgram };
  Kind kind = Kind::kTileLang;
  std::string text;    // kTileLang, kIrText
  ir::Program program; // kProgram (from the wire: already converted)
  std::string file_name = "<request>";
  std::string entry; // TileLang: the kernel function; empty: the only one
  std::vector<std::pair<std::string, frontend::BindingValue>> bindings;
  // TileLang: parameters compiled as dynamic shape symbols
  // (frontend::FrontendOptions::dynamic_params).
  std::vector<std::string> dynamic_params;
  // TileLang: the budget of the compile-time evaluation (deadline and
  // cancellation included); not part of the key.
  frontend::EvalLimits limits;
};

struct BuildOptions {
  std::string target = "cpu"; // "cpu", "cuda:sm_80" ... "cuda:sm_90a"
  // "" (the target's default: nvrtc for CUDA, cc for the CPU), "nvrtc",
  // "nvcc", "cc".
  std::string toolchain;
  // 0..3; -1: the toolchain's default (ptxas -O3 for CUDA, -O1 for the CPU).
  int opt_level = -1;
  bool fast_math = false;
  bool emit_source = false; // no effect: every artifact keeps its generated source
  bool emit_ptx = false;    // CUDA only
  bool line_info = false;   // CUDA only
  // Kiln pass options "name=value": gemm=wgmma|mma, pipeline=tma-ws|cp.async;
  // any other is an InvalidArgument (never silently ignored).
  std::vector<std::string> pass_options;
};

// InvalidArgument naming the offending option for `options.target`.
absl::Status ValidateBuildOptions(const BuildOptions& options);
// The options as hashed into the key: defaults made explicit, so two
// spellings of one configuration give one key.
std::string CanonicalOptions(const BuildOptions& options);
// The toolchain fingerprint the options' target and toolchain compile with.
std::string FingerprintFor(const BuildOptions& options);
// True when the build lowers gemms to wgmma: on a Hopper target
// (cuda:sm_90, cuda:sm_90a) unless the last gemm= pass option is gemm=mma,
// elsewhere only when it is gemm=wgmma (which then has no effect).
bool GemmWgmma(const BuildOptions& options);
// True when a wgmma build feeds its main loops with TMA + warp
// specialization (unless the last pipeline= pass option is
// pipeline=cp.async).
bool TmaWsPipeline(const BuildOptions& options);

// The blocks per SM a warp-specialized main loop plans for: the last
// ws-blocks= pass option (1, 2; auto: 0, Kiln's plan); 0 without TmaWsPipeline.
int WsBlocks(const BuildOptions& options);
// The parts the GEMM's K loop is split into (compiler/passes/split_k.h): the
// last split-k= pass option (N; 1: off); 0 (auto: Kiln's choice on Hopper,
// codegen::ApplySplitK) by default and for split-k=auto.
int SplitKParts(const BuildOptions& options);
// How Emit lowers a build with `options` (gemm path, pipeline, register
// plan, split-K).
codegen::LoweringOptions LoweringFor(const BuildOptions& options);

// Tuning knobs that are pass options rather than bindings: a config entry
// (a candidate of a sweep, a stored best config, a Compile's `config`)
// named "kiln:NAME", a name no Python parameter can have, stands for a pass
// option of the build. Known: "kiln:split_k" = N, the pass option split-k=N
// (1: none, where the default would be Kiln's own choice), and
// "kiln:persistent" = 0 or 1, persistent=off or on (passes/persistent.h).
inline constexpr char kSplitKKnob[] = "kiln:split_k";
inline constexpr char kPersistentKnob[] = "kiln:persistent";
// "kiln:cluster" = 1 or 2, cluster=1 or 2 (pass_registry.h,
// PassContext::cluster).
inline constexpr char kClusterKnob[] = "kiln:cluster";
// "kiln:tma_store" = 0 or 1, epilogue=direct or tma (PassContext::epilogue).
inline constexpr char kTmaStoreKnob[] = "kiln:tma_store";
bool IsPassKnob(absl::string_view name);
// The pass option knob `name` = `value` stands for ("" where the value asks
// for nothing); InvalidArgument for an unknown knob or a value out of range.
absl::StatusOr<std::string> KnobPassOption(absl::string_view name, int64_t value);
// What of the options changes the kernel a config compiles to, beyond the
// target: "" for the defaults, else ";"-separated name=value items
// (";toolchain=nvcc;opt=2;fast_math=1;gemm=wgmma"). Tuning results are
// kept per target and variant, so measurements of different kernels of
// one config never mix.
std::string KernelVariant(const BuildOptions& options);

struct Prepared {
  ir::Program program; // specialized and verified tile IR (not canonicalized)
  std::string key;     // 64 hex digits
  std::string fingerprint;
  double frontend_seconds = 0; // parse + evaluate + lower + verify + hash
};

absl::StatusOr<Prepared> Prepare(const ProgramInput& in, const BuildOptions& options);

// Artifact file kinds (the cache's ArtifactFile::kind).
inline constexpr char kCubin[] = "cubin";
inline constexpr char kPtx[] = "ptx";
inline constexpr char kCudaSource[] = "cuda_source";
inline constexpr char kCppSource[] = "cpp_source";
inline constexpr char kSharedObject[] = "so";
inline constexpr char kIrText[] = "ir_text";

struct BuiltFile {
  std::string kind;
  std::string bytes;
};

struct Built {
  codegen::EmittedKernel kernel;                     // the emitted source and launch spec
  std::vector<BuiltFile> files;                      // the binary first, then the extras asked for
  std::optional<toolchain::ResourceUsage> resources; // CUDA: ptxas's report
  // codegen::LaunchJson, with "resources" added when known.
  std::string launch_json;
  // "lower_emit" and "toolchain", in seconds.
  std::map<std::string, double> timings;
  std::string log; // the toolchain's warnings
};

absl::StatusOr<Built> Build(const Prepared& prepared, const BuildOptions& options);

// The first step of Build alone: the lowered and emitted kernel (its source
// and launch spec) without running the toolchain, in milliseconds where a
// build takes a second. A sweep learns its kernel's arguments from it before
// any candidate has compiled.
absl::StatusOr<codegen::EmittedKernel> Emit(const Prepared& prepared, const BuildOptions& options);

// Prepare then Build.
absl::StatusOr<Built> CompileProgram(const ProgramInput& in, const BuildOptions& options);

} // namespace kiln::driver
