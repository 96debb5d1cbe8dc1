// Test support for kiln-worker and the device pool: hand-written CPU-target
// kernels (the entry point of compiler/codegen/kernel_spec.h), compiled with
// the host compiler (toolchain::HostCompile) into the shared object a CPU
// worker loads, and request builders for them. Header-only.
//
//   kiln_add_one(float* x, float* y, int32 n)  y[i] = x[i] + 1
//   kiln_segv(float* y)                        writes y[2^40]: SIGSEGV
//   kiln_spin(float* y)                        never returns
//   kiln_fail(float* y)                        reports an error (returns 1)
//   kiln_stamp(int64* t)                       t = {start ns, end ns} around
//                                              a 5 ms sleep (CLOCK_MONOTONIC)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/toolchain/host_cc.h"
#include "kiln/v1/worker.pb.h"

namespace kiln::testing {

inline constexpr char kWorkerTestKernels[] = R"(
#include <stdint.h>
#include <stdio.h>
#include <time.h>

extern "C" int kiln_add_one(void** args, const int64_t* grid, char* error, int error_len) {
  const float* x = *static_cast<float**>(args[0]);
  float* y = *static_cast<float**>(args[1]);
  const int32_t n = *static_cast<int32_t*>(args[2]);
  for (int32_t i = 0; i < n; ++i) y[i] = x[i] + 1.0f;
  return 0;
}

extern "C" int kiln_segv(void** args, const int64_t* grid, char* error, int error_len) {
  volatile float* y = *static_cast<float**>(args[0]);
  y[int64_t{1} << 40] = 1.0f;  // far out of bounds
  return 0;
}

extern "C" int kiln_spin(void** args, const int64_t* grid, char* error, int error_len) {
  volatile float* y = *static_cast<float**>(args[0]);
  for (;;) y[0] = y[0] + 1.0f;
}

extern "C" int kiln_fail(void** args, const int64_t* grid, char* error, int error_len) {
  snprintf(error, error_len, "barrier reached by 3 of 4 threads");
  return 1;
}

static int64_t NowNs() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

extern "C" int kiln_stamp(void** args, const int64_t* grid, char* error, int error_len) {
  int64_t* t = *static_cast<int64_t**>(args[0]);
  t[0] = NowNs();
  timespec pause = {0, 5 * 1000 * 1000};
  nanosleep(&pause, nullptr);
  t[1] = NowNs();
  return 0;
}
)";

// The shared object of kWorkerTestKernels (empty on failure; `error` says why).
inline std::string CompileWorkerTestKernels(std::string* error) {
  toolchain::HostCompileInput in;
  in.source = kWorkerTestKernels;
  in.program_name = "worker_test_kernels.cc";
  in.include_cpu_runtime = false;
  in.opt_level = 0;
  absl::StatusOr<toolchain::HostCompileOutput> out = toolchain::HostCompile(in);
  if (!out.ok()) {
    *error = absl::StrCat(out.status().message());
    return "";
  }
  return out->shared_object;
}

inline kiln::v1::WorkerRequest LoadRequest(const std::string& module_id, const std::string& image,
                                           const std::string& symbol) {
  kiln::v1::WorkerRequest r;
  r.mutable_load()->set_module_id(module_id);
  r.mutable_load()->set_image(image);
  r.mutable_load()->set_kernel_symbol(symbol);
  return r;
}

inline kiln::v1::TensorSpec* AddTensor(kiln::v1::LaunchSpec* launch, const std::string& name,
                                       kiln::v1::DType dtype, std::vector<int64_t> shape,
                                       kiln::v1::TensorSpec::Init init, bool is_output) {
  kiln::v1::TensorSpec* t = launch->add_args();
  t->set_name(name);
  t->set_dtype(dtype);
  for (int64_t d : shape) t->add_shape(d);
  t->set_init(init);
  t->set_is_output(is_output);
  return t;
}

// A run of `module_id` (one of the kernels above taking one float output
// of 4 elements), grid 1.
inline kiln::v1::WorkerRequest RunOneOutput(const std::string& module_id,
                                            kiln::v1::DType dtype = kiln::v1::DTYPE_FLOAT32) {
  kiln::v1::WorkerRequest r;
  kiln::v1::LaunchSpec* launch = r.mutable_run()->mutable_launch();
  launch->set_module_id(module_id);
  launch->add_grid(1);
  AddTensor(launch, "y", dtype, {4}, kiln::v1::TensorSpec::INIT_ZEROS, true);
  r.mutable_run()->set_return_outputs(true);
  return r;
}

// kiln_add_one on n arange'd floats.
inline kiln::v1::WorkerRequest RunAddOne(const std::string& module_id, int32_t n) {
  kiln::v1::WorkerRequest r;
  kiln::v1::LaunchSpec* launch = r.mutable_run()->mutable_launch();
  launch->set_module_id(module_id);
  launch->add_grid(1);
  AddTensor(launch, "x", kiln::v1::DTYPE_FLOAT32, {n}, kiln::v1::TensorSpec::INIT_ARANGE, false);
  AddTensor(launch, "y", kiln::v1::DTYPE_FLOAT32, {n}, kiln::v1::TensorSpec::INIT_ZEROS, true);
  kiln::v1::TensorSpec* count = launch->add_args();
  count->set_name("n");
  count->set_dtype(kiln::v1::DTYPE_INT32);
  count->mutable_scalar()->set_int_value(n);
  r.mutable_run()->set_return_outputs(true);
  return r;
}

inline kiln::v1::WorkerRequest DescribeRequest() {
  kiln::v1::WorkerRequest r;
  r.mutable_describe();
  return r;
}

} // namespace kiln::testing
