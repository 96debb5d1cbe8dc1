#include "tuner/measure/tensor_data.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kiln/cpu/types.h"

namespace kiln::measure {
namespace {

using ir::DType;
namespace rt = kiln::rt;
namespace pb = kiln::v1;

using detail::LoadAt;

template <typename T>
T Load(const tools::NpyArray& a, int64_t i) {
  return LoadAt<T>(a.data.data(), i);
}

template <typename T>
void Store(tools::NpyArray& a, int64_t i, T v) {
  std::memcpy(a.data.data() + i * sizeof(T), &v, sizeof(T));
}

// Truncates toward zero and wraps modulo 2^64, the way a C cast from a
// 64-bit integer to a narrower one wraps; NaN gives 0.
uint64_t WrapToBits(double v) {
  if (std::isnan(v)) return 0;
  const double t = std::trunc(v);
  if (t >= -0x1p63 && t < 0x1p63) return static_cast<uint64_t>(static_cast<int64_t>(t));
  if (std::isinf(t)) return 0;
  double m = std::fmod(t, 0x1p64); // exact; the sign of t
  if (m < 0) m += 0x1p64;
  return m >= 0x1p64 ? 0 : static_cast<uint64_t>(m);
}

// The standard normal value for uniforms in [-1, 1) (FillRandom's range).
double BoxMuller(double u1, double u2) {
  const double a = (u1 + 1.0) * 0.5; // [0, 1)
  const double b = (u2 + 1.0) * 0.5;
  const double r = std::sqrt(-2.0 * std::log(1.0 - a)); // 1 - a in (0, 1]
  return r * std::cos(2.0 * M_PI * b);
}

absl::Status FillSpec(const pb::TensorSpec& spec, size_t index, tools::HostParam& p) {
  tools::NpyArray& a = p.before;
  const int64_t n = a.num_elements();
  switch (spec.init()) {
  case pb::TensorSpec::INIT_UNSPECIFIED:
  case pb::TensorSpec::INIT_ZEROS:
    return absl::OkStatus(); // the data starts zeroed
  case pb::TensorSpec::INIT_ONES:
    for (int64_t i = 0; i < n; ++i) SetElement(a, i, 1.0);
    return absl::OkStatus();
  case pb::TensorSpec::INIT_ARANGE:
    for (int64_t i = 0; i < n; ++i) SetElement(a, i, static_cast<double>(i));
    return absl::OkStatus();
  case pb::TensorSpec::INIT_RANDOM_UNIFORM:
    tools::FillRandom(a, spec.seed(), index);
    return absl::OkStatus();
  case pb::TensorSpec::INIT_RANDOM_NORMAL: {
    // Two uniforms per element from the same generator as FillRandom.
    tools::NpyArray uniform;
    uniform.dtype = DType::kFloat64;
    uniform.shape = {2 * n};
    uniform.data.assign(static_cast<size_t>(2 * n) * sizeof(double), '\0');
    tools::FillRandom(uniform, spec.seed(), index);
    for (int64_t i = 0; i < n; ++i) {
      double v = BoxMuller(Load<double>(uniform, 2 * i), Load<double>(uniform, 2 * i + 1));
      if (!ir::IsFloat(a.dtype)) v = std::nearbyint(v);
      SetElement(a, i, v);
    }
    return absl::OkStatus();
  }
  case pb::TensorSpec::INIT_BYTES:
    if (spec.data().size() != a.data.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", index, " '", spec.name(), "': INIT_BYTES data holds ",
                       spec.data().size(), " bytes, its ", std::string(ir::DTypeName(a.dtype)),
                       " shape ", tools::FormatShape(a.shape), " needs ", a.data.size()));
    }
    a.data = spec.data();
    return absl::OkStatus();
  default:
    return absl::InvalidArgumentError(
        absl::StrCat("argument ", index, " '", spec.name(), "': unknown init ", spec.init()));
  }
}

absl::Status FillScalar(const pb::TensorSpec& spec, size_t index, tools::HostParam& p) {
  const pb::BindingValue& v = spec.scalar();
  switch (v.value_case()) {
  case pb::BindingValue::kIntValue:
    SetElement(p.before, 0, static_cast<double>(v.int_value()));
    // 64-bit integers keep every bit, not only the 53 a double holds.
    if (p.dtype == DType::kInt64 || p.dtype == DType::kUInt64) {
      Store<int64_t>(p.before, 0, v.int_value());
    }
    return absl::OkStatus();
  case pb::BindingValue::kFloatValue:
    SetElement(p.before, 0, v.float_value());
    return absl::OkStatus();
  case pb::BindingValue::kBoolValue:
    SetElement(p.before, 0, v.bool_value() ? 1.0 : 0.0);
    return absl::OkStatus();
  default:
    return absl::InvalidArgumentError(absl::StrCat(
        "argument ", index, " '", spec.name(), "': a scalar needs an int, float or bool value"));
  }
}

} // namespace

