#include "server/tune_service.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "server/artifact_metadata.h"
#include "server/benchmark_service.h"
#include "server/latency_stats.h"
#include "server/launch_plan.h"
#include "server/request_convert.h"
#include "server/worker_error.h"
#include "tuner/measure/kernel_launch.h"
#include "util/log.h"
#include "util/sha256.h"

namespace kiln::server {
namespace {

using Status = kiln::v1::Measurement::Status;

std::string StatusName(Status s) {
  switch (s) {
  case kiln::v1::Measurement::STATUS_OK:
    return "";
  case kiln::v1::Measurement::STATUS_COMPILE_ERROR:
    return "compile_error";
  case kiln::v1::Measurement::STATUS_LAUNCH_ERROR:
    return "launch_error";
  case kiln::v1::Measurement::STATUS_TIMEOUT:
    return "timeout";
  case kiln::v1::Measurement::STATUS_WRONG_RESULT:
    return "wrong_result";
  case kiln::v1::Measurement::STATUS_RESOURCE_LIMIT:
    return "resource_limit";
  default:
    return "error";
  }
}

Status StatusFromName(const std::string& name) {
  for (Status s :
       {kiln::v1::Measurement::STATUS_OK, kiln::v1::Measurement::STATUS_COMPILE_ERROR,
        kiln::v1::Measurement::STATUS_LAUNCH_ERROR, kiln::v1::Measurement::STATUS_TIMEOUT,
        kiln::v1::Measurement::STATUS_WRONG_RESULT, kiln::v1::Measurement::STATUS_RESOURCE_LIMIT}) {
    if (StatusName(s) == name) return s;
  }
  return kiln::v1::Measurement::STATUS_UNSPECIFIED;
}

// A compile failure's status: over a resource limit, or any other error.
// Compiles one sweep keeps in the pool at once.
constexpr int kMaxCompilesInFlight = 32;

// Set while this thread runs a sweep's submission loop (see submit_more).
thread_local bool t_submitting = false;

Status CompileFailureStatus(const absl::Status& s) {
  if (s.code() == absl::StatusCode::kResourceExhausted) {
    return kiln::v1::Measurement::STATUS_RESOURCE_LIMIT;
  }
  const std::string message(s.message());
  for (const char* word : {"shared memory", "registers", "threads per block", "exceeds the"}) {
    if (message.find(word) != std::string::npos)
      return kiln::v1::Measurement::STATUS_RESOURCE_LIMIT;
  }
  return kiln::v1::Measurement::STATUS_COMPILE_ERROR;
}

void FillLatency(const kiln::v1::LatencyDistribution& d, kiln::v1::Measurement* m) {
  m->set_median_us(d.median_us());
  m->set_mean_us(d.mean_us());
  m->set_stddev_us(d.stddev_us());
  m->set_min_us(d.min_us());
  m->set_max_us(d.max_us());
  m->set_samples(d.samples_us_size());
}

bool Better(const kiln::v1::Measurement& a, const kiln::v1::Measurement& b) {
  return a.median_us() < b.median_us();
}

std::string ConfigText(const ConfigMap& config) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : config) {
    std::string value = BindingToJson(v);
    if (v.value_case() == kiln::v1::BindingValue::kStringValue) value = v.string_value();
    parts.push_back(absl::StrCat(k, "=", value));
  }
  return absl::StrJoin(parts, " ");
}

// Every point of the cartesian product of `space`, names in order, the last
// name varying fastest.
std::vector<ConfigMap> Product(const kiln::v1::TuneSpace& space) {
  std::map<std::string, std::vector<kiln::v1::BindingValue>> axes;
  for (const auto& [name, list] : space.candidates()) {
    axes[name].assign(list.values().begin(), list.values().end());
  }
  std::vector<ConfigMap> out(1);
  for (const auto& [name, values] : axes) {
    std::vector<ConfigMap> next;
    for (const ConfigMap& partial : out) {
      for (const kiln::v1::BindingValue& v : values) {
        ConfigMap c = partial;
        c[name] = v;
        next.push_back(std::move(c));
      }
    }
    out = std::move(next);
  }
  return out;
}

// The sweep's launch-plan options for a module: every launch draws its
// generated inputs from the request's seed (1 when unset).
LaunchPlanOptions SweepPlanOptions(const kiln::v1::TuneRequest& r, std::string module_id) {
  LaunchPlanOptions options;
  options.module_id = std::move(module_id);
  options.seed = r.validation().seed() != 0 ? r.validation().seed() : 1;
  return options;
}

// The program's bindings with candidate `config` over them.
std::map<std::string, kiln::v1::BindingValue> SweepValues(const kiln::v1::TuneRequest& r,
                                                          const ConfigMap& config) {
  std::map<std::string, kiln::v1::BindingValue> values(r.program().bindings().begin(),
                                                       r.program().bindings().end());
  for (const auto& [k, v] : config) values[k] = v;
  return values;
}

// The launch of candidate `config` as the sweep will make it, from the
// emitted kernel alone (no toolchain run): its arguments name the generated
// inputs every candidate shares (the same shapes, inits and seed).
absl::StatusOr<kiln::v1::LaunchSpec> InputsLaunch(const kiln::v1::TuneRequest& r,
                                                  const std::string& target,
                                                  const ConfigMap& config,
                                                  const frontend::EvalLimits& limits) {
  google::protobuf::Map<std::string, kiln::v1::BindingValue> bindings;
  for (const auto& [k, v] : config) bindings[k] = v;
  absl::StatusOr<driver::ProgramInput> program = ProgramFromProto(r.program(), bindings);
  if (!program.ok()) return program.status();
  program->limits = limits;
  driver::BuildOptions options = OptionsFromProto(target, r.options());
  if (absl::Status s = AddKnobs(r.program(), bindings, &options); !s.ok()) return s;
  absl::StatusOr<driver::Prepared> prepared = driver::Prepare(*program, options);
  if (!prepared.ok()) return prepared.status();
  absl::StatusOr<codegen::EmittedKernel> kernel = driver::Emit(*prepared, options);
  if (!kernel.ok()) return kernel.status();
  return MakeLaunchPlan(MakeLaunchInfo(kernel->launch, *prepared), SweepValues(r, config),
                        SweepPlanOptions(r, "inputs"));
}

