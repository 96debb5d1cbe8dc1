#include "server/benchmark_service.h"

#include <algorithm>
#include <map>
#include <optional>
#include <stop_token>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "compiler/driver/compile_driver.h"
#include "server/best_config.h"
#include "server/latency_stats.h"
#include "server/launch_plan.h"
#include "server/request_convert.h"
#include "server/worker_error.h"
#include "tuner/arch/arch_model.h"
#include "tuner/measure/kernel_launch.h"
#include "util/log.h"

namespace kiln::server {
namespace {

// {"artifact_key": "...", "config": {...}, "bindings": {...}} for the
// history; "bindings" (the program's shape) only for a program request, so
// that `kiln regress` can refuse a baseline measured on another shape.
std::string ConfigJson(const std::string& artifact_key, const kiln::v1::BenchmarkRequest& r) {
  const ConfigMap sorted(r.config().begin(), r.config().end());
  std::string out =
      absl::StrCat("{\"artifact_key\": \"", artifact_key, "\", \"config\": ", ConfigToJson(sorted));
  if (r.what_case() == kiln::v1::BenchmarkRequest::kProgram) {
    const ConfigMap bindings(r.program().bindings().begin(), r.program().bindings().end());
    absl::StrAppend(&out, ", \"bindings\": ", ConfigToJson(bindings));
  }
  return out + "}";
}

// "sm_90" -> (9, 0); nullopt for anything else.
std::optional<std::pair<int, int>> ComputeCapabilityOf(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5) return std::nullopt;
  int digits = 0;
  std::string d = arch.substr(3);
  if (!d.empty() && d.back() == 'a') d.pop_back();
  if (!absl::SimpleAtoi(d, &digits) || digits < 10) return std::nullopt;
  return std::make_pair(digits / 10, digits % 10);
}

// The artifact arch of a target: "cuda:sm_90" -> "sm_90"; "" for the CPU.
std::string TargetArch(const std::string& target) {
  const size_t colon = target.find(':');
  return colon == std::string::npos ? "" : target.substr(colon + 1);
}

bool Runs(const kiln::v1::Device& device, const std::string& target) {
  if (IsCpuTarget(target)) return arch::IsCpuDeviceId(device.id());
  if (target.rfind("cuda", 0) != 0 || device.id().rfind("cuda:", 0) != 0) return false;
  std::optional<std::pair<int, int>> cc = ComputeCapabilityOf(device.arch());
  return cc && measure::CubinRunsOn(TargetArch(target), cc->first, cc->second);
}

absl::Status Annotate(const absl::Status& s, absl::string_view what) {
  if (s.ok()) return s;
  // The payloads (the worker error kind, its stderr tail) stay with it.
  absl::Status out(s.code(), absl::StrCat(what, ": ", s.message()));
  s.ForEachPayload([&out](absl::string_view type_url, const absl::Cord& payload) {
    out.SetPayload(type_url, payload);
  });
  return out;
}

} // namespace

absl::StatusOr<std::vector<kiln::v1::Device>>
SweepDevices(const std::vector<kiln::v1::Device>& devices, const std::string& target,
             const kiln::v1::DeviceSelector& selector) {
  std::vector<kiln::v1::Device> out;
  for (const kiln::v1::Device& d : devices) {
    if (!selector.device_ids().empty() &&
        std::find(selector.device_ids().begin(), selector.device_ids().end(), d.id()) ==
            selector.device_ids().end()) {
      continue;
    }
    if (!selector.model().empty() && d.model() != selector.model()) continue;
    if (Runs(d, target)) out.push_back(d);
  }
  if (out.empty()) {
    absl::StatusOr<std::string> why = ChooseDevice(devices, target, selector);
    return why.ok() ? absl::FailedPreconditionError("no device matches the selector")
                    : why.status();
  }
  const std::string model = out[0].model();
  if (!selector.device_ids().empty()) {
    for (const kiln::v1::Device& d : out) {
      if (d.model() != model) {
        return absl::InvalidArgumentError(absl::StrCat(
            "devices: ", out[0].id(), " (", model, ") and ", d.id(), " (", d.model(),
            ") are different models; a sweep measures on one model: name devices of one, "
            "or set devices.model"));
      }
    }
  }
  std::erase_if(out, [&model](const kiln::v1::Device& d) { return d.model() != model; });
  if (selector.max_devices() > 0 && out.size() > static_cast<size_t>(selector.max_devices())) {
    out.resize(static_cast<size_t>(selector.max_devices()));
  }
  return out;
}

