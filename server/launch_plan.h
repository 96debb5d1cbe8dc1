// From a compiled artifact's launch metadata to one launch on a worker: the
// grid and the argument list (worker.proto's LaunchSpec) of a kernel under
// values for its dynamic shape symbols.
//
// Extents in the metadata are numbers ("128") or expressions over the
// program's symbols in the tile IR's text syntax ("(M + 63) // 64",
// "min(N, 256)", "int64(4)"); EvalExtent evaluates them with integer
// semantics (`//` and `%` floor, `/` truncating; comparisons and && || give
// 0 or 1; select(c, a, b)). Symbols go by the user's names, which may be
// words the syntax uses (`max`, `cast`): a name followed by `(` is a
// function, any other name a symbol (a bound one even where it reads `true`).
//
// Inputs follow kiln-run: every tensor that is not an output is filled with
// the seeded uniform generator (so a benchmark and `kiln-run --seed S` see
// the same data), outputs start as zeros, scalars take their value from
// `values` (kernel scalars and dynamic shape symbols alike), and each
// dynamic symbol is appended as an int32 after the parameters. The launch's
// tensor maps (CUDA TMA) go along as they are: the worker encodes them.
//
// Errors: InvalidArgument naming the extent or parameter (an unknown symbol,
// division by zero, a non-positive extent, a tensor over `max_tensor_bytes`).
// A program of several kernels becomes one worker launch of the whole
// sequence (LaunchSpec.next_kernels, with its workspaces' sizes in
// workspace_bytes; docs/design/multi-kernel.md).
// Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kiln/v1/service.pb.h"
#include "kiln/v1/worker.pb.h"
#include "proto/kiln/v1/dtype_bytes.h"
#include "server/artifact_store.h"

namespace kiln::server {

absl::StatusOr<int64_t> EvalExtent(absl::string_view text,
                                   const std::map<std::string, int64_t>& symbols);

struct LaunchPlanOptions {
  std::string module_id;
  uint64_t seed = 0;
  // Largest single tensor the plan asks a worker to allocate.
  int64_t max_tensor_bytes = int64_t{16} << 30;
};

// `values`: the dynamic symbols' and scalar parameters' values by name
// (integers for symbols; a float scalar may take an integer).
absl::StatusOr<kiln::v1::LaunchSpec>
MakeLaunchPlan(const kiln::v1::LaunchInfo& launch,
               const std::map<std::string, kiln::v1::BindingValue>& values,
               const LaunchPlanOptions& options);

// Whether `target` is the host CPU ("cpu", or empty).
bool IsCpuTarget(const std::string& target);

// The worker request that loads the artifact of `metadata` (module id = its
// key): its cubin, or for the CPU target its shared object, read from
// `store`. The store's errors carry "artifact KEY: "; an artifact without
// that file is FailedPrecondition.
absl::StatusOr<kiln::v1::WorkerRequest> LoadRequestFor(ArtifactStore& store,
                                                       const kiln::v1::ArtifactMetadata& metadata);

} // namespace kiln::server