absl::StatusOr<DType> DTypeFromWire(pb::DType dtype) {
  switch (dtype) {
  case pb::DTYPE_BOOL:
    return DType::kBool;
  case pb::DTYPE_INT8:
    return DType::kInt8;
  case pb::DTYPE_INT16:
    return DType::kInt16;
  case pb::DTYPE_INT32:
    return DType::kInt32;
  case pb::DTYPE_INT64:
    return DType::kInt64;
  case pb::DTYPE_UINT8:
    return DType::kUInt8;
  case pb::DTYPE_UINT16:
    return DType::kUInt16;
  case pb::DTYPE_UINT32:
    return DType::kUInt32;
  case pb::DTYPE_UINT64:
    return DType::kUInt64;
  case pb::DTYPE_FLOAT16:
    return DType::kFloat16;
  case pb::DTYPE_BFLOAT16:
    return DType::kBFloat16;
  case pb::DTYPE_FLOAT32:
    return DType::kFloat32;
  case pb::DTYPE_FLOAT64:
    return DType::kFloat64;
  case pb::DTYPE_FLOAT8_E4M3:
    return DType::kFloat8E4M3;
  case pb::DTYPE_FLOAT8_E5M2:
    return DType::kFloat8E5M2;
  default:
    return absl::InvalidArgumentError(
        absl::StrCat("dtype ", static_cast<int>(dtype), " is unspecified or unknown"));
  }
}

pb::DType DTypeToWire(DType dtype) {
  switch (dtype) {
  case DType::kBool:
    return pb::DTYPE_BOOL;
  case DType::kInt8:
    return pb::DTYPE_INT8;
  case DType::kInt16:
    return pb::DTYPE_INT16;
  case DType::kInt32:
    return pb::DTYPE_INT32;
  case DType::kInt64:
    return pb::DTYPE_INT64;
  case DType::kUInt8:
    return pb::DTYPE_UINT8;
  case DType::kUInt16:
    return pb::DTYPE_UINT16;
  case DType::kUInt32:
    return pb::DTYPE_UINT32;
  case DType::kUInt64:
    return pb::DTYPE_UINT64;
  case DType::kFloat16:
    return pb::DTYPE_FLOAT16;
  case DType::kBFloat16:
    return pb::DTYPE_BFLOAT16;
  case DType::kFloat32:
    return pb::DTYPE_FLOAT32;
  case DType::kFloat64:
    return pb::DTYPE_FLOAT64;
  case DType::kFloat8E4M3:
    return pb::DTYPE_FLOAT8_E4M3;
  case DType::kFloat8E5M2:
    return pb::DTYPE_FLOAT8_E5M2;
  }
  return pb::DTYPE_UNSPECIFIED;
}

const float* detail::HalfToFloatTable() {
  static const std::vector<float>* const table = [] {
    auto* t = new std::vector<float>(1 << 16);
    for (uint32_t b = 0; b < (1u << 16); ++b) {
      (*t)[b] = rt::half_to_float(rt::half_t{static_cast<uint16_t>(b)});
    }
    return t;
  }();
  return table->data();
}

double GetElement(ir::DType dtype, const char* data, int64_t i) {
  return WithElementReader(dtype, [&](auto read) { return read(data, i); });
}

double GetElement(const tools::NpyArray& a, int64_t i) {
  return GetElement(a.dtype, a.data.data(), i);
}

