// The values the cache stores: artifacts, best configs and measurements.
// Plain structs; see cache.h for how they are keyed and kept.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cache {

// One file of an artifact: "cubin", "ptx", "source", "hsaco", "so", ...
struct ArtifactFile {
  std::string kind;
  std::string bytes;
  std::string digest;    // sha256 hex of `bytes`; filled in by the cache
  uint64_t raw_size = 0; // bytes.size(); filled in by the cache
};

// A compiled kernel as the compiler hands it over and the cache returns it.
struct Artifact {
  std::string target;                    // "cuda:sm_90", "cpu", ...
  std::string toolchain_fingerprint;     // part of the key; kept for reports
  std::string launch_json;               // launch metadata (codegen::LaunchJson)
  std::map<std::string, double> timings; // compile step -> seconds
  std::vector<ArtifactFile> files;       // at most one per kind
  int64_t created_unix_ms = 0;           // set by PutArtifact when 0
};

// One row of `kiln cache ls`: an artifact without its bytes.
struct ArtifactSummary {
  std::string key;
  std::string target;
  std::vector<std::string> kinds;
  uint64_t size_bytes = 0; // on disk, manifest included
  int64_t created_unix_ms = 0;
  int64_t last_access_unix_ms = 0;
  bool pinned = false; // referenced by a best config
};

// Summary of a sample of kernel latencies, in microseconds.
struct LatencyStats {
  double min_us = 0;
  double median_us = 0;
  double mean_us = 0;
  double p90_us = 0;
  double stddev_us = 0;
  int64_t samples = 0;
};

// What a best config is for. Several device models may hold different best
// configs for one program and shape.
struct BestConfigKey {
  std::string program_key; // the program hashed without its tunable bindings
  std::string shape;       // canonical text of the non-tunable bindings
  std::string target;
  std::string device_model; // "NVIDIA H200"
};

struct BestConfig {
  std::string config_json; // tunable name -> value
  LatencyStats latency;
  std::string tuning_record_id;
  // The artifact compiled with this config, or empty. Pinned: LRU eviction
  // never removes it while this record names it.
  std::string artifact_key;
  int64_t updated_unix_ms = 0; // set by PutBest when 0
};

// One benchmark or tuning measurement.
struct Measurement {
  int64_t id = 0;  // assigned by RecordMeasurement
  std::string key; // the artifact (or program) key measured
  std::string config_json;
  std::string target;
  std::string device_model;
  std::string device_id;
  std::string driver;
  int64_t sm_clock_mhz = 0; // 0: unknown
  int64_t mem_clock_mhz = 0;
  LatencyStats latency;
  std::string failure; // empty: success; else "timeout", "illegal_address", "wrong_output", ...
  std::string label;   // e.g. a git sha
  int64_t time_unix_ms = 0; // set by RecordMeasurement when 0
};

// A filter over the measurement history; unset fields match everything.
// Results are newest first.
struct MeasurementQuery {
  std::optional<std::string> key;
  std::optional<std::string> label;
  std::optional<std::string> device_model;
  std::optional<int64_t> since_unix_ms; // inclusive
  std::optional<int64_t> until_unix_ms; // exclusive
  bool failures_only = false;
  bool successes_only = false;
  int64_t limit = 1000; // <= 0: no limit
};

// A job of a daemon using this cache: the columns a query selects on, plus
// the daemon's own serialized record (opaque to the cache).
struct JobRecord {
  std::string id;
  std::string kind;  // "compile", "tune", "benchmark"
  std::string state; // "queued", "running", "succeeded", "failed", "cancelled"
  std::string key;
  int64_t created_unix_ms = 0;
  int64_t finished_unix_ms = 0; // 0 while unfinished
  std::string record;
};

// What the micro-benchmarks measured on one device model with one driver and
// one Kiln version (server/device_profiles.h). `values` holds only what was
// measured ("dram_gbs", "mma_f16_tflops", ...: finite and positive);
// `note` says what was not, and why.
struct DeviceProfile {
  std::string device_model;
  std::string driver;
  std::string kiln_version;
  std::string state; // the caller's word for it ("measured", "partial")
  std::map<std::string, double> values;
  std::string note;
  int64_t measured_unix_ms = 0; // 0 on Put: now
};

} // namespace kiln::cache