absl::StatusOr<std::string> ChooseDevice(const std::vector<kiln::v1::Device>& devices,
                                         const std::string& target,
                                         const kiln::v1::DeviceSelector& selector) {
  std::vector<const kiln::v1::Device*> candidates;
  if (!selector.device_ids().empty()) {
    for (const std::string& id : selector.device_ids()) {
      const kiln::v1::Device* found = nullptr;
      for (const kiln::v1::Device& d : devices) {
        if (d.id() == id) found = &d;
      }
      if (found == nullptr) {
        std::vector<std::string> ids;
        for (const kiln::v1::Device& d : devices) ids.push_back(d.id());
        return absl::NotFoundError(absl::StrCat("devices: no device '", id,
                                                "' on this daemon (it has ",
                                                absl::StrJoin(ids, ", "), ")"));
      }
      if (!Runs(*found, target)) {
        return absl::FailedPreconditionError(
            absl::StrCat("device ", id, " (", found->model(), ", ", found->arch(),
                         ") cannot run an artifact for target ", target));
      }
      candidates.push_back(found);
    }
  } else {
    for (const kiln::v1::Device& d : devices) {
      if (!selector.model().empty() && d.model() != selector.model()) continue;
      if (Runs(d, target)) candidates.push_back(&d);
    }
    if (candidates.empty()) {
      std::vector<std::string> have;
      for (const kiln::v1::Device& d : devices) {
        have.push_back(absl::StrCat(d.id(), " (", d.model(), ", ", d.arch(), ")"));
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "no device here runs target ", target.empty() ? "cpu" : target,
          selector.model().empty() ? "" : absl::StrCat(" with model '", selector.model(), "'"),
          "; devices: ", have.empty() ? "none" : absl::StrJoin(have, ", ")));
    }
  }
  for (const kiln::v1::Device* d : candidates) {
    if (!d->busy() && d->worker_state() == "running") return d->id();
  }
  return candidates.front()->id();
}

// --- Pending -------------------------------------------------------------------

bool BenchmarkService::Pending::Complete(absl::StatusOr<kiln::v1::BenchmarkResponse> reply) {
  if (completed_.exchange(true)) return false;
  done_(std::move(reply));
  return true;
}

void BenchmarkService::Pending::Cancel() {
  if (Complete(absl::CancelledError("the request was cancelled")) && job_) job_->Detach();
}

// --- BenchmarkService ----------------------------------------------------------

BenchmarkService::BenchmarkService(CompileService* compile, ArtifactStore* store,
                                   DevicePool* devices, JobManager* jobs, CompilePool* measure_pool,
                                   cache::Cache* history, BenchmarkLimits limits)
    : compile_(compile), store_(store), devices_(devices), jobs_(jobs), pool_(measure_pool),
      history_(history), limits_(limits) {}

