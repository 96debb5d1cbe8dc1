// The host side of a worker request's kernel arguments: TensorSpec
// (worker.proto) to tools::HostParam with its initial data, and element
// access by dtype for initialisation and comparison.
//
// Initial data per TensorSpec::Init (`index` is the argument's position):
//   INIT_RANDOM_UNIFORM  tools::FillRandom(seed, index): the data kiln-run
//                        --seed makes for the parameter at that position
//   INIT_RANDOM_NORMAL   standard normal values (Box-Muller over the same
//                        generator), rounded to the dtype; integers round to
//                        the nearest integer
//   INIT_ZEROS, INIT_UNSPECIFIED  zeros
//   INIT_ONES            ones
//   INIT_ARANGE          0, 1, 2, ... in C order (wrapping in narrow integers)
//   INIT_BYTES           `data`, which must hold exactly the tensor's bytes
// A spec with `scalar` set is a by-value scalar of its dtype (shape ignored):
// kernel parameters that are scalars and the int32 values of dynamic shape
// symbols (kernel_spec.h's argument convention) both travel this way.
//
// Thread-safety: pure functions.
//
// Errors: InvalidArgument for an unspecified or unknown dtype, a negative
// extent, INIT_BYTES data of the wrong size, or a scalar that is a string;
// ResourceExhausted when the tensors together exceed `max_total_bytes`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"
#include "compiler/tools/kernel_inputs.h"
#include "compiler/tools/npy.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "kiln/cpu/types.h"
#include "kiln/v1/worker.pb.h"
#include "tuner/measure/input_cache.h"

namespace kiln::measure {

absl::StatusOr<ir::DType> DTypeFromWire(kiln::v1::DType dtype);
kiln::v1::DType DTypeToWire(ir::DType dtype);

// Element `i` of `a` as a double (exact for every dtype but 64-bit integers
// beyond 2^53).
double GetElement(const tools::NpyArray& a, int64_t i);
// The same on raw C-order bytes of `dtype`.
double GetElement(ir::DType dtype, const char* data, int64_t i);

namespace detail {
template <typename T>
T LoadAt(const char* data, int64_t i) {
  T v;
  std::memcpy(&v, data + i * sizeof(T), sizeof(T));
  return v;
}
// The float value of every half bit pattern (256 KiB, made on first use).
const float* HalfToFloatTable();
} // namespace detail

// Calls fn(read), where read(data, i) is GetElement(dtype, data, i) for this
// one dtype: a loop over many elements inside fn decodes them without a
// dtype switch per element. Returns what fn returns (the same type for every
// reader).
template <class Fn>
decltype(auto) WithElementReader(ir::DType dtype, Fn&& fn) {
  using detail::LoadAt;
  namespace rt = kiln::rt;
  switch (dtype) {
  case ir::DType::kBool:
    return fn([](const char* d, int64_t i) { return LoadAt<uint8_t>(d, i) != 0 ? 1.0 : 0.0; });
  case ir::DType::kInt8:
    return fn([](const char* d, int64_t i) { return static_cast<double>(LoadAt<int8_t>(d, i)); });
  case ir::DType::kInt16:
    return fn([](const char* d, int64_t i) { return static_cast<double>(LoadAt<int16_t>(d, i)); });
  case ir::DType::kInt32:
    return fn([](const char* d, int64_t i) { return static_cast<double>(LoadAt<int32_t>(d, i)); });
  case ir::DType::kInt64:
    return fn([](const char* d, int64_t i) { return static_cast<double>(LoadAt<int64_t>(d, i)); });
  case ir::DType::kUInt8:
    return fn([](const char* d, int64_t i) { return static_cast<double>(LoadAt<uint8_t>(d, i)); });
  case ir::DType::kUInt16:
    return fn([](const char* d, int64_t i) { return static_cast<double>(LoadAt<uint16_t>(d, i)); });
  case ir::DType::kUInt32:
    return fn([](const char* d, int64_t i) { return static_cast<double>(LoadAt<uint32_t>(d, i)); });
  case ir::DType::kUInt64:
    return fn([](const char* d, int64_t i) { return static_cast<double>(LoadAt<uint64_t>(d, i)); });
  case ir::DType::kFloat16:
    return fn([table = detail::HalfToFloatTable()](const char* d, int64_t i) {
      return static_cast<double>(table[LoadAt<uint16_t>(d, i)]);
    });
  case ir::DType::kBFloat16:
    return fn([](const char* d, int64_t i) {
      return static_cast<double>(rt::bfloat16_to_float(rt::bfloat16_t{LoadAt<uint16_t>(d, i)}));
    });
  case ir::DType::kFloat32:
    return fn([](const char* d, int64_t i) { return static_cast<double>(LoadAt<float>(d, i)); });
  case ir::DType::kFloat64:
    return fn([](const char* d, int64_t i) { return LoadAt<double>(d, i); });
  case ir::DType::kFloat8E4M3:
    return fn([](const char* d, int64_t i) {
      return static_cast<double>(rt::e4m3_to_float(rt::fp8_e4m3_t{LoadAt<uint8_t>(d, i)}));
    });
  case ir::DType::kFloat8E5M2:
    return fn([](const char* d, int64_t i) {
      return static_cast<double>(rt::e5m2_to_float(rt::fp8_e5m2_t{LoadAt<uint8_t>(d, i)}));
    });
  }
  return fn([](const char*, int64_t) { return 0.0; });
}
// Stores `v` as element `i` of `a`: floats round to nearest even (as the
// GPU's cvt.rn does; fp8 saturates), integers truncate toward zero and wrap
// modulo 2^bits, bools are v != 0.
void SetElement(tools::NpyArray& a, int64_t i, double v);

// The kernel arguments `specs` describe, each `before` filled as above and
// `is_output` taken from the spec. With a `cache`, generated data is taken
// from it when present and put in it when made (same bytes either way).
absl::StatusOr<std::vector<tools::HostParam>>
MakeHostParams(const google::protobuf::RepeatedPtrField<kiln::v1::TensorSpec>& specs,
               size_t max_total_bytes, InputCache* cache = nullptr);

// Which params may be left without their bytes (`before.data` empty, dtype
// and shape set) because the device backend makes them itself.
struct LazyParams {
  // Generated data whose InputCache key this returns true for.
  std::function<bool(const std::string& key)> resident;
  // Zero-filled tensors.
  bool zeros = false;
  // Generated bytes are not copied into the cache: the caller moves into it
  // what it still needs once it is done with the params (a worker's
  // prepare_inputs keeps only what the device did not take).
  bool leave_cache_to_caller = false;
};
absl::StatusOr<std::vector<tools::HostParam>>
MakeHostParams(const google::protobuf::RepeatedPtrField<kiln::v1::TensorSpec>& specs,
               size_t max_total_bytes, InputCache* cache, const LazyParams& lazy);

// Whether `spec` is a tensor that starts all zero.
bool IsZeroInit(const kiln::v1::TensorSpec& spec);

// "[12, 7]": the C-order index of flat element `flat` of `shape`.
std::string FormatIndex(const std::vector<int64_t>& shape, int64_t flat);

} // namespace kiln::measure
