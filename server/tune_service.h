// Tune: the sweep behind the Tune RPC, callable without gRPC. The policy
// that proposes candidates is a Planner (the Roller policy of tuner/roller,
// or grid / random over a declared space); this file owns what happens to
// the candidates.
//
// A tune is a job (JOB_KIND_TUNE) keyed by the program, its shape, the
// target, the device model and the strategy: an identical request made
// while one runs joins it, and `attach_job_id` re-attaches to a job by id.
// The job runs on the measurement pool:
//   1. Devices: every device that runs the target (or the request's ids /
//      model); their model keys the history and the best config.
//   2. Candidates from the planner (at most budget.max_candidates). Configs
//      already measured for this program and shape on this device model
//      (the cache's history) are not compiled or measured again: their
//      recorded result counts.
//   3. Pipelined: every candidate is queued on the compile pool at tuning
//      priority at once (the pool's threads build them in parallel), and one
//      measuring thread per device takes compiled candidates as they come.
//   4. Validation: a reference output is made first, by
//      validation.reference_program when given, else by the first candidate
//      (the planner's best guess) that compiles and runs; every candidate's
//      outputs are compared with it (kiln-run's tolerances unless rtol/atol
//      are given) before its time counts. Compile errors, resource limits,
//      launch failures, crashes, timeouts and wrong results are recorded per
//      config with their status and never become best.
//   5. Measurement: warm-up and repeats (budget.warmup / repeats, defaults
//      3 and 20; repeats scaled down for kernels over 10 ms), L2 flushed
//      before each sample, CUDA-graph timing for kernels under 1 ms.
//   6. Every measurement goes into the history; the fastest valid one is
//      stored as the best config (only if faster than a stored one) with its
//      artifact pinned; progress (compiled / measured / failed / best so far)
//      after every step.
// Budgets: max_candidates, and max_seconds (no new compile or measurement
// starts after it; what runs finishes). Cancellation stops at the next step
// and kills a kernel in flight. The compile-time evaluations the sweep runs
// itself (the planner's, the inputs' launch, the reference program's
// compile) have the daemon's evaluation budget, max_seconds as their
// deadline and the job's cancellation: a cancel stops one within a few
// thousand evaluation steps.
//
// Thread-safe. Everything passed in must outlive the service.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/cache.h"
#include "kiln/v1/service.pb.h"
#include "server/artifact_store.h"
#include "server/best_config.h"
#include "server/compile_pool.h"
#include "server/compile_service.h"
#include "server/device_pool.h"
#include "server/job_manager.h"

namespace kiln::server {

struct TuneCandidate {
  ConfigMap config;
  double predicted_us = 0; // 0: no prediction
  std::string rationale;
};

// Proposes the candidates of a request for a device (its description, for
// the arch model). Every compile-time evaluation it runs takes `limits`:
// the daemon's evaluation budget (compile.eval_max_*), the job's
// cancellation flag and the tune's time budget as the deadline, so a
// cancelled job or a hostile program stops it. Errors end the job (e.g. a
// program the policy cannot analyse, with the reason; Cancelled /
// DeadlineExceeded / ResourceExhausted from the evaluation).
using TunePlanner = std::function<absl::StatusOr<std::vector<TuneCandidate>>(
    const kiln::v1::TuneRequest& request, const kiln::v1::Device& device,
    const frontend::EvalLimits& limits)>;

// Grid (every point of request.space, in order) and random (budget
// max_candidates points of it, seeded by validation.seed) over a declared
// space; InvalidArgument for roller or an empty space. Evaluates nothing.
absl::StatusOr<std::vector<TuneCandidate>>
DeclaredSpacePlanner(const kiln::v1::TuneRequest& request, const kiln::v1::Device& device,
                     const frontend::EvalLimits& limits = {});

struct TuneCall {
  kiln::v1::TuneRequest request;
  std::string client = "anonymous";
  std::string identity; // owns, or joins, the tune job and its compiles (Caller::identity)
};

// The result a tune job stores (Job::result<TuneJobResult>()).
struct TuneJobResult {
  kiln::v1::TuneResult result;
};

struct TuneCounters {
  std::atomic<int64_t> jobs{0}, compiled{0}, measured{0}, failed{0}, reused{0};
  // Candidate outputs compared with the reference, and of those the
  // reference candidate's own (made only when no other candidate matched it).
  std::atomic<int64_t> validated{0}, reference_self_checks{0};
};

class TuneService {
 public:
  TuneService(CompileService* compile, ArtifactStore* store, DevicePool* devices, JobManager* jobs,
              CompilePool* measure_pool, cache::Cache* history, TunePlanner planner);

  // The job of a request: joined or created (and queued), or the job of
  // attach_job_id. InvalidArgument / NotFound at once for bad requests.
  absl::StatusOr<std::shared_ptr<Job>> Start(const TuneCall& call);
  // Start and wait for the final state (tests, in-process callers).
  absl::StatusOr<kiln::v1::TuneResult> TuneSync(const TuneCall& call);

  const TuneCounters& counters() const { return counters_; }

 private:
  struct Sweep;
  void Run(const std::shared_ptr<Job>& job, const TuneCall& call);
  absl::StatusOr<kiln::v1::TuneResult> RunSweep(const std::shared_ptr<Job>& job,
                                                const TuneCall& call);
  // The outputs of validation.reference_program run on `device_id`.
  absl::StatusOr<std::vector<std::string>> ReferenceOutputs(const std::shared_ptr<Job>& job,
                                                            const TuneCall& call,
                                                            const std::string& device_id);

  CompileService* const compile_;
  ArtifactStore* const store_;
  DevicePool* const devices_;
  JobManager* const jobs_;
  CompilePool* const pool_;
  cache::Cache* const history_;
  const TunePlanner planner_;
  TuneCounters counters_;
};

// The history series of a tune: program, shape, target.
std::string TuneSeriesKey(const cache::BestConfigKey& key);

// InvalidArgument naming the field and its bound when a budget field is out
// of range: max_candidates and max_seconds negative (or NaN), warmup above
// kMaxMeasureWarmup, repeats above kMaxMeasureRepeats (Benchmark's caps:
// both are per-candidate counts run under one device lease). 0 is each
// field's default. Start checks it before the request takes any resource.
absl::Status ValidateTuneBudget(const kiln::v1::TuneBudget& budget);

} // namespace kiln::server