std::shared_ptr<BenchmarkService::Pending> BenchmarkService::Start(const BenchmarkCall& call_in,
                                                                   Done done) {
  auto pending = std::make_shared<Pending>();
  pending->done_ = std::move(done);
  BenchmarkCall call = call_in;
  kiln::v1::BenchmarkRequest& r = call.request;
  if (r.what_case() == kiln::v1::BenchmarkRequest::WHAT_NOT_SET) {
    pending->Complete(absl::InvalidArgumentError(
        "Benchmark: give either program (with bindings) or artifact_key"));
    return pending;
  }
  if (r.trials() < 0 || r.trials() > limits_.max_trials) {
    pending->Complete(absl::InvalidArgumentError(
        absl::StrCat("trials: ", r.trials(), " is outside 1..", limits_.max_trials)));
    return pending;
  }
  if (r.warmup() < 0 || r.warmup() > limits_.max_warmup) {
    pending->Complete(absl::InvalidArgumentError(
        absl::StrCat("warmup: ", r.warmup(), " is outside 0..", limits_.max_warmup)));
    return pending;
  }
  if (r.trials() == 0) r.set_trials(limits_.default_trials);
  if (r.warmup() == 0) r.set_warmup(limits_.default_warmup);
  if (devices_ == nullptr) {
    pending->Complete(absl::UnavailableError(
        "this daemon has no device workers (kiln-worker did not start), so it cannot run "
        "kernels; see its start-up warnings"));
    return pending;
  }

  const std::string series =
      !r.history_name().empty()
          ? r.history_name()
          : (r.what_case() == kiln::v1::BenchmarkRequest::kArtifactKey
                 ? r.artifact_key()
                 : (r.program().file_name().empty() ? std::string("<request>")
                                                    : r.program().file_name()));
  std::shared_ptr<Job> job =
      jobs_->Create(kiln::v1::JOB_KIND_BENCHMARK, series, /*held=*/false, call.identity);
  pending->job_ = job;
  pending->job_id_ = job->id();
  job->Attach();
  counters_.started.fetch_add(1, std::memory_order_relaxed);
  absl::Status queued = pool_->Submit(
      Priority::kBenchmark, call.client, [this, job, call] { Run(job, call); },
      [job] { job->Fail(absl::CancelledError("the daemon shut down before the benchmark ran")); },
      static_cast<int64_t>(call.request.SpaceUsedLong())); // queue.max_bytes
  if (!queued.ok()) {
    job->Fail(queued);
    if (pending->Complete(queued)) job->Detach();
    return pending;
  }
  job->OnDone([this, pending](const Job& j) {
    absl::StatusOr<kiln::v1::BenchmarkResponse> reply;
    if (const BenchmarkJobResult* result = j.result<BenchmarkJobResult>()) {
      reply = result->response;
      counters_.succeeded.fetch_add(1, std::memory_order_relaxed);
    } else {
      reply = j.status();
      counters_.failed.fetch_add(1, std::memory_order_relaxed);
    }
    if (pending->Complete(std::move(reply))) pending->job_->Detach();
  });
  return pending;
}

absl::StatusOr<kiln::v1::BenchmarkResponse>
BenchmarkService::BenchmarkSync(const BenchmarkCall& call, absl::Time deadline) {
  struct Slot {
    absl::Notification done;
    absl::StatusOr<kiln::v1::BenchmarkResponse> reply = absl::UnknownError("no reply");
  };
  auto slot = std::make_shared<Slot>();
  std::shared_ptr<Pending> pending =
      Start(call, [slot](absl::StatusOr<kiln::v1::BenchmarkResponse> r) {
        slot->reply = std::move(r);
        slot->done.Notify();
      });
  if (!slot->done.WaitForNotificationWithDeadline(deadline)) {
    pending->Cancel();
    return absl::DeadlineExceededError("the benchmark did not finish before the deadline");
  }
  return slot->reply;
}

void BenchmarkService::Run(const std::shared_ptr<Job>& job, const BenchmarkCall& call) {
  if (!job->Start("preparing")) return; // cancelled while queued
  absl::StatusOr<kiln::v1::BenchmarkResponse> response = Measure(job, call);
  if (response.ok()) {
    const size_t bytes = response->SpaceUsedLong(); // samples: up to 100,000 doubles
    job->Succeed(BenchmarkJobResult{*std::move(response)}, "measured", bytes);
  } else if (job->cancel_requested()) {
    job->Fail(absl::CancelledError(
        absl::StrCat("the benchmark was cancelled: ", response.status().message())));
  } else {
    job->Fail(response.status());
  }
}