void SetElement(tools::NpyArray& a, int64_t i, double v) {
  const auto f = static_cast<float>(v);
  switch (a.dtype) {
  case DType::kBool:
    Store<uint8_t>(a, i, v != 0 ? 1 : 0);
    return;
  case DType::kInt8:
  case DType::kUInt8:
    Store<uint8_t>(a, i, static_cast<uint8_t>(WrapToBits(v)));
    return;
  case DType::kInt16:
  case DType::kUInt16:
    Store<uint16_t>(a, i, static_cast<uint16_t>(WrapToBits(v)));
    return;
  case DType::kInt32:
  case DType::kUInt32:
    Store<uint32_t>(a, i, static_cast<uint32_t>(WrapToBits(v)));
    return;
  case DType::kInt64:
  case DType::kUInt64:
    Store<uint64_t>(a, i, WrapToBits(v));
    return;
  case DType::kFloat16:
    Store<uint16_t>(a, i, rt::float_to_half(f).bits);
    return;
  case DType::kBFloat16:
    Store<uint16_t>(a, i, rt::float_to_bfloat16(f).bits);
    return;
  case DType::kFloat32:
    Store<float>(a, i, f);
    return;
  case DType::kFloat64:
    Store<double>(a, i, v);
    return;
  case DType::kFloat8E4M3:
    Store<uint8_t>(a, i, rt::float_to_e4m3(f).bits);
    return;
  case DType::kFloat8E5M2:
    Store<uint8_t>(a, i, rt::float_to_e5m2(f).bits);
    return;
  }
}

absl::StatusOr<std::vector<tools::HostParam>>
MakeHostParams(const google::protobuf::RepeatedPtrField<pb::TensorSpec>& specs,
               size_t max_total_bytes, InputCache* cache) {
  return MakeHostParams(specs, max_total_bytes, cache, LazyParams{});
}

absl::StatusOr<std::vector<tools::HostParam>>
MakeHostParams(const google::protobuf::RepeatedPtrField<pb::TensorSpec>& specs,
               size_t max_total_bytes, InputCache* cache, const LazyParams& lazy) {
  std::vector<tools::HostParam> params;
  params.reserve(specs.size());
  size_t total = 0;
  for (int i = 0; i < specs.size(); ++i) {
    const pb::TensorSpec& spec = specs[i];
    const auto index = static_cast<size_t>(i);
    absl::StatusOr<DType> dtype = DTypeFromWire(spec.dtype());
    if (!dtype.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", i, " '", spec.name(), "': ", dtype.status().message()));
    }
    tools::HostParam p;
    p.name = spec.name();
    p.dtype = *dtype;
    p.is_scalar = spec.has_scalar();
    p.is_output = spec.is_output() && !p.is_scalar;
    p.before.dtype = *dtype;
    int64_t elements = 1;
    if (!p.is_scalar) {
      for (int64_t extent : spec.shape()) {
        if (extent < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("argument ", i, " '", spec.name(), "' has a negative extent"));
        }
        // 2^40 elements is far beyond any memory; the bound keeps sizes exact.
        if (extent != 0 && elements > (int64_t{1} << 40) / extent) {
          return absl::ResourceExhaustedError(
              absl::StrCat("argument ", i, " '", spec.name(), "' is too large"));
        }
        elements *= extent;
        p.before.shape.push_back(extent);
      }
    }
    const auto bytes = static_cast<size_t>(elements * tools::DTypeBytes(*dtype));
    total += bytes;
    if (total > max_total_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the kernel arguments need more than ", max_total_bytes,
                       " bytes of host memory (argument ", i, " '", spec.name(), "')"));
    }
    const std::string key = cache != nullptr ? InputCache::KeyFor(spec, index) : "";
    if (!p.is_scalar && ((lazy.zeros && IsZeroInit(spec)) ||
                         (!key.empty() && lazy.resident && lazy.resident(key)))) {
      params.push_back(std::move(p)); // the backend makes the bytes
      continue;
    }
    const std::string* cached = key.empty() ? nullptr : cache->Find(key);
    if (cached != nullptr && cached->size() == bytes) {
      p.before.data = *cached;
    } else {
      p.before.data.assign(bytes, '\0');
      if (absl::Status s = p.is_scalar ? FillScalar(spec, index, p) : FillSpec(spec, index, p);
          !s.ok()) {
        return s;
      }
      if (!key.empty() && !lazy.leave_cache_to_caller) cache->Insert(key, p.before.data);
    }
    params.push_back(std::move(p));
  }
  return params;
}

bool IsZeroInit(const pb::TensorSpec& spec) {
  return !spec.has_scalar() && (spec.init() == pb::TensorSpec::INIT_ZEROS ||
                                spec.init() == pb::TensorSpec::INIT_UNSPECIFIED);
}

std::string FormatIndex(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 0) {
      index[d] = flat % shape[d];
      flat /= shape[d];
    }
  }
  return absl::StrCat("[", absl::StrJoin(index, ", "), "]");
}

} // namespace kiln::measure
