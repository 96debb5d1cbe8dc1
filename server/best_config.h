// Best configs as the daemon keys and stores them (the cache's best-config
// store, cache/records.h), shared by LookupBest, Compile's
// use_best_for_device and the tuner that writes them.
//
// Key. A ProgramSource's `bindings` are the shape (the values the caller
// fixes: M, N, K, dtype ...); the config is what tuning chooses (block
// sizes, stages, threads) and is never part of the key:
//   program_key  SHA-256 of the program text (or wire IR) and its entry,
//                not of the file name, so one kernel sent from two paths
//                shares its best config
//   shape        the bindings in name order, "K=4096;M=128;dtype=float16"
//   target       "cuda:sm_90" ("cpu" when empty)
//   device_model "NVIDIA H200", as ListDevices names it
//
// Config JSON. A flat object of the tunables, {"block_M": 128,
// "use_swizzle": true, "policy": "square"}: integers, floats, booleans and
// strings. ConfigFromJson reads what ConfigToJson writes (and any such
// object); anything else is an InvalidArgument naming the offset.
//
// Thread-safe (pure functions).
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "cache/records.h"
#include "kiln/v1/service.pb.h"

namespace kiln::server {

using ConfigMap = std::map<std::string, kiln::v1::BindingValue>;

// The best-config key of a program and shape on a target and device model.
// Its target carries the kernel variant of `options` (driver::KernelVariant:
// "cuda:sm_90a;gemm=wgmma"), so tunes of different kernels of one config
// keep separate bests and histories; default options add nothing.
cache::BestConfigKey
BestKeyFor(const kiln::v1::ProgramSource& program, const std::string& target,
           const std::string& device_model,
           const kiln::v1::CompileOptions& options = kiln::v1::CompileOptions::default_instance());

std::string ConfigToJson(const ConfigMap& config);
absl::StatusOr<ConfigMap> ConfigFromJson(const std::string& json);

// One binding as JSON ("128", "true", "\"float16\"").
std::string BindingToJson(const kiln::v1::BindingValue& value);

} // namespace kiln::server
