// What the micro-benchmarks (tuner/arch/microbench.h) measured per device
// model: DRAM bandwidth, L2 bandwidth, mma.sync tensor throughput.
//
// Measured once per (device model, driver version, Kiln version): on the
// first Tune whose planner needs the model (the Roller strategy), never at
// startup or on a Compile, so neither waits for it, and a daemon nobody tunes
// on never occupies its GPUs with probes. The results go into the cache
// (cache::DeviceProfileLog) and every later daemon on that cache reads them
// back instead of measuring. A driver or Kiln upgrade measures again.
//
// Failure never fails a tune: a probe that cannot run leaves its value 0
// with a note, the planner keeps the preset's figure for it, and a warning
// is logged. Results with nothing measured are kept in memory only, for
// retry_failed_after (so neither every tune nor a restart is stuck with
// them). A cache
// row that cannot be read (corrupt) is measured again and replaced.
//
// Thread-safety: all methods may be called from any thread. One measurement
// per key runs at a time; concurrent callers for the same key wait for it.
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cache/cache.h"
#include "kiln/v1/service.pb.h"
#include "server/device_pool.h"
#include "tuner/arch/microbench.h"

namespace kiln::server {

struct DeviceProfilesOptions {
  // Off: only results already in the cache are used; nothing is measured.
  bool measure = true;
  arch::MicrobenchOptions microbench;
  // The longest a measurement waits for its device.
  absl::Duration queue_timeout = absl::Minutes(5);
  // A run that measured nothing (the device was busy past queue_timeout,
  // the worker crashed) is tried again by the first Get after this long.
  absl::Duration retry_failed_after = absl::Minutes(10);
};

class DeviceProfiles {
 public:
  // `devices` and `cache` may be null (then nothing is measured / stored);
  // both must outlive this object.
  DeviceProfiles(DevicePool* devices, cache::Cache* cache, std::string kiln_version,
                 DeviceProfilesOptions options = {});

  // The measurements for `device`'s model: from memory, else from the
  // cache, else (when `measure_if_missing`) measured now on `device`. State
  // "pending" when nothing is known and nothing was measured.
  kiln::v1::DeviceMeasurements Get(const kiln::v1::Device& device, bool measure_if_missing);

  // Sets each device's `measured` from memory or the cache (never measures).
  void Annotate(std::vector<kiln::v1::Device>& devices);

  // Measurements this process ran (not read back): for tests and logs.
  int64_t measurements_run() const;

 private:
  using Key = std::tuple<std::string, std::string>; // device model, driver
  // From memory or the cache; false when neither knows it.
  bool Lookup(const Key& key, kiln::v1::DeviceMeasurements* out);
  kiln::v1::DeviceMeasurements Measure(const kiln::v1::Device& device);

  DevicePool* const devices_;
  cache::Cache* const cache_;
  const std::string kiln_version_;
  const DeviceProfilesOptions options_;

  mutable absl::Mutex mu_;
  std::map<Key, kiln::v1::DeviceMeasurements> known_ ABSL_GUARDED_BY(mu_);
  std::set<Key> in_flight_ ABSL_GUARDED_BY(mu_); // being measured; waiters wait on mu_
  int64_t runs_ ABSL_GUARDED_BY(mu_) = 0;
};

} // namespace kiln::server
