// The sweep's planner over tuner/roller: a Tune request and the device it
// runs on become a program, an arch model (arch::FromDevice: what the device
// reports, the rest from its preset) and policy options, and the policy's
// verified candidates become the sweep's, best predicted first.
//   TUNE_STRATEGY_ROLLER (and UNSPECIFIED)  top-k, k = budget.max_candidates (10)
//   TUNE_STRATEGY_EXHAUSTIVE                every verified point of the space
//   TUNE_STRATEGY_RANDOM                    budget.max_candidates (10) points
// The space is request.space where declared (integer values), the derived
// domains elsewhere. Configs over a resource limit never reach the sweep.
// Every compile-time evaluation (the analysis' probes, each candidate's
// verification) runs with `limits` (see TunePlanner): a cancelled job or
// a program past its budget ends the planning with that located status.
// Thread-safe (a pure function).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "kiln/v1/service.pb.h"
#include "server/tune_service.h"

namespace kiln::server {

absl::StatusOr<std::vector<TuneCandidate>> RollerPlanner(const kiln::v1::TuneRequest& request,
                                                         const kiln::v1::Device& device,
                                                         const frontend::EvalLimits& limits = {});

// The same with the device model's micro-benchmark results applied to the
// arch model (arch::WithMeasured); null or nothing measured: the preset's
// figures, as above. (Not an overload, so RollerPlanner stays usable as a
// TunePlanner value.)
absl::StatusOr<std::vector<TuneCandidate>>
RollerPlannerMeasured(const kiln::v1::TuneRequest& request, const kiln::v1::Device& device,
                      const kiln::v1::DeviceMeasurements* measured,
                      const frontend::EvalLimits& limits = {});

} // namespace kiln::server