absl::StatusOr<kiln::v1::ArtifactMetadata>
BenchmarkService::ArtifactFor(const std::shared_ptr<Job>& job, const BenchmarkCall& call) {
  const kiln::v1::BenchmarkRequest& r = call.request;
  if (r.what_case() == kiln::v1::BenchmarkRequest::kArtifactKey) {
    absl::StatusOr<cache::Artifact> a = store_->Get(r.artifact_key(), {kMetadataKind});
    if (!a.ok()) {
      if (a.status().code() == absl::StatusCode::kNotFound) {
        return absl::NotFoundError(absl::StrCat("artifact_key: no artifact ", r.artifact_key(),
                                                " in the cache (compile it first)"));
      }
      return a.status();
    }
    for (const cache::ArtifactFile& f : a->files) {
      kiln::v1::ArtifactMetadata m;
      if (f.kind == kMetadataKind && m.ParseFromString(f.bytes)) return m;
    }
    return absl::DataLossError(absl::StrCat("artifact ", r.artifact_key(), " has no metadata"));
  }
  absl::StatusOr<driver::ProgramInput> program = ProgramFromProto(r.program(), r.config());
  if (!program.ok()) return program.status();
  CompileCall compile;
  compile.program = *std::move(program);
  compile.options = OptionsFromProto(r.target(), r.options());
  if (absl::Status s = AddKnobs(r.program(), r.config(), &compile.options); !s.ok()) return s;
  compile.client = call.client;
  compile.identity = call.identity;
  compile.priority = Priority::kBenchmark;
  job->SetProgress(0.05, "compiling");
  struct Slot {
    absl::Notification done;
    absl::StatusOr<CompileReply> reply = absl::UnknownError("no reply");
  };
  auto slot = std::make_shared<Slot>();
  std::shared_ptr<CompileService::Pending> pending =
      compile_->Start(compile, [slot](absl::StatusOr<CompileReply> reply) {
        slot->reply = std::move(reply);
        slot->done.Notify();
      });
  {
    std::stop_callback stop(job->stop_token(), [&pending] { pending->Cancel(); });
    slot->done.WaitForNotification();
  }
  if (!slot->reply.ok()) return slot->reply.status();
  return slot->reply->metadata;
}