// The recorded status of a candidate whose worker call failed with `s`: the
// kind the worker reported, a launch error when it reported none.
Status FailedCallStatus(const absl::Status& s) {
  const Status status = MeasurementStatusFor(s);
  return status == kiln::v1::Measurement::STATUS_UNSPECIFIED
             ? kiln::v1::Measurement::STATUS_LAUNCH_ERROR
             : status;
}

// Whether a worker call's failure took the worker (or its device) away, so
// that the next call needs a new lease.
bool EndsLease(const absl::Status& s) {
  const WorkerErrorKind kind = WorkerErrorKindOf(s);
  return LostWorker(kind) || kind == WorkerErrorKind::kUnavailable;
}

} // namespace

std::string TuneSeriesKey(const cache::BestConfigKey& key) {
  return absl::StrCat("tune:", key.program_key, ":", key.shape, ":", key.target);
}

absl::StatusOr<std::vector<TuneCandidate>>
DeclaredSpacePlanner(const kiln::v1::TuneRequest& request, const kiln::v1::Device&,
                     const frontend::EvalLimits&) {
  if (request.space().candidates().empty()) {
    return absl::InvalidArgumentError(
        "space: empty; declare the tunables and their values (the Roller policy that derives "
        "them is not built yet)");
  }
  for (const auto& [name, list] : request.space().candidates()) {
    if (list.values().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("space: ", name, " has no values"));
    }
  }
  std::vector<ConfigMap> points = Product(request.space());
  if (request.strategy() == kiln::v1::TUNE_STRATEGY_RANDOM) {
    const size_t n = request.budget().max_candidates() > 0
                         ? static_cast<size_t>(request.budget().max_candidates())
                         : size_t{20};
    std::mt19937_64 rng(request.validation().seed());
    std::shuffle(points.begin(), points.end(), rng);
    if (points.size() > n) points.resize(n);
  } else if (request.strategy() == kiln::v1::TUNE_STRATEGY_ROLLER ||
             request.strategy() == kiln::v1::TUNE_STRATEGY_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        "strategy: roller needs the Roller policy, which is not built yet; use exhaustive or "
        "random over a declared space");
  }
  std::vector<TuneCandidate> out;
  for (ConfigMap& c : points) out.push_back({std::move(c), 0, ""});
  return out;
}

// --- the sweep -------------------------------------------------------------------

struct TuneService::Sweep {
  struct Item {
    TuneCandidate candidate;
    kiln::v1::Measurement measurement;
    std::optional<kiln::v1::ArtifactMetadata> artifact;
    std::shared_ptr<CompileService::Pending> compile;
    bool compiled = false; // compile finished (either way)
    bool finished = false; // measurement (or failure) final
  };

  std::mutex mu;
  std::condition_variable changed;
  std::vector<Item> items;
  std::deque<size_t> ready;     // compiled, waiting for a device
  int compiles_outstanding = 0; // not yet compiled (either way), submitted or not
  // Compiles go to the pool a few at a time (kMaxCompilesInFlight), so that a
  // large sweep never overflows the pool's bounded tuning queue; `unsubmitted`
  // holds the rest, and items the queue turned away go back to its front.
  std::deque<size_t> unsubmitted;
  int in_flight = 0;
  bool stopping = false;    // the sweep ends: nothing more is submitted
  int callbacks_active = 0; // compile callbacks past their locked part
  bool turned_away = false; // a submission met a full queue: stop submitting
  kiln::v1::TuneProgress progress;
  std::optional<kiln::v1::Measurement> best;
  // The reference: its outputs (kept here when a reference program made
  // them or when several devices measure; one device leaves them on its
  // worker alone), and the candidate whose run made it.
  std::vector<std::string> reference_outputs;
  bool have_reference = false;
  std::optional<size_t> reference_item;
  // The reference candidate is not validated against its own run: another
  // candidate that matches it confirms it (two configs agree). Until then its
  // measurement waits here; a sweep in which none matched compares it with
  // its own run at the end, on the device that made it.
  bool reference_confirmed = false;
  std::optional<std::vector<double>> reference_samples;
  std::string reference_device;
};

TuneService::TuneService(CompileService* compile, ArtifactStore* store, DevicePool* devices,
                         JobManager* jobs, CompilePool* measure_pool, cache::Cache* history,
                         TunePlanner planner)
    : compile_(compile), store_(store), devices_(devices), jobs_(jobs), pool_(measure_pool),
      history_(history), planner_(std::move(planner)) {}

