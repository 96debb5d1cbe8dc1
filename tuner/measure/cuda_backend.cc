#include "tuner/measure/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "tuner/measure/kernel_launch.h"
#include "util/statistics.h"

namespace kiln::measure {
namespace {

namespace pb = kiln::v1;

// CUdevice_attribute values (cuda.h).
constexpr int kAttrMaxThreadsPerBlock = 1;
constexpr int kAttrWarpSize = 10;
constexpr int kAttrMaxRegistersPerBlock = 12;
constexpr int kAttrClockRateKhz = 13;
constexpr int kAttrMemoryClockRateKhz = 36;
constexpr int kAttrGlobalMemoryBusWidth = 37;
constexpr int kAttrL2CacheSize = 38;
constexpr int kAttrMaxThreadsPerMultiprocessor = 39;
constexpr int kAttrMaxSharedPerMultiprocessor = 81;
constexpr int kAttrMaxRegistersPerMultiprocessor = 82;
// CUfunction_attribute values.
constexpr int kFuncMaxThreadsPerBlock = 0;
constexpr int kFuncSharedSizeBytes = 1;
constexpr int kFuncNumRegs = 4;

// A fault that poisons the context is the kernel's failure, whichever call
// noticed it.
absl::Status Classify(absl::Status status) {
  if (status.ok() || !IsContextFatal(status)) return status;
  return MarkLaunchFailure(std::move(status));
}

// The launch's tensor maps (by parameter name) as kernel_spec.h's specs (by
// argument index).
absl::StatusOr<std::vector<codegen::TensorMapSpec>>
TensorMapsOf(const pb::LaunchSpec& launch,
             const google::protobuf::RepeatedPtrField<pb::TensorMap>& tensor_maps) {
  std::vector<codegen::TensorMapSpec> maps;
  for (const pb::TensorMap& m : tensor_maps) {
    codegen::TensorMapSpec spec;
    spec.arg = -1;
    for (int i = 0; i < launch.args_size(); ++i) {
      if (launch.args(i).name() == m.param()) {
        spec.arg = i;
        break;
      }
    }
    if (spec.arg < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor map for '", m.param(), "': the launch has no such argument"));
    }
    spec.box.assign(m.box().begin(), m.box().end());
    spec.swizzle_bytes = m.swizzle_bytes();
    maps.push_back(std::move(spec));
  }
  return maps;
}

} // namespace

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Open(int ordinal,
                                                               const std::string& library) {
  absl::StatusOr<std::shared_ptr<CudaDriver>> driver = CudaDriver::Load(library);
  if (!driver.ok()) return driver.status();
  absl::StatusOr<std::shared_ptr<Device>> device = Device::Open(*driver, ordinal);
  if (!device.ok()) return device.status();
  absl::StatusOr<Stream> stream = Stream::Create(*device);
  if (!stream.ok()) return stream.status();
  absl::StatusOr<int64_t> total = (*device)->TotalMemoryBytes();
  const size_t resident_limit =
      total.ok()
          ? std::min(kResidentBytesLimit, static_cast<size_t>(std::max<int64_t>(*total, 0) / 8))
          : size_t{1} << 30;
  return std::unique_ptr<CudaBackend>(
      new CudaBackend(*std::move(device), *std::move(stream), resident_limit));
}

absl::StatusOr<pb::DescribeDeviceResponse> CudaBackend::Describe() {
  const DeviceProperties& props = device_->properties();
  pb::DescribeDeviceResponse out;
  pb::Device* d = out.mutable_device();
  d->set_id(absl::StrCat("cuda:", props.ordinal));
  d->set_model(props.name);
  d->set_arch(props.arch());
  d->set_sm_count(props.multiprocessors);
  d->set_shared_memory_per_block(props.max_shared_per_block);
  d->set_shared_memory_per_block_optin(props.max_shared_per_block_optin);
  d->set_worker_state("running");
  absl::StatusOr<int64_t> memory = device_->TotalMemoryBytes();
  if (!memory.ok()) return Classify(memory.status());
  d->set_memory_bytes(*memory);

  struct Attr {
    int attribute;
    int* out;
  };
  int max_threads = 0, warp = 0, regs_block = 0, clock_khz = 0, mem_clock_khz = 0, bus = 0, l2 = 0,
      threads_sm = 0, smem_sm = 0, regs_sm = 0;
  for (const Attr& a :
       {Attr{kAttrMaxThreadsPerBlock, &max_threads}, Attr{kAttrWarpSize, &warp},
        Attr{kAttrMaxRegistersPerBlock, &regs_block}, Attr{kAttrClockRateKhz, &clock_khz},
        Attr{kAttrMemoryClockRateKhz, &mem_clock_khz}, Attr{kAttrGlobalMemoryBusWidth, &bus},
        Attr{kAttrL2CacheSize, &l2}, Attr{kAttrMaxThreadsPerMultiprocessor, &threads_sm},
        Attr{kAttrMaxSharedPerMultiprocessor, &smem_sm},
        Attr{kAttrMaxRegistersPerMultiprocessor, &regs_sm}}) {
    absl::StatusOr<int> v = device_->Attribute(a.attribute);
    if (!v.ok()) return Classify(v.status());
    *a.out = *v;
  }
  d->set_max_threads_per_block(max_threads);
  d->set_clock_mhz(clock_khz / 1000);
  d->set_l2_bytes(l2);
  const int version = device_->driver().version();
  out.set_driver_version(absl::StrCat(version / 1000, ".", version % 1000 / 10));
  out.set_compute_capability_major(props.cc_major);
  out.set_compute_capability_minor(props.cc_minor);
  out.set_regs_per_block(regs_block);
  out.set_regs_per_sm(regs_sm);
  out.set_shared_memory_per_sm(smem_sm);
  out.set_max_threads_per_sm(threads_sm);
  out.set_warp_size(warp);
  out.set_memory_clock_mhz(mem_clock_khz / 1000);
  out.set_memory_bus_width(bus);
  return out;
}

absl::StatusOr<pb::LoadModuleResponse> CudaBackend::Load(const pb::LoadModuleRequest& request) {
  if (request.module_id().empty()) return absl::InvalidArgumentError("LoadModule: no module_id");
  if (request.kernel_symbol().empty()) {
    return absl::InvalidArgumentError("LoadModule: no kernel_symbol");
  }
  if (request.dynamic_shared_bytes() < 0) {
    return absl::InvalidArgumentError("LoadModule: negative dynamic_shared_bytes");
  }
  absl::StatusOr<Module> module = Module::Load(device_, request.image());
  if (!module.ok()) return Classify(module.status());
  absl::StatusOr<Function> function = module->GetFunction(request.kernel_symbol());
  if (!function.ok()) return Classify(function.status());
  pb::LoadModuleResponse out;
  out.set_module_id(request.module_id());
  absl::StatusOr<int> regs = FunctionAttribute(*function, kFuncNumRegs);
  absl::StatusOr<int> smem = FunctionAttribute(*function, kFuncSharedSizeBytes);
  absl::StatusOr<int> threads = FunctionAttribute(*function, kFuncMaxThreadsPerBlock);
  for (const absl::StatusOr<int>* v : {&regs, &smem, &threads}) {
    if (!v->ok()) return Classify(v->status());
  }
  out.set_registers_per_thread(*regs);
  out.set_static_shared_bytes(*smem);
  out.set_max_threads_per_block(*threads);
  if (request.next_kernel_symbols_size() != request.next_dynamic_shared_bytes_size()) {
    return absl::InvalidArgumentError(
        "LoadModule: next_kernel_symbols and next_dynamic_shared_bytes differ in length");
  }
  std::vector<std::pair<Function, int64_t>> next;
  for (int k = 0; k < request.next_kernel_symbols_size(); ++k) {
    absl::StatusOr<Function> f = module->GetFunction(request.next_kernel_symbols(k));
    if (!f.ok()) return Classify(f.status());
    if (request.next_dynamic_shared_bytes(k) < 0) {
      return absl::InvalidArgumentError("LoadModule: negative next_dynamic_shared_bytes");
    }
    next.emplace_back(*f, request.next_dynamic_shared_bytes(k));
  }
  auto loaded = std::make_unique<LoadedModule>(
      LoadedModule{*std::move(module), *function, request.dynamic_shared_bytes(), std::move(next)});
  modules_[request.module_id()] = std::move(loaded);
  return out;
}

absl::Status CudaBackend::Unload(const std::string& module_id) {
  if (modules_.erase(module_id) == 0) {
    return absl::NotFoundError(absl::StrCat("no module '", module_id, "' is loaded"));
  }
  return absl::OkStatus();
}

absl::StatusOr<CudaBackend::Prepared> CudaBackend::Prepare(const pb::LaunchSpec& launch) const {
  absl::StatusOr<LaunchDims> dims = GetLaunchDims(launch);
  if (!dims.ok()) return dims.status();
  auto it = modules_.find(launch.module_id());
  if (it == modules_.end()) {
    return absl::NotFoundError(absl::StrCat("no module '", launch.module_id(), "' is loaded"));
  }
  const int64_t smem = launch.dynamic_shared_bytes() > 0 ? launch.dynamic_shared_bytes()
                                                         : it->second->dynamic_smem_bytes;
  absl::StatusOr<LaunchConfig> config = MakeLaunchConfig(dims->grid, dims->block, smem);
  if (!config.ok()) return config.status();
  Prepared prepared{it->second.get(), *config, {}};
  if (launch.next_kernels_size() == 0 && launch.workspace_bytes_size() == 0) return prepared;
  // A launch sequence (docs/design/multi-kernel.md).
  absl::StatusOr<std::vector<LaunchDims>> all = GetSequenceDims(launch);
  if (!all.ok()) return all.status();
  const LoadedModule& m = *it->second;
  if (m.next.size() + 1 != all->size()) {
    return absl::InvalidArgumentError(absl::StrCat("the launch has ", all->size(),
                                                   " kernels, module '", launch.module_id(), "' ",
                                                   m.next.size() + 1));
  }
  prepared.steps.push_back(Prepared::Step{&m.function, *config, nullptr});
  for (size_t k = 1; k < all->size(); ++k) {
    const pb::KernelStep& step = launch.next_kernels(static_cast<int>(k - 1));
    const int64_t step_smem =
        step.dynamic_shared_bytes() > 0 ? step.dynamic_shared_bytes() : m.next[k - 1].second;
    absl::StatusOr<LaunchConfig> c = MakeLaunchConfig((*all)[k].grid, (*all)[k].block, step_smem);
    if (!c.ok()) return c.status();
    prepared.steps.push_back(Prepared::Step{&m.next[k - 1].first, *c, nullptr});
  }
  return prepared;
}

absl::Status CudaBackend::LaunchAll(const Prepared& prepared, void** args) {
  if (prepared.steps.empty()) {
    return Launch(prepared.module->function, prepared.config, args, &stream_);
  }
  for (const Prepared::Step& step : prepared.steps) {
    if (absl::Status s = Launch(*step.function, step.config, step.args, &stream_); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

bool CudaBackend::ResidentKey(const std::string& key) const {
  return resident_index_.contains(key);
}

void CudaBackend::EvictResident(size_t keep_at_most) {
  for (auto it = resident_.end(); it != resident_.begin() && resident_bytes_ > keep_at_most;) {
    --it;
    if (it->last_request == request_) continue; // this request's data stays
    resident_bytes_ -= it->buffer.size();
    resident_index_.erase(it->key);
    it = resident_.erase(it);
  }
}

absl::StatusOr<DeviceBuffer> CudaBackend::TakeBuffer(size_t bytes) {
  if (auto it = spare_.find(bytes); it != spare_.end()) {
    DeviceBuffer b = std::move(it->second);
    spare_.erase(it);
    return b;
  }
  absl::StatusOr<DeviceBuffer> b = DeviceBuffer::Allocate(device_, bytes);
  if (b.ok() || b.status().code() != absl::StatusCode::kResourceExhausted) return b;
  spare_.clear();
  EvictResident(0);
  return DeviceBuffer::Allocate(device_, bytes);
}

bool CudaBackend::KeepResident(const std::string& key, const std::string& bytes) {
  if (bytes.size() > resident_limit_) return false;
  EvictResident(resident_limit_ - bytes.size());
  absl::StatusOr<DeviceBuffer> pristine = DeviceBuffer::Allocate(device_, bytes.size());
  if (!pristine.ok() || !pristine->CopyFromHost(bytes.data(), bytes.size()).ok()) return false;
  resident_.push_front(Resident{key, *std::move(pristine), request_});
  resident_index_[key] = resident_.begin();
  resident_bytes_ += bytes.size();
  return true;
}

absl::Status CudaBackend::Preload(const std::vector<tools::HostParam>& params,
                                  const std::vector<ArgOrigin>& origins) {
  if (origins.size() != params.size()) {
    return absl::InvalidArgumentError("argument origins do not match the parameters");
  }
  ++request_; // what this call keeps pins itself against its own evictions
  for (size_t i = 0; i < params.size(); ++i) {
    const ArgOrigin& origin = origins[i];
    if (origin.key.empty() || origin.zeros || params[i].before.data.empty() ||
        resident_index_.contains(origin.key)) {
      continue;
    }
    (void)KeepResident(origin.key, params[i].before.data); // not kept: the launch uploads
  }
  // The copies ran on the legacy stream; later launches go on stream_.
  return device_->Synchronize();
}

absl::StatusOr<DeviceBuffer> CudaBackend::StartBuffer(const tools::HostParam& param,
                                                      const ArgOrigin* origin, size_t bytes) {
  absl::StatusOr<DeviceBuffer> work = TakeBuffer(bytes);
  if (!work.ok()) return work.status();
  if (origin != nullptr && origin->zeros) {
    if (absl::Status s = work->Fill(0); !s.ok()) return s;
    return work;
  }
  const bool keyed = origin != nullptr && !origin->key.empty();
  if (keyed) {
    auto found = resident_index_.find(origin->key);
    if (found == resident_index_.end() && param.before.data.size() == bytes &&
        KeepResident(origin->key, param.before.data)) {
      found = resident_index_.find(origin->key);
    }
    if (found != resident_index_.end() && found->second->buffer.size() == bytes) {
      resident_.splice(resident_.begin(), resident_, found->second);
      found->second->last_request = request_;
      if (absl::Status s = work->CopyFrom(found->second->buffer); !s.ok()) return s;
      return work;
    }
  }
  if (param.before.data.size() != bytes) {
    return absl::InternalError(absl::StrCat("parameter ", param.name, " came without its ", bytes,
                                            " bytes and no device copy of them is kept"));
  }
  if (absl::Status s = work->CopyFromHost(param.before.data.data(), bytes); !s.ok()) return s;
  return work;
}

absl::StatusOr<double> CudaBackend::Run(const pb::LaunchSpec& launch,
                                        std::vector<tools::HostParam>& params,
                                        const std::vector<ArgOrigin>& origins) {
  TimingOptions once;
  once.warmup = 0;
  once.repeats = 1;
  absl::StatusOr<std::vector<double>> samples = Measure(launch, params, origins, once);
  if (!samples.ok()) return samples.status();
  return samples->front();
}

absl::StatusOr<std::vector<double>> CudaBackend::Measure(const pb::LaunchSpec& launch,
                                                         std::vector<tools::HostParam>& params,
                                                         const std::vector<ArgOrigin>& origins,
                                                         const TimingOptions& options) {
  if (options.repeats < 1 || options.repeats > kMaxTimedRepeats || options.warmup < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("repeats must be in 1..", kMaxTimedRepeats, " and warmup >= 0"));
  }
  absl::StatusOr<Prepared> prepared = Prepare(launch);
  if (!prepared.ok()) return prepared.status();
  absl::StatusOr<std::vector<codegen::TensorMapSpec>> maps =
      TensorMapsOf(launch, launch.tensor_maps());
  if (!maps.ok()) return maps.status();
  std::vector<std::vector<codegen::TensorMapSpec>> step_maps;
  if (!prepared->steps.empty()) {
    step_maps.push_back(*maps);
    for (const pb::KernelStep& step : launch.next_kernels()) {
      absl::StatusOr<std::vector<codegen::TensorMapSpec>> m =
          TensorMapsOf(launch, step.tensor_maps());
      if (!m.ok()) return m.status();
      step_maps.push_back(*std::move(m));
    }
  }
  if (!origins.empty() && origins.size() != params.size()) {
    return absl::InvalidArgumentError("argument origins do not match the parameters");
  }
  ++request_;
  // Pin this request's resident inputs first: making room for one of its
  // new inputs must not evict another that came without its bytes.
  for (const ArgOrigin& origin : origins) {
    if (origin.key.empty()) continue;
    if (auto it = resident_index_.find(origin.key); it != resident_index_.end()) {
      it->second->last_request = request_;
    }
  }
  absl::StatusOr<CudaLaunchArgs> args =
      CudaLaunchArgs::Make(params, {}, [&](size_t i, size_t bytes) {
        return StartBuffer(params[i], origins.empty() ? nullptr : &origins[i], bytes);
      });
  if (!args.ok()) return Classify(args.status());
  if (prepared->steps.empty()) {
    if (absl::Status s = args->AddTensorMaps(device_->driver(), *maps, params); !s.ok()) {
      return Classify(s);
    }
  } else {
    const std::vector<size_t> workspaces(launch.workspace_bytes().begin(),
                                         launch.workspace_bytes().end());
    if (absl::Status s = args->AddWorkspaces(device_, workspaces); !s.ok()) return Classify(s);
    absl::StatusOr<std::vector<void**>> per_kernel =
        args->AddTensorMapsPerKernel(device_->driver(), step_maps, params);
    if (!per_kernel.ok()) return Classify(per_kernel.status());
    for (size_t k = 0; k < prepared->steps.size(); ++k) prepared->steps[k].args = (*per_kernel)[k];
  }
  // The input copies ran on the legacy stream, which a non-blocking stream
  // does not wait for.
  if (absl::Status s = device_->Synchronize(); !s.ok()) return Classify(s);
  absl::StatusOr<std::vector<double>> samples =
      options.use_cuda_graph ? TimeGraphReplays(*prepared, args->args(), options)
                             : TimeLaunches(*prepared, args->args(), options);
  if (!samples.ok()) return Classify(samples.status());
  if (options.copy_out) {
    if (absl::Status s = args->CopyOut(params, /*outputs_only=*/true); !s.ok()) return Classify(s);
  }
  spare_.clear();
  for (DeviceBuffer& b : std::move(*args).TakeBuffers()) {
    const size_t size = b.size();
    spare_.emplace(size, std::move(b));
  }
  return samples;
}

absl::Status CudaBackend::EnsureFlushBuffer() {
  if (flush_buffer_.has_value()) return absl::OkStatus();
  absl::StatusOr<int> l2 = device_->Attribute(kAttrL2CacheSize);
  if (!l2.ok()) return l2.status();
  const size_t bytes = std::max<size_t>(2 * static_cast<size_t>(std::max(*l2, 0)), 8 << 20);
  absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(device_, bytes);
  if (!buffer.ok()) return buffer.status();
  flush_buffer_ = *std::move(buffer);
  return absl::OkStatus();
}

absl::Status CudaBackend::FlushL2() {
  if (absl::Status s = EnsureFlushBuffer(); !s.ok()) return s;
  return flush_buffer_->FillAsync(0, stream_);
}

absl::StatusOr<std::vector<std::vector<double>>>
CudaBackend::TimeEach(int repeats, bool flush_before,
                      const std::vector<std::function<absl::Status()>>& bodies) {
  const size_t runs = static_cast<size_t>(repeats) * bodies.size();
  std::vector<Event> starts, stops;
  starts.reserve(runs);
  stops.reserve(runs);
  for (size_t i = 0; i < runs; ++i) {
    absl::StatusOr<Event> start = Event::Create(device_);
    if (!start.ok()) return start.status();
    absl::StatusOr<Event> stop = Event::Create(device_);
    if (!stop.ok()) return stop.status();
    starts.push_back(*std::move(start));
    stops.push_back(*std::move(stop));
  }
  size_t e = 0;
  for (int r = 0; r < repeats; ++r) {
    for (const auto& body : bodies) {
      if (flush_before) {
        if (absl::Status s = FlushL2(); !s.ok()) return s;
      }
      if (absl::Status s = starts[e].Record(&stream_); !s.ok()) return s;
      if (absl::Status s = body(); !s.ok()) return s;
      if (absl::Status s = stops[e].Record(&stream_); !s.ok()) return s;
      ++e;
    }
  }
  if (absl::Status s = stream_.Synchronize(); !s.ok()) return s;
  std::vector<std::vector<double>> us(bodies.size());
  e = 0;
  for (int r = 0; r < repeats; ++r) {
    for (size_t b = 0; b < bodies.size(); ++b, ++e) {
      absl::StatusOr<float> ms = stops[e].ElapsedMsSince(starts[e]);
      if (!ms.ok()) return ms.status();
      us[b].push_back(static_cast<double>(*ms) * 1000.0);
    }
  }
  return us;
}

absl::StatusOr<std::vector<double>> CudaBackend::TimeLaunches(const Prepared& prepared, void** args,
                                                              const TimingOptions& options) {
  auto launch = [&] { return LaunchAll(prepared, args); };
  for (int i = 0; i < options.warmup; ++i) {
    if (absl::Status s = launch(); !s.ok()) return s;
  }
  if (absl::Status s = stream_.Synchronize(); !s.ok()) return s;
  absl::StatusOr<std::vector<std::vector<double>>> us =
      TimeEach(options.repeats, options.flush_l2, {launch});
  if (!us.ok()) return us.status();
  return std::move(us->front());
}

absl::StatusOr<std::vector<double>>
CudaBackend::TimeGraphReplays(const Prepared& prepared, void** args, const TimingOptions& options) {
  auto launch = [&] { return LaunchAll(prepared, args); };
  // Warm-up as plain launches: a function's first launch may load its code
  // (lazy loading), and nothing of that may size the batch.
  for (int i = 0; i < std::max(1, options.warmup); ++i) {
    if (absl::Status s = launch(); !s.ok()) return s;
  }
  if (options.flush_l2) {
    if (absl::Status s = EnsureFlushBuffer(); !s.ok()) return s; // no allocation in a capture
  }
  // The batch: from the best of a few launches, each from the L2 state the
  // samples will have (one slow launch, the host descheduled between its
  // events, must not shrink the batch).
  absl::StatusOr<std::vector<std::vector<double>>> sizing =
      TimeEach(kGraphSizingRuns, options.flush_l2, {launch});
  if (!sizing.ok()) return sizing.status();
  const double single_us =
      std::max(1e-3, *std::min_element(sizing->front().begin(), sizing->front().end()));
  const int batch = static_cast<int>(
      std::clamp(std::ceil(kGraphReplayTargetUs / single_us), 1.0, double{kMaxGraphBatch}));

  // With flushing, every launch in the graph follows its own flush, and a
  // second graph of the flushes alone is timed next to it: a sample is the
  // difference over the batch, so every launch counts from a cold L2 whatever
  // the batch (without this, all but the first launch of a replay ran from
  // an L2 holding their inputs, and a small batch read slower than a large).
  // B launches (each after its flush when flushing), or the B flushes alone.
  auto capture_batch = [&](bool with_launches) {
    return Graph::Capture(device_, stream_, [&]() -> absl::Status {
      for (int b = 0; b < batch; ++b) {
        if (options.flush_l2) {
          if (absl::Status s = FlushL2(); !s.ok()) return s;
        }
        if (with_launches) {
          if (absl::Status s = launch(); !s.ok()) return s;
        }
      }
      return absl::OkStatus();
    });
  };
  absl::StatusOr<Graph> kernels = capture_batch(/*with_launches=*/true);
  if (!kernels.ok()) return kernels.status();
  std::optional<Graph> flushes;
  if (options.flush_l2) {
    absl::StatusOr<Graph> g = capture_batch(/*with_launches=*/false);
    if (!g.ok()) return g.status();
    flushes = *std::move(g);
  }
  std::vector<std::function<absl::Status()>> bodies = {[&] { return kernels->Launch(stream_); }};
  if (flushes.has_value()) bodies.emplace_back([&] { return flushes->Launch(stream_); });
  // A graph's first replay uploads it.
  for (const auto& body : bodies) {
    if (absl::Status s = body(); !s.ok()) return s;
  }
  if (!flushes.has_value()) {
    absl::StatusOr<std::vector<std::vector<double>>> us =
        TimeEach(options.repeats, /*flush_before=*/false, bodies);
    if (!us.ok()) return us.status();
    std::vector<double> samples = std::move(us->front());
    for (double& sample : samples) sample /= batch;
    return samples;
  }
  // Flushed: a sample is (replay - the flushes' median) / B. Subtracting the
  // median rather than the paired flush replay halves the noise of the
  // difference; a replay that still comes out at or under the flushes (the
  // flushes' write-backs land in either graph, and on a 50 MB L2 they can
  // outweigh a short kernel's reads) says nothing about the kernel, so it
  // is measured again, up to kMaxFlushedGraphRounds rounds, and the request
  // fails rather than report a launch that took no time.
  std::vector<double> replays, flush_replays, samples;
  for (int round = 0; round < kMaxFlushedGraphRounds; ++round) {
    const int needed = options.repeats - static_cast<int>(samples.size());
    if (needed <= 0) break;
    absl::StatusOr<std::vector<std::vector<double>>> us =
        TimeEach(round == 0 ? needed : 2 * needed, /*flush_before=*/false, bodies);
    if (!us.ok()) return us.status();
    replays.insert(replays.end(), (*us)[0].begin(), (*us)[0].end());
    flush_replays.insert(flush_replays.end(), (*us)[1].begin(), (*us)[1].end());
    const double flush_us = util::Median(flush_replays);
    samples.clear();
    for (double replay : replays) {
      if (replay > flush_us) samples.push_back((replay - flush_us) / batch);
    }
  }
  if (samples.size() < static_cast<size_t>(options.repeats)) {
    return absl::UnavailableError(absl::StrCat(
        "flushed CUDA-graph timing: only ", samples.size(), " of ", replays.size(), " replays of ",
        batch, " launches were slower than the L2 flushes alone (median ",
        util::Median(flush_replays), " us); the kernel is too short to time after a flush"));
  }
  samples.resize(static_cast<size_t>(options.repeats));
  return samples;
}

} // namespace kiln::measure