absl::StatusOr<kiln::v1::BenchmarkResponse>
BenchmarkService::Measure(const std::shared_ptr<Job>& job, const BenchmarkCall& call) {
  const kiln::v1::BenchmarkRequest& r = call.request;
  absl::StatusOr<kiln::v1::ArtifactMetadata> metadata = ArtifactFor(job, call);
  if (!metadata.ok()) return metadata.status();
  const std::string& key = metadata->key();
  const std::string target = metadata->target();

  std::map<std::string, kiln::v1::BindingValue> values;
  if (r.what_case() == kiln::v1::BenchmarkRequest::kProgram) {
    for (const auto& [k, v] : r.program().bindings()) values[k] = v;
  }
  for (const auto& [k, v] : r.config()) values[k] = v;
  LaunchPlanOptions plan_options;
  plan_options.module_id = key;
  plan_options.seed = limits_.seed;
  absl::StatusOr<kiln::v1::LaunchSpec> launch =
      MakeLaunchPlan(metadata->launch(), values, plan_options);
  if (!launch.ok()) return Annotate(launch.status(), "cannot launch the kernel");

  absl::StatusOr<kiln::v1::WorkerRequest> load = LoadRequestFor(*store_, *metadata);
  if (!load.ok()) return load.status();

  const std::vector<kiln::v1::Device> devices = devices_->Devices();
  absl::StatusOr<std::string> device_id = ChooseDevice(devices, target, r.devices());
  if (!device_id.ok()) return device_id.status();
  std::string model;
  for (const kiln::v1::Device& d : devices) {
    if (d.id() == *device_id) model = d.model();
  }

  kiln::v1::BenchmarkResponse response;
  response.set_artifact_key(key);
  response.set_device_id(*device_id);
  response.set_device_model(model);

  job->SetProgress(0.2, absl::StrCat("waiting for ", *device_id));
  absl::StatusOr<DeviceLease> lease =
      devices_->Acquire(*device_id, absl::ZeroDuration(), job->stop_token());
  if (!lease.ok()) return lease.status();

  job->SetProgress(0.3, absl::StrCat("loading on ", *device_id));
  absl::StatusOr<kiln::v1::WorkerResponse> loaded =
      lease->Call(*load, absl::ZeroDuration(), job->stop_token());
  if (!loaded.ok()) {
    Record(call, response, std::string(WorkerErrorKindName(WorkerErrorKindOf(loaded.status()))));
    return Annotate(loaded.status(), absl::StrCat("loading the kernel on ", *device_id));
  }

  job->SetProgress(0.4, absl::StrCat("measuring on ", *device_id, ": ", r.warmup(), " warm-up, ",
                                     r.trials(), " trials"));
  kiln::v1::WorkerRequest measure;
  kiln::v1::MeasureRequest* m = measure.mutable_measure();
  *m->mutable_launch() = *std::move(launch);
  m->set_warmup(r.warmup());
  m->set_repeats(r.trials());
  m->set_flush_l2(r.flush_l2());
  m->set_use_cuda_graph(r.use_cuda_graph());
  absl::StatusOr<kiln::v1::WorkerResponse> measured =
      lease->Call(measure, absl::ZeroDuration(), job->stop_token());
  if (!measured.ok()) {
    const WorkerErrorKind kind = WorkerErrorKindOf(measured.status());
    if (kind != WorkerErrorKind::kCancelled) {
      Record(call, response, std::string(WorkerErrorKindName(kind)));
    }
    return Annotate(measured.status(), absl::StrCat("running the kernel on ", *device_id));
  }
  kiln::v1::WorkerRequest unload;
  unload.mutable_unload()->set_module_id(key);
  (void)lease->Call(unload);
  lease->Release();

  const std::vector<double> samples(measured->measure().samples_us().begin(),
                                    measured->measure().samples_us().end());
  *response.mutable_latency() = Summarize(samples);
  job->SetProgress(0.95, "recording");
  if (history_ != nullptr && r.has_regression()) {
    cache::MeasurementQuery q;
    q.key = !r.history_name().empty() ? r.history_name() : key;
    q.device_model = model;
    q.successes_only = true;
    q.limit = EffectivePolicy(r.regression()).baseline_runs();
    absl::StatusOr<std::vector<cache::Measurement>> past = history_->QueryMeasurements(q);
    if (past.ok()) {
      RegressionOutcome outcome = CompareWithHistory(response.latency(), *past, r.regression());
      response.set_verdict(outcome.verdict);
      response.set_baseline_median_us(outcome.baseline_median_us);
      response.set_relative_change(outcome.relative_change);
      response.set_p_value(outcome.p_value);
    } else {
      util::LogWarning("benchmark history query failed",
                       {{"job_id", job->id()}, {"error", past.status().message()}});
    }
  }
  Record(call, response, "");
  util::LogInfo("benchmarked", {{"job_id", job->id()},
                                {"key", key},
                                {"device", *device_id},
                                {"median_us", response.latency().median_us()},
                                {"trials", r.trials()}});
  return response;
}

void BenchmarkService::Record(const BenchmarkCall& call,
                              const kiln::v1::BenchmarkResponse& response,
                              const std::string& failure) {
  if (history_ == nullptr) return;
  const kiln::v1::BenchmarkRequest& r = call.request;
  cache::Measurement m;
  m.key = !r.history_name().empty() ? r.history_name() : response.artifact_key();
  m.config_json = ConfigJson(response.artifact_key(), r);
  m.target = r.what_case() == kiln::v1::BenchmarkRequest::kProgram
                 ? (r.target().empty() ? "cpu" : r.target())
                 : "";
  m.device_model = response.device_model();
  m.device_id = response.device_id();
  m.latency = ToCacheStats(response.latency());
  m.failure = failure;
  m.label = r.label();
  if (absl::StatusOr<int64_t> id = history_->RecordMeasurement(m); !id.ok()) {
    util::LogWarning("could not record a benchmark in the history",
                     {{"key", m.key}, {"error", id.status().message()}});
  }
}

} // namespace kiln::server
