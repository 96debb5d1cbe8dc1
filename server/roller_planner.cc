#include "server/roller_planner.h"

#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/request_convert.h"
#include "tuner/arch/arch_model.h"
#include "tuner/arch/microbench.h"
#include "tuner/roller/policy.h"
#include "util/log.h"

namespace kiln::server {

absl::StatusOr<std::vector<TuneCandidate>> RollerPlanner(const kiln::v1::TuneRequest& request,
                                                         const kiln::v1::Device& device,
                                                         const frontend::EvalLimits& limits) {
  return RollerPlannerMeasured(request, device, nullptr, limits);
}

absl::StatusOr<std::vector<TuneCandidate>>
RollerPlannerMeasured(const kiln::v1::TuneRequest& request, const kiln::v1::Device& device,
                      const kiln::v1::DeviceMeasurements* measured,
                      const frontend::EvalLimits& limits) {
  absl::StatusOr<driver::ProgramInput> program = ProgramFromProto(request.program(), {});
  if (!program.ok()) return program.status();
  program->limits = limits;
  absl::StatusOr<arch::ArchModel> model = arch::FromDevice(device);
  if (!model.ok()) {
    return absl::Status(model.status().code(),
                        absl::StrCat("no arch model for device ", device.id(), " (", device.model(),
                                     "): ", model.status().message()));
  }
  if (measured != nullptr) {
    std::map<std::string, double> values;
    if (measured->dram_gbs() > 0) values[arch::kDramGbs] = measured->dram_gbs();
    if (measured->l2_gbs() > 0) values[arch::kL2Gbs] = measured->l2_gbs();
    if (measured->mma_f16_tflops() > 0) values[arch::kMmaF16Tflops] = measured->mma_f16_tflops();
    *model = arch::WithMeasured(*model, arch::MeasuredFromValues(values));
  }
  roller::PolicyOptions options;
  const int n = request.budget().max_candidates();
  switch (request.strategy()) {
  case kiln::v1::TUNE_STRATEGY_EXHAUSTIVE:
    options.strategy = roller::Strategy::kGrid;
    options.budget = n;
    break;
  case kiln::v1::TUNE_STRATEGY_RANDOM:
    options.strategy = roller::Strategy::kRandom;
    options.budget = n > 0 ? n : 10;
    break;
  default:
    options.strategy = roller::Strategy::kRoller;
    options.top_k = n > 0 ? n : 10;
    break;
  }
  options.seed = request.validation().seed() != 0 ? request.validation().seed() : 1;
  options.target = request.target().empty() ? "cpu" : request.target();
  options.pass_options.assign(request.options().pass_options().begin(),
                              request.options().pass_options().end());
  for (const auto& [name, list] : request.space().candidates()) {
    std::vector<int64_t>& domain = options.space[name];
    for (const kiln::v1::BindingValue& v : list.values()) {
      if (v.value_case() != kiln::v1::BindingValue::kIntValue) {
        return absl::InvalidArgumentError(
            absl::StrCat("space: ", name, " has a non-integer value; tunables are integers"));
      }
      domain.push_back(v.int_value());
    }
    if (domain.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("space: ", name, " has no values"));
    }
  }
  absl::StatusOr<roller::Proposal> proposal = roller::Propose(*program, *model, options);
  if (!proposal.ok()) return proposal.status();
  util::LogInfo("planned", {{"strategy", roller::StrategyName(options.strategy)},
                            {"device", device.id()},
                            {"bandwidth_source", model->bandwidth_source},
                            {"throughput_source", model->throughput_source},
                            {"dram_gbs", model->dram_gbs},
                            {"considered", proposal->considered},
                            {"model_rejected", proposal->model_rejected},
                            {"compiler_rejected", proposal->compiler_rejected},
                            {"candidates", static_cast<int64_t>(proposal->candidates.size())},
                            {"ms", proposal->seconds * 1000}});
  std::vector<TuneCandidate> out;
  out.reserve(proposal->candidates.size());
  for (roller::Candidate& c : proposal->candidates) {
    TuneCandidate t;
    for (const auto& [name, value] : c.config) t.config[name].set_int_value(value);
    t.predicted_us = c.predicted_us;
    t.rationale = std::move(c.rationale);
    out.push_back(std::move(t));
  }
  return out;
}

} // namespace kiln::server