absl::Status ValidateTuneBudget(const kiln::v1::TuneBudget& budget) {
  if (budget.max_candidates() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("budget.max_candidates: ", budget.max_candidates(), " is negative"));
  }
  if (!(budget.max_seconds() >= 0)) { // NaN too
    return absl::InvalidArgumentError(
        absl::StrCat("budget.max_seconds: ", budget.max_seconds(), " is not >= 0"));
  }
  if (budget.warmup() < 0 || budget.warmup() > kMaxMeasureWarmup) {
    return absl::InvalidArgumentError(absl::StrCat("budget.warmup: ", budget.warmup(),
                                                   " is outside 0..", kMaxMeasureWarmup,
                                                   " (warm-up launches per candidate)"));
  }
  if (budget.repeats() < 0 || budget.repeats() > kMaxMeasureRepeats) {
    return absl::InvalidArgumentError(absl::StrCat("budget.repeats: ", budget.repeats(),
                                                   " is outside 0..", kMaxMeasureRepeats,
                                                   " (timed launches per candidate)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Job>> TuneService::Start(const TuneCall& call) {
  const kiln::v1::TuneRequest& r = call.request;
  if (!r.attach_job_id().empty()) {
    std::shared_ptr<Job> job = jobs_->Find(r.attach_job_id());
    if (job == nullptr) {
      absl::StatusOr<kiln::v1::Job> stored = jobs_->Get(r.attach_job_id());
      if (!stored.ok()) return stored.status();
      return absl::FailedPreconditionError(
          absl::StrCat("job ", r.attach_job_id(), " is from an earlier daemon run (",
                       kiln::v1::JobState_Name(stored->state()),
                       "); its measurements are in the history: LookupBest or tune again"));
    }
    if (job->kind() != kiln::v1::JOB_KIND_TUNE) {
      return absl::InvalidArgumentError(
          absl::StrCat("attach_job_id: job ", r.attach_job_id(), " is not a tuning job"));
    }
    return job;
  }
  if (r.program().source_case() == kiln::v1::ProgramSource::SOURCE_NOT_SET) {
    return absl::InvalidArgumentError("program: no source (tilelang_source, ir or ir_text)");
  }
  // Before anything else takes a resource: the per-candidate counts have
  // Benchmark's caps, or one candidate holds a device until the worker
  // request timeout.
  if (absl::Status budget = ValidateTuneBudget(r.budget()); !budget.ok()) return budget;
  if (devices_ == nullptr) {
    return absl::UnavailableError("this daemon has no device workers, so it cannot tune");
  }
  const std::string target = r.target().empty() ? "cpu" : r.target();
  cache::BestConfigKey key = BestKeyFor(r.program(), target, r.devices().model(), r.options());
  // Identical requests (every field: program, shape, space, budget, ...) join.
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    r.SerializeToCodedStream(&coded);
  }
  const std::string job_key = absl::StrCat(TuneSeriesKey(key), ":", util::Sha256Hex(bytes));
  JobManager::Joined joined =
      jobs_->JoinOrCreate(kiln::v1::JOB_KIND_TUNE, job_key, /*held=*/true, call.identity);
  if (joined.created) {
    counters_.jobs.fetch_add(1, std::memory_order_relaxed);
    std::shared_ptr<Job> job = joined.job;
    absl::Status queued = pool_->Submit(
        Priority::kTuning, call.client, [this, job, call] { Run(job, call); },
        [job] { job->Fail(absl::CancelledError("the daemon shut down before the tune ran")); },
        static_cast<int64_t>(call.request.SpaceUsedLong())); // queue.max_bytes
    if (!queued.ok()) {
      job->Fail(queued);
      return queued;
    }
  }
  return joined.job;
}

absl::StatusOr<kiln::v1::TuneResult> TuneService::TuneSync(const TuneCall& call) {
  absl::StatusOr<std::shared_ptr<Job>> job = Start(call);
  if (!job.ok()) return job.status();
  (*job)->WaitDone(absl::InfiniteFuture());
  if (const TuneJobResult* r = (*job)->result<TuneJobResult>()) return r->result;
  return (*job)->status();
}

void TuneService::Run(const std::shared_ptr<Job>& job, const TuneCall& call) {
  if (!job->Start("planning")) return;
  absl::StatusOr<kiln::v1::TuneResult> result = RunSweep(job, call);
  if (result.ok()) {
    const bool found = result->has_best();
    const size_t bytes = result->SpaceUsedLong(); // JobManager's memory bound counts it
    job->Succeed(TuneJobResult{*std::move(result)},
                 found ? "tuned" : "tuned: no candidate was valid", bytes);
  } else if (job->cancel_requested()) {
    job->Fail(absl::CancelledError(absl::StrCat("cancelled: ", result.status().message())));
  } else {
    job->Fail(result.status());
  }
}

absl::StatusOr<std::vector<std::string>>
TuneService::ReferenceOutputs(const std::shared_ptr<Job>& job, const TuneCall& call,
                              const std::string& device_id) {
  const kiln::v1::TuneRequest& r = call.request;
  const std::string target = r.target().empty() ? "cpu" : r.target();
  absl::StatusOr<driver::ProgramInput> program =
      ProgramFromProto(r.validation().reference_program(), {});
  if (!program.ok()) return program.status();
  CompileCall compile;
  compile.program = *std::move(program);
  compile.options = OptionsFromProto(target, r.options());
  compile.client = call.client;
  compile.identity = call.identity;
  compile.priority = Priority::kTuning;
  // As CompileSync, but the job's cancellation stops the compile (its
  // compile-time evaluation included) instead of waiting for it.
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
    std::stop_callback on_cancel(job->stop_token(), [&pending] { pending->Cancel(); });
    slot->done.WaitForNotification();
  }
  absl::StatusOr<CompileReply> built = std::move(slot->reply);
  if (!built.ok()) return built.status();
  const kiln::v1::ArtifactMetadata& meta = built->metadata;
  std::map<std::string, kiln::v1::BindingValue> values;
  for (const auto& [k, v] : r.validation().reference_program().bindings()) values[k] = v;
  absl::StatusOr<kiln::v1::LaunchSpec> launch =
      MakeLaunchPlan(meta.launch(), values, SweepPlanOptions(r, meta.key()));
  if (!launch.ok()) return launch.status();
  absl::StatusOr<kiln::v1::WorkerRequest> load = LoadRequestFor(*store_, meta);
  if (!load.ok()) return load.status();
  absl::StatusOr<DeviceLease> lease =
      devices_->Acquire(device_id, absl::ZeroDuration(), job->stop_token());
  if (!lease.ok()) return lease.status();
  absl::StatusOr<kiln::v1::WorkerResponse> loaded =
      lease->Call(*load, absl::ZeroDuration(), job->stop_token());
  if (!loaded.ok()) return loaded.status();
  kiln::v1::WorkerRequest run;
  *run.mutable_run()->mutable_launch() = *std::move(launch);
  run.mutable_run()->set_return_outputs(true);
  absl::StatusOr<kiln::v1::WorkerResponse> ran =
      lease->Call(run, absl::ZeroDuration(), job->stop_token());
  if (!ran.ok()) return ran.status();
  kiln::v1::WorkerRequest unload;
  unload.mutable_unload()->set_module_id(meta.key());
  (void)lease->Call(unload);
  return std::vector<std::string>(ran->run().outputs().begin(), ran->run().outputs().end());
}

