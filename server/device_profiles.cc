#include "server/device_profiles.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "util/log.h"

namespace kiln::server {
namespace {

namespace pb = kiln::v1;

void SetValues(const std::map<std::string, double>& values, pb::DeviceMeasurements* m) {
  auto get = [&](const char* name) {
    auto it = values.find(name);
    return it == values.end() ? 0.0 : it->second;
  };
  m->set_dram_gbs(get(arch::kDramGbs));
  m->set_l2_gbs(get(arch::kL2Gbs));
  m->set_mma_f16_tflops(get(arch::kMmaF16Tflops));
}

} // namespace

DeviceProfiles::DeviceProfiles(DevicePool* devices, cache::Cache* cache, std::string kiln_version,
                               DeviceProfilesOptions options)
    : devices_(devices), cache_(cache), kiln_version_(std::move(kiln_version)), options_(options) {}

int64_t DeviceProfiles::measurements_run() const {
  absl::MutexLock lock(&mu_);
  return runs_;
}

bool DeviceProfiles::Lookup(const Key& key, pb::DeviceMeasurements* out) {
  {
    absl::MutexLock lock(&mu_);
    auto it = known_.find(key);
    if (it != known_.end() && it->second.state() == "failed" &&
        absl::Now() - absl::FromUnixMillis(it->second.measured_unix_ms()) >
            options_.retry_failed_after) {
      known_.erase(it); // measure again
    } else if (it != known_.end()) {
      *out = it->second;
      return true;
    }
  }
  if (cache_ == nullptr) return false;
  const auto& [model, driver] = key;
  absl::StatusOr<cache::DeviceProfile> row =
      cache_->device_profiles().Get(model, driver, kiln_version_);
  if (!row.ok()) {
    if (!absl::IsNotFound(row.status())) {
      util::LogWarning("device profile unreadable; the device will be measured again",
                       {{"model", model}, {"error", row.status().message()}});
    }
    return false;
  }
  pb::DeviceMeasurements m;
  SetValues(row->values, &m);
  m.set_state(row->state.empty() ? "partial" : row->state);
  m.set_note(row->note);
  m.set_measured_unix_ms(row->measured_unix_ms);
  m.set_from_cache(true);
  m.set_kiln_version(row->kiln_version);
  absl::MutexLock lock(&mu_);
  known_.emplace(key, m);
  *out = m;
  return true;
}

pb::DeviceMeasurements DeviceProfiles::Get(const pb::Device& device, bool measure_if_missing) {
  const Key key{device.model(), device.driver_version()};
  pb::DeviceMeasurements out;
  if (Lookup(key, &out)) return out;
  if (!measure_if_missing || !options_.measure || devices_ == nullptr) {
    out.set_state("pending");
    return out;
  }
  {
    absl::MutexLock lock(&mu_);
    // Another caller may be measuring this model: wait for its result.
    auto ready = [this, &key] { return in_flight_.count(key) == 0; };
    mu_.Await(absl::Condition(&ready));
    auto it = known_.find(key);
    if (it != known_.end()) return it->second;
    in_flight_.insert(key);
  }
  out = Measure(device);
  absl::MutexLock lock(&mu_);
  known_[key] = out;
  in_flight_.erase(key);
  ++runs_;
  return out;
}

pb::DeviceMeasurements DeviceProfiles::Measure(const pb::Device& device) {
  util::LogInfo(
      "micro-benchmarks starting",
      {{"device", device.id()}, {"model", device.model()}, {"driver", device.driver_version()}});
  pb::DeviceMeasurements out;
  out.set_kiln_version(kiln_version_);
  arch::MicrobenchResult result;
  absl::StatusOr<DeviceLease> lease = devices_->Acquire(device.id(), options_.queue_timeout);
  if (lease.ok()) {
    const absl::Duration timeout = absl::Seconds(options_.microbench.timeout_seconds);
    arch::WorkerCall call = [&lease, timeout](const pb::WorkerRequest& request) {
      return lease->Call(request, timeout);
    };
    result = arch::RunMicrobenchmarks(device, call, options_.microbench);
    lease->Release();
  } else {
    result.notes.push_back(
        absl::StrCat("not measured: the device is unavailable: ", lease.status().message()));
  }
  const std::string note = result.Note();
  SetValues(result.values, &out);
  out.set_state(result.State());
  out.set_note(note);
  out.set_measured_unix_ms(absl::ToUnixMillis(absl::Now()));
  if (out.state() != "measured") {
    util::LogWarning("micro-benchmarks incomplete; the tuner uses the preset's figures for what "
                     "was not measured",
                     {{"device", device.id()}, {"model", device.model()}, {"note", note}});
  }
  util::LogInfo("micro-benchmarks measured", {{"device", device.id()},
                                              {"model", device.model()},
                                              {"state", out.state()},
                                              {"dram_gbs", out.dram_gbs()},
                                              {"l2_gbs", out.l2_gbs()},
                                              {"mma_f16_tflops", out.mma_f16_tflops()},
                                              {"seconds", result.seconds}});
  if (cache_ != nullptr && !result.values.empty()) {
    cache::DeviceProfile row;
    row.device_model = device.model();
    row.driver = device.driver_version();
    row.kiln_version = kiln_version_;
    row.state = out.state();
    row.values = result.values;
    row.note = note;
    row.measured_unix_ms = out.measured_unix_ms();
    if (absl::Status s = cache_->device_profiles().Put(row); !s.ok()) {
      util::LogWarning("cannot store the micro-benchmark results; a restart measures again",
                       {{"model", device.model()}, {"error", s.message()}});
    }
  }
  return out;
}

void DeviceProfiles::Annotate(std::vector<pb::Device>& devices) {
  for (pb::Device& d : devices) *d.mutable_measured() = Get(d, /*measure_if_missing=*/false);
}

} // namespace kiln::server