absl::StatusOr<kiln::v1::TuneResult> TuneService::RunSweep(const std::shared_ptr<Job>& job,
                                                           const TuneCall& call) {
  const kiln::v1::TuneRequest& r = call.request;
  const std::string target = r.target().empty() ? "cpu" : r.target();
  const absl::Time start = absl::Now();
  const absl::Time deadline = r.budget().max_seconds() > 0
                                  ? start + absl::Seconds(r.budget().max_seconds())
                                  : absl::InfiniteFuture();

  // 1. Devices: those of one model that run the target.
  absl::StatusOr<std::vector<kiln::v1::Device>> chosen =
      SweepDevices(devices_->Devices(), target, r.devices());
  if (!chosen.ok()) return chosen.status();
  const std::vector<kiln::v1::Device> devices = *std::move(chosen);
  const std::string model = devices[0].model();
  const cache::BestConfigKey best_key = BestKeyFor(r.program(), target, model, r.options());
  const std::string label = TuneSeriesKey(best_key);

  // The evaluations this function runs itself (planning, the inputs'
  // launch): the daemon's budget, the job's cancellation, the tune's time.
  frontend::EvalLimits limits = compile_->eval_limits();
  limits.cancelled = job->cancel_flag();
  limits.deadline = std::min(limits.deadline, deadline);

  // 2. Candidates, and what the history already knows.
  absl::StatusOr<std::vector<TuneCandidate>> planned = planner_(r, devices[0], limits);
  if (!planned.ok()) return planned.status();
  std::vector<TuneCandidate> candidates = *std::move(planned);
  if (r.budget().max_candidates() > 0 &&
      candidates.size() > static_cast<size_t>(r.budget().max_candidates())) {
    candidates.resize(static_cast<size_t>(r.budget().max_candidates()));
  }
  if (candidates.empty()) return absl::FailedPreconditionError("the planner proposed nothing");
  std::map<std::string, cache::Measurement> known;
  if (history_ != nullptr && !r.remeasure()) {
    cache::MeasurementQuery q;
    q.label = label;
    q.device_model = model;
    q.limit = 0;
    absl::StatusOr<std::vector<cache::Measurement>> past = history_->QueryMeasurements(q);
    if (past.ok()) {
      for (cache::Measurement& m : *past) known.emplace(m.config_json, std::move(m)); // newest wins
    }
  }

  auto sweep = std::make_shared<Sweep>();
  sweep->items.resize(candidates.size());
  sweep->progress.set_candidates_total(static_cast<int32_t>(candidates.size()));
  std::vector<size_t> to_compile;
  for (size_t i = 0; i < candidates.size(); ++i) {
    Sweep::Item& item = sweep->items[i];
    item.candidate = std::move(candidates[i]);
    kiln::v1::Measurement& m = item.measurement;
    for (const auto& [k, v] : item.candidate.config) (*m.mutable_config())[k] = v;
    m.set_device_model(model);
    m.set_predicted_us(item.candidate.predicted_us);
    auto it = known.find(ConfigToJson(item.candidate.config));
    if (it != known.end()) {
      const cache::Measurement& past = it->second;
      m.set_status(StatusFromName(past.failure));
      m.set_key(past.key);
      m.set_device_id(past.device_id);
      m.set_median_us(past.latency.median_us);
      m.set_mean_us(past.latency.mean_us);
      m.set_stddev_us(past.latency.stddev_us);
      m.set_min_us(past.latency.min_us);
      m.set_samples(static_cast<int32_t>(past.latency.samples));
      m.set_unix_ms(past.time_unix_ms);
      m.set_error(past.failure.empty() ? "" : "measured earlier: " + past.failure);
      item.compiled = item.finished = true;
      counters_.reused.fetch_add(1, std::memory_order_relaxed);
      sweep->progress.set_candidates_compiled(sweep->progress.candidates_compiled() + 1);
      if (m.status() == kiln::v1::Measurement::STATUS_OK) {
        sweep->progress.set_candidates_measured(sweep->progress.candidates_measured() + 1);
        if (!sweep->best || Better(m, *sweep->best)) sweep->best = m;
      } else {
        sweep->progress.set_candidates_failed(sweep->progress.candidates_failed() + 1);
      }
    } else {
      to_compile.push_back(i);
    }
  }

  auto publish = [&job, sweep, start](const kiln::v1::Measurement* latest) {
    // Called with sweep->mu held.
    kiln::v1::TuneProgress& p = sweep->progress;
    p.set_elapsed_seconds(absl::ToDoubleSeconds(absl::Now() - start));
    if (latest != nullptr) *p.mutable_latest() = *latest;
    if (sweep->best) *p.mutable_best_so_far() = *sweep->best;
    job->SetTuneProgress(p);
    const double total = std::max(1, p.candidates_total());
    job->SetProgress((p.candidates_measured() + p.candidates_failed()) / total,
                     absl::StrCat(p.candidates_compiled(), "/", p.candidates_total(), " compiled, ",
                                  p.candidates_measured(), " measured, ", p.candidates_failed(),
                                  " failed"));
  };
  auto record = [this, &label, &target](const Sweep::Item& item) {
    if (history_ == nullptr) return;
    cache::Measurement rec;
    rec.key = item.measurement.key().empty() ? label : item.measurement.key();
    rec.config_json = ConfigToJson(item.candidate.config);
    rec.target = target;
    rec.device_model = item.measurement.device_model();
    rec.device_id = item.measurement.device_id();
    rec.latency.median_us = item.measurement.median_us();
    rec.latency.mean_us = item.measurement.mean_us();
    rec.latency.stddev_us = item.measurement.stddev_us();
    rec.latency.min_us = item.measurement.min_us();
    rec.latency.samples = item.measurement.samples();
    rec.failure = StatusName(item.measurement.status());
    rec.label = label;
    if (absl::StatusOr<int64_t> id = history_->RecordMeasurement(rec); !id.ok()) {
      util::LogWarning("could not record a tuning measurement", {{"error", id.status().message()}});
    }
  };
  // A final failure of item i (with the lock held).
  auto fail = [&](size_t i, Status status, const std::string& error) {
    Sweep::Item& item = sweep->items[i];
    item.measurement.set_status(status);
    item.measurement.set_error(error);
    item.measurement.set_unix_ms(absl::ToUnixMillis(absl::Now()));
    item.finished = true;
    sweep->progress.set_candidates_failed(sweep->progress.candidates_failed() + 1);
    counters_.failed.fetch_add(1, std::memory_order_relaxed);
    record(item);
    publish(&item.measurement);
  };
  // A final success of item i, measured on `device_id` (with the lock held).
  auto complete = [&](size_t i, const std::vector<double>& samples, const std::string& device_id) {
    Sweep::Item& item = sweep->items[i];
    FillLatency(Summarize(samples), &item.measurement);
    item.measurement.set_status(kiln::v1::Measurement::STATUS_OK);
    item.measurement.set_device_id(device_id);
    item.measurement.set_unix_ms(absl::ToUnixMillis(absl::Now()));
    item.finished = true;
    sweep->progress.set_candidates_measured(sweep->progress.candidates_measured() + 1);
    counters_.measured.fetch_add(1, std::memory_order_relaxed);
    if (!sweep->best || Better(item.measurement, *sweep->best)) sweep->best = item.measurement;
    record(item);
    publish(&item.measurement);
    sweep->changed.notify_all();
  };
  // A candidate matched the reference: the reference candidate's measurement
  // counts (with the lock held).
  auto confirm_reference = [&] {
    if (sweep->reference_confirmed) return;
    sweep->reference_confirmed = true;
    if (sweep->reference_item && sweep->reference_samples &&
        !sweep->items[*sweep->reference_item].finished) {
      complete(*sweep->reference_item, *sweep->reference_samples, sweep->reference_device);
    }
  };

  // 3. The compiles, a pool's worth at a time: the pool's threads build them
  // in parallel, and each one that finishes lets the next one in.
  {
    std::lock_guard<std::mutex> lock(sweep->mu);
    sweep->compiles_outstanding = static_cast<int>(to_compile.size());
    sweep->unsubmitted.assign(to_compile.begin(), to_compile.end());
    publish(nullptr);
  }
  // Runs on this thread and from compile callbacks (never with sweep->mu
  // held); a callback that runs inside Start (a hit) leaves the loop to the
  // caller instead of nesting.
  std::function<void()> submit_more;
  submit_more = [&, sweep] {
    if (t_submitting) return;
    t_submitting = true;
    for (;;) {
      size_t i = 0;
      {
        std::lock_guard<std::mutex> lock(sweep->mu);
        if (job->cancel_requested() || sweep->stopping || sweep->unsubmitted.empty() ||
            sweep->in_flight >= kMaxCompilesInFlight) {
          break;
        }
        i = sweep->unsubmitted.front();
        sweep->unsubmitted.pop_front();
        ++sweep->in_flight;
      }
      google::protobuf::Map<std::string, kiln::v1::BindingValue> config;
      for (const auto& [k, v] : sweep->items[i].candidate.config) config[k] = v;
      CompileCall compile;
      compile.options = OptionsFromProto(target, r.options());
      absl::StatusOr<driver::ProgramInput> program = ProgramFromProto(r.program(), config);
      if (program.ok()) {
        if (absl::Status s = AddKnobs(r.program(), config, &compile.options); !s.ok()) program = s;
      }
      if (!program.ok()) {
        std::lock_guard<std::mutex> lock(sweep->mu);
        sweep->items[i].compiled = true;
        --sweep->compiles_outstanding;
        --sweep->in_flight;
        fail(i, kiln::v1::Measurement::STATUS_COMPILE_ERROR,
             absl::StrCat(program.status().message()));
        sweep->changed.notify_all();
        continue;
      }
      compile.program = *std::move(program);
      compile.client = call.client;
      compile.identity = call.identity;
      compile.priority = Priority::kTuning;
      std::shared_ptr<CompileService::Pending> pending = compile_->Start(
          compile, [this, sweep, i, &fail, &submit_more](absl::StatusOr<CompileReply> reply) {
            {
              std::lock_guard<std::mutex> lock(sweep->mu);
              Sweep::Item& item = sweep->items[i];
              --sweep->in_flight;
              if (IsQueueFull(reply.status()) && !sweep->stopping) {
                // Turned away by a queue other work filled: not a result of
                // this config; it goes again when a slot frees (the next
                // compile to finish, or the measuring loop's next wake-up),
                // not at once.
                sweep->unsubmitted.push_front(i);
                sweep->turned_away = true;
              } else if (IsQueueFull(reply.status())) {
                item.compiled = true; // the sweep ended first: no result
                --sweep->compiles_outstanding;
              } else {
                item.compiled = true;
                --sweep->compiles_outstanding;
                if (reply.status().code() == absl::StatusCode::kCancelled) {
                  // Stopped by the budget or a cancellation: not a result.
                } else if (reply.ok()) {
                  item.artifact = reply->metadata;
                  item.measurement.set_key(reply->metadata.key());
                  sweep->progress.set_candidates_compiled(sweep->progress.candidates_compiled() +
                                                          1);
                  counters_.compiled.fetch_add(1, std::memory_order_relaxed);
                  sweep->ready.push_back(i);
                } else if (!item.finished) {
                  sweep->progress.set_candidates_compiled(sweep->progress.candidates_compiled() +
                                                          1);
                  fail(i, CompileFailureStatus(reply.status()),
                       absl::StrCat(reply.status().message()));
                }
              }
              ++sweep->callbacks_active;
              sweep->changed.notify_all();
            }
            submit_more();
            std::lock_guard<std::mutex> lock(sweep->mu);
            --sweep->callbacks_active;
            sweep->changed.notify_all();
          });
      std::shared_ptr<CompileService::Pending> late; // started as the sweep stopped
      {
        std::lock_guard<std::mutex> lock(sweep->mu);
        Sweep::Item& item = sweep->items[i];
        if (sweep->stopping && !item.compiled) late = pending;
        item.compile = std::move(pending);
        if (sweep->turned_away) {
          sweep->turned_away = false;
          break;
        }
      }
      if (late) late->Cancel(); // stop_compiles ran before it was noted
    }
    t_submitting = false;
  };
  submit_more();
  // While the first candidates compile, each device's worker makes the
  // generated inputs (hundreds of MiB of random data for large kernels take
  // a second, which the reference run would otherwise wait for).
  std::optional<kiln::v1::LaunchSpec> inputs_launch;
  if (!to_compile.empty()) {
    const absl::Time t0 = absl::Now();
    absl::StatusOr<kiln::v1::LaunchSpec> l =
        InputsLaunch(r, target, sweep->items[to_compile.front()].candidate.config, limits);
    if (l.ok()) {
      inputs_launch = *std::move(l);
    } else {
      util::LogInfo("tune inputs not made ahead",
                    {{"job_id", job->id()}, {"error", l.status().message()}});
    }
    util::LogInfo("tune inputs launch",
                  {{"job_id", job->id()}, {"ms", absl::ToDoubleMilliseconds(absl::Now() - t0)}});
  }
  // Cancellation or the time budget: pending compiles detach.
  auto stop_compiles = [sweep] {
    std::vector<std::shared_ptr<CompileService::Pending>> pending;
    {
      std::lock_guard<std::mutex> lock(sweep->mu);
      sweep->stopping = true;
      for (size_t i : sweep->unsubmitted) {
        sweep->items[i].compiled = true;
        --sweep->compiles_outstanding;
      }
      sweep->unsubmitted.clear();
      for (Sweep::Item& item : sweep->items) {
        if (!item.compiled && item.compile) pending.push_back(item.compile);
      }
    }
    for (auto& p : pending) p->Cancel();
  };
  std::stop_callback on_cancel(job->stop_token(), [&] {
    stop_compiles();
    sweep->changed.notify_all();
  });
  // The compile callbacks refer to this frame (fail, submit_more) and run on
  // pool threads (the prepare pool's, for a program the frontend rejects):
  // whatever way this function returns, it stops the compiles and waits
  // until no callback can still run. A cancelled compile calls back at once;
  // one that started as the sweep stopped is cancelled by its submitter.
  struct SettleCompiles {
    std::function<void()> settle;
    ~SettleCompiles() { settle(); }
  } settle_compiles{[&stop_compiles, sweep] {
    stop_compiles();
    std::unique_lock<std::mutex> lock(sweep->mu);
    sweep->changed.wait(
        lock, [&] { return sweep->compiles_outstanding == 0 && sweep->callbacks_active == 0; });
  }};

  const int warmup = r.budget().warmup() > 0 ? r.budget().warmup() : 3;
  const int repeats = r.budget().repeats() > 0 ? r.budget().repeats() : 20;
  const bool cuda = !IsCpuTarget(target);

  // The launch of a compiled item on the sweep's shape and inputs.
  auto launch_of = [&](const Sweep::Item& item) {
    return MakeLaunchPlan(item.artifact->launch(), SweepValues(r, item.candidate.config),
                          SweepPlanOptions(r, item.artifact->key()));
  };
  // Outputs travel back to kilnd only where another worker may need them.
  const bool return_reference = devices.size() > 1;

  // 4-5. One measuring loop per device.
  auto measure_on = [&, sweep](const kiln::v1::Device& device) {
    std::optional<DeviceLease> lease;
    // Whether this lease's worker was sent the reference outputs (it keeps
    // them under the sweep's reference id; a restarted worker asks again).
    bool reference_sent = false;
    const std::string reference_id = absl::StrCat(job->id(), "/reference");
    if (inputs_launch) {
      absl::StatusOr<DeviceLease> l =
          devices_->Acquire(device.id(), absl::ZeroDuration(), job->stop_token());
      if (l.ok()) {
        lease = *std::move(l);
        kiln::v1::WorkerRequest prepare;
        *prepare.mutable_prepare_inputs()->mutable_launch() = *inputs_launch;
        absl::StatusOr<kiln::v1::WorkerResponse> prepared =
            lease->Call(prepare, absl::ZeroDuration(), job->stop_token());
        if (!prepared.ok()) {
          util::LogInfo("tune inputs not made ahead", {{"job_id", job->id()},
                                                       {"device", device.id()},
                                                       {"error", prepared.status().message()}});
          if (EndsLease(prepared.status())) lease.reset();
        }
      }
    }
    // The reference travels once per worker; later candidates name it.
    auto validate_call = [&](const kiln::v1::LaunchSpec& launch, bool with_reference) {
      kiln::v1::WorkerRequest validate;
      kiln::v1::ValidateRequest* v = validate.mutable_validate();
      *v->mutable_launch() = launch;
      v->set_reference_id(reference_id);
      if (with_reference) {
        std::lock_guard<std::mutex> lock(sweep->mu);
        for (const std::string& out : sweep->reference_outputs) v->add_reference_outputs(out);
      }
      v->set_rtol(r.validation().rtol());
      v->set_atol(r.validation().atol());
      return lease->Call(validate, absl::ZeroDuration(), job->stop_token());
    };
    // A worker that does not keep the reference (a restarted one) runs the
    // reference candidate again and keeps its outputs; `loaded_key` is the
    // module loaded for the candidate being validated, which stays loaded.
    auto remake_reference = [&](const std::string& loaded_key) -> absl::Status {
      std::optional<size_t> ref;
      {
        std::lock_guard<std::mutex> lock(sweep->mu);
        ref = sweep->reference_item;
      }
      if (!ref) return absl::InternalError("the sweep has no reference to make again");
      const Sweep::Item& source = sweep->items[*ref];
      absl::StatusOr<kiln::v1::LaunchSpec> ref_launch = launch_of(source);
      if (!ref_launch.ok()) return ref_launch.status();
      absl::StatusOr<kiln::v1::WorkerRequest> ref_load = LoadRequestFor(*store_, *source.artifact);
      if (!ref_load.ok()) return ref_load.status();
      absl::StatusOr<kiln::v1::WorkerResponse> ref_loaded =
          lease->Call(*ref_load, absl::ZeroDuration(), job->stop_token());
      if (!ref_loaded.ok()) return ref_loaded.status();
      kiln::v1::WorkerRequest again;
      *again.mutable_run()->mutable_launch() = *std::move(ref_launch);
      again.mutable_run()->set_keep_outputs_as(reference_id);
      absl::StatusOr<kiln::v1::WorkerResponse> ran_again =
          lease->Call(again, absl::ZeroDuration(), job->stop_token());
      if (source.artifact->key() != loaded_key) {
        kiln::v1::WorkerRequest unload;
        unload.mutable_unload()->set_module_id(source.artifact->key());
        (void)lease->Call(unload);
      }
      util::LogInfo("tune reference made again",
                    {{"job_id", job->id()}, {"device", device.id()}, {"ok", ran_again.ok()}});
      return ran_again.status();
    };
    // Compares a loaded candidate's outputs with the reference: by its id,
    // or where this worker lacks it, with kilnd's copy or the reference
    // candidate run again.
    auto validate = [&](const kiln::v1::LaunchSpec& launch,
                        const std::string& loaded_key) -> absl::StatusOr<kiln::v1::WorkerResponse> {
      absl::StatusOr<kiln::v1::WorkerResponse> checked = validate_call(launch, !reference_sent);
      if (!checked.ok() &&
          WorkerCodeOf(checked.status()) == kiln::v1::WorkerError::CODE_REFERENCE_MISSING) {
        bool kilnd_has_copy = false;
        {
          std::lock_guard<std::mutex> lock(sweep->mu);
          kilnd_has_copy = !sweep->reference_outputs.empty();
        }
        if (kilnd_has_copy) {
          checked = validate_call(launch, true);
        } else if (absl::Status remade = remake_reference(loaded_key); remade.ok()) {
          checked = validate_call(launch, false);
        } else {
          checked = remade; // its worker error kind intact (a lost worker ends the lease)
        }
      }
      if (checked.ok()) {
        reference_sent = true;
        counters_.validated.fetch_add(1, std::memory_order_relaxed);
      }
      return checked;
    };
    for (;;) {
      size_t i = 0;
      {
        // Devices other than the first wait for the reference it makes.
        const bool first = device.id() == devices[0].id();
        std::unique_lock<std::mutex> lock(sweep->mu);
        auto runnable = [&] {
          return job->cancel_requested() || absl::Now() > deadline ||
                 (!sweep->ready.empty() && (sweep->have_reference || first)) ||
                 (sweep->ready.empty() && sweep->compiles_outstanding == 0);
        };
        while (!runnable()) {
          sweep->changed.wait_for(lock, std::chrono::milliseconds(100));
          if (!sweep->unsubmitted.empty() && sweep->in_flight == 0) {
            // Every compile was turned away by a full queue: try again.
            lock.unlock();
            submit_more();
            lock.lock();
          }
        }
        if (job->cancel_requested()) return;
        if (absl::Now() > deadline || sweep->ready.empty()) break; // spent, or all taken
        i = sweep->ready.front();
        sweep->ready.pop_front();
      }
      Sweep::Item& item = sweep->items[i];
      const kiln::v1::ArtifactMetadata& meta = *item.artifact;
      auto failed = [&](Status s, const std::string& error) {
        std::lock_guard<std::mutex> lock(sweep->mu);
        item.measurement.set_device_id(device.id());
        fail(i, s, error);
        sweep->changed.notify_all();
      };
      absl::StatusOr<kiln::v1::LaunchSpec> launch = launch_of(item);
      if (!launch.ok()) {
        failed(kiln::v1::Measurement::STATUS_LAUNCH_ERROR, absl::StrCat(launch.status().message()));
        continue;
      }
      absl::StatusOr<kiln::v1::WorkerRequest> load = LoadRequestFor(*store_, meta);
      if (!load.ok()) {
        failed(kiln::v1::Measurement::STATUS_COMPILE_ERROR, absl::StrCat(load.status().message()));
        continue;
      }
      if (!lease) {
        absl::StatusOr<DeviceLease> l =
            devices_->Acquire(device.id(), absl::ZeroDuration(), job->stop_token());
        if (!l.ok()) {
          failed(kiln::v1::Measurement::STATUS_UNSPECIFIED, absl::StrCat(l.status().message()));
          if (job->cancel_requested()) return;
          continue;
        }
        lease = *std::move(l);
      }
      // A failure that took the worker down ends this lease: the next
      // candidate acquires the restarted worker.
      auto worker_failed = [&](const absl::Status& s) {
        failed(FailedCallStatus(s), absl::StrCat(s.message()));
        if (EndsLease(s)) {
          lease.reset();
          reference_sent = false;
        }
      };
      absl::StatusOr<kiln::v1::WorkerResponse> loaded =
          lease->Call(*load, absl::ZeroDuration(), job->stop_token());
      if (!loaded.ok()) {
        worker_failed(loaded.status());
        continue;
      }
      bool need_reference = false;
      {
        std::lock_guard<std::mutex> lock(sweep->mu);
        need_reference = !sweep->have_reference;
      }
      if (need_reference) {
        kiln::v1::WorkerRequest run;
        *run.mutable_run()->mutable_launch() = *launch;
        // This worker keeps the outputs, so its validations need not be sent
        // them; kilnd gets a copy only for other devices' workers (a
        // restarted worker makes them again, below).
        run.mutable_run()->set_return_outputs(return_reference);
        run.mutable_run()->set_keep_outputs_as(reference_id);
        absl::StatusOr<kiln::v1::WorkerResponse> ran =
            lease->Call(run, absl::ZeroDuration(), job->stop_token());
        if (!ran.ok()) {
          worker_failed(ran.status());
          continue;
        }
        reference_sent = true;
        std::lock_guard<std::mutex> lock(sweep->mu);
        sweep->reference_outputs.assign(ran->run().outputs().begin(), ran->run().outputs().end());
        sweep->have_reference = true;
        sweep->reference_item = i;
        sweep->reference_device = device.id();
        sweep->changed.notify_all();
        util::LogInfo("tune reference",
                      {{"job_id", job->id()}, {"config", ConfigText(item.candidate.config)}});
      } else {
        absl::StatusOr<kiln::v1::WorkerResponse> checked = validate(*launch, meta.key());
        if (!checked.ok()) {
          worker_failed(checked.status());
          continue;
        }
        item.measurement.set_max_abs_error(checked->validate().max_abs_error());
        if (!checked->validate().ok()) {
          failed(kiln::v1::Measurement::STATUS_WRONG_RESULT,
                 absl::StrCat(checked->validate().mismatches(),
                              " mismatches against the reference; "
                              "first ",
                              checked->validate().first_mismatch()));
          continue;
        }
        std::lock_guard<std::mutex> lock(sweep->mu);
        confirm_reference();
      }
      // A first sample sizes the run: CUDA graphs under 1 ms (one timing
      // mode for every short kernel: a switch at ~20 us put configs of one
      // sweep on either side of a 3 us launch gap), fewer
      // repeats past 10 ms.
      kiln::v1::WorkerRequest probe;
      *probe.mutable_measure()->mutable_launch() = *launch;
      probe.mutable_measure()->set_warmup(1);
      probe.mutable_measure()->set_repeats(1);
      absl::StatusOr<kiln::v1::WorkerResponse> probed =
          lease->Call(probe, absl::ZeroDuration(), job->stop_token());
      if (!probed.ok() || probed->measure().samples_us().empty()) {
        worker_failed(probed.ok() ? absl::InternalError("no sample") : probed.status());
        continue;
      }
      const double first_us = probed->measure().samples_us(0);
      kiln::v1::WorkerRequest measure;
      kiln::v1::MeasureRequest* mr = measure.mutable_measure();
      *mr->mutable_launch() = *std::move(launch);
      mr->set_warmup(warmup);
      // Past 10 ms a sample, about 2 s of samples (at least 5) will do.
      mr->set_repeats(first_us > 10000
                          ? std::min(repeats, std::max(5, static_cast<int>(2e6 / first_us)))
                          : repeats);
      mr->set_flush_l2(cuda);
      mr->set_use_cuda_graph(cuda && first_us < 1000);
      absl::StatusOr<kiln::v1::WorkerResponse> measured =
          lease->Call(measure, absl::ZeroDuration(), job->stop_token());
      if (!measured.ok()) {
        worker_failed(measured.status());
        continue;
      }
      kiln::v1::WorkerRequest unload;
      unload.mutable_unload()->set_module_id(meta.key());
      (void)lease->Call(unload);
      std::vector<double> samples(measured->measure().samples_us().begin(),
                                  measured->measure().samples_us().end());
      std::lock_guard<std::mutex> lock(sweep->mu);
      if (need_reference && !sweep->reference_confirmed) {
        sweep->reference_samples = std::move(samples); // counts once confirmed
        continue;
      }
      complete(i, samples, device.id());
    }
    if (job->cancel_requested()) return;
    // No other candidate matched the reference candidate (all failed, or
    // there was no other): the device that made it compares it with a second
    // run of itself, which catches a nondeterministic reference.
    size_t ref = 0;
    {
      std::lock_guard<std::mutex> lock(sweep->mu);
      if (!sweep->reference_item || !sweep->reference_samples || sweep->reference_confirmed ||
          sweep->reference_device != device.id() || sweep->items[*sweep->reference_item].finished) {
        return;
      }
      ref = *sweep->reference_item;
    }
    Sweep::Item& item = sweep->items[ref];
    absl::StatusOr<kiln::v1::WorkerResponse> checked =
        [&]() -> absl::StatusOr<kiln::v1::WorkerResponse> {
      absl::StatusOr<kiln::v1::LaunchSpec> launch = launch_of(item);
      if (!launch.ok()) return launch.status();
      absl::StatusOr<kiln::v1::WorkerRequest> load = LoadRequestFor(*store_, *item.artifact);
      if (!load.ok()) return load.status();
      if (!lease) {
        absl::StatusOr<DeviceLease> l =
            devices_->Acquire(device.id(), absl::ZeroDuration(), job->stop_token());
        if (!l.ok()) return l.status();
        lease = *std::move(l);
        reference_sent = false;
      }
      absl::StatusOr<kiln::v1::WorkerResponse> loaded =
          lease->Call(*load, absl::ZeroDuration(), job->stop_token());
      if (!loaded.ok()) return loaded.status();
      absl::StatusOr<kiln::v1::WorkerResponse> v = validate(*launch, item.artifact->key());
      kiln::v1::WorkerRequest unload;
      unload.mutable_unload()->set_module_id(item.artifact->key());
      (void)lease->Call(unload);
      return v;
    }();
    counters_.reference_self_checks.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(sweep->mu);
    util::LogInfo("tune reference checked against its own run",
                  {{"job_id", job->id()},
                   {"ok", checked.ok() && checked->validate().ok()},
                   {"config", ConfigText(item.candidate.config)}});
    if (item.finished) return;
    item.measurement.set_device_id(device.id());
    if (!checked.ok()) {
      fail(ref, FailedCallStatus(checked.status()), absl::StrCat(checked.status().message()));
    } else {
      item.measurement.set_max_abs_error(checked->validate().max_abs_error());
      if (!checked->validate().ok()) {
        fail(ref, kiln::v1::Measurement::STATUS_WRONG_RESULT,
             absl::StrCat(checked->validate().mismatches(),
                          " mismatches between two runs of the reference candidate; first ",
                          checked->validate().first_mismatch()));
      } else {
        sweep->reference_confirmed = true;
        complete(ref, *sweep->reference_samples, device.id());
      }
    }
    sweep->changed.notify_all();
  };
  // A reference program, when the request names one, makes the reference
  // before any candidate runs.
  if (r.validation().has_reference_program()) {
    job->SetProgress(0, "running the reference program");
    absl::StatusOr<std::vector<std::string>> reference =
        ReferenceOutputs(job, call, devices[0].id());
    if (!reference.ok()) {
      stop_compiles();
      return absl::Status(reference.status().code(), absl::StrCat("validation.reference_program: ",
                                                                  reference.status().message()));
    }
    std::lock_guard<std::mutex> lock(sweep->mu);
    sweep->reference_outputs = *std::move(reference);
    sweep->have_reference = true;
  }
  std::vector<std::thread> others;
  for (size_t d = 1; d < devices.size(); ++d) {
    others.emplace_back([&measure_on, &devices, d] { measure_on(devices[d]); });
  }
  measure_on(devices[0]);
  for (std::thread& t : others) t.join();
  // Compiles that were cancelled finish their callbacks before we read.
  settle_compiles.settle();
  if (job->cancel_requested()) return absl::CancelledError("the tune was cancelled");

  // 6. The best, the result.
  kiln::v1::TuneResult result;
  std::lock_guard<std::mutex> lock(sweep->mu);
  int skipped = 0;
  for (const Sweep::Item& item : sweep->items) {
    if (!item.finished) {
      ++skipped;
      continue;
    }
    *result.add_measurements() = item.measurement;
  }
  if (sweep->best) {
    *result.mutable_best() = *sweep->best;
    for (const Sweep::Item& item : sweep->items) {
      if (item.artifact && item.artifact->key() == sweep->best->key()) {
        *result.mutable_best_artifact() = *item.artifact;
      }
    }
    if (history_ != nullptr) {
      cache::BestConfig best;
      ConfigMap config(sweep->best->config().begin(), sweep->best->config().end());
      best.config_json = ConfigToJson(config);
      best.latency.median_us = sweep->best->median_us();
      best.latency.mean_us = sweep->best->mean_us();
      best.latency.min_us = sweep->best->min_us();
      best.latency.stddev_us = sweep->best->stddev_us();
      best.latency.samples = sweep->best->samples();
      best.tuning_record_id = job->id();
      best.artifact_key = sweep->best->key();
      absl::StatusOr<bool> stored =
          history_->PutBest(best_key, best, cache::Cache::BestUpdate::kIfFaster);
      if (!stored.ok()) {
        util::LogWarning("could not store the best config", {{"error", stored.status().message()}});
      }
    }
  }
  util::LogInfo("tuned", {{"job_id", job->id()},
                          {"candidates", static_cast<int64_t>(sweep->items.size())},
                          {"measured", sweep->progress.candidates_measured()},
                          {"failed", sweep->progress.candidates_failed()},
                          {"skipped", skipped},
                          {"best_us", sweep->best ? sweep->best->median_us() : 0.0},
                          {"seconds", absl::ToDoubleSeconds(absl::Now() - start)}});
  publish(nullptr);
  return result;
}

} // namespace kiln::server
