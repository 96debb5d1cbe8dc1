#include "tuner/measure/cuda_driver.h"

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include <dlfcn.h>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace kiln::measure {

// Declared here rather than taken from cuda.h so that Kiln builds where the
// CUDA headers are absent; these signatures are the driver's stable C ABI.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long; // NOLINT(google-runtime-int): the ABI type
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUevent = void*;
using CUstream = void*;
using CUgraph = void*;
using CUgraphExec = void*;

struct CudaApi {
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int*);
  CUresult (*DeviceGetCount)(int*);
  CUresult (*DeviceGet)(CUdevice*, int);
  CUresult (*DeviceGetName)(char*, int, CUdevice);
  CUresult (*DeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*CtxSynchronize)();
  CUresult (*ModuleLoadData)(CUmodule*, const void*);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*FuncSetAttribute)(CUfunction, int, int);
  CUresult (*MemAlloc)(CUdeviceptr*, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t);
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t);
  CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**);
  CUresult (*EventCreate)(CUevent*, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*GetErrorName)(CUresult, const char**);
  CUresult (*GetErrorString)(CUresult, const char**);
  CUresult (*DeviceTotalMem)(size_t*, CUdevice);
  CUresult (*FuncGetAttribute)(int*, int, CUfunction);
  CUresult (*StreamCreate)(CUstream*, unsigned);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*MemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
  // Optional (graphs): null when the driver lacks them.
  CUresult (*StreamBeginCapture)(CUstream, int);
  CUresult (*StreamEndCapture)(CUstream, CUgraph*);
  CUresult (*GraphInstantiateWithFlags)(CUgraphExec*, CUgraph,
                                        unsigned long long); // NOLINT(google-runtime-int)
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);
  CUresult (*GraphExecDestroy)(CUgraphExec);
  CUresult (*GraphDestroy)(CUgraph);
  // Optional (Hopper TMA, CUDA 12.0): null when the driver lacks it.
  CUresult (*TensorMapEncodeTiled)(CuTensorMap*, int, unsigned, void*,
                                   const unsigned long long*, // NOLINT(google-runtime-int)
                                   const unsigned long long*, // NOLINT(google-runtime-int)
                                   const unsigned*, const unsigned*, int, int, int, int);
};

namespace {

constexpr CUresult kSuccess = 0;
constexpr int kAttrMaxSharedPerBlock = 8;
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kAttrMaxSharedPerBlockOptin = 97;
constexpr int kFuncAttrMaxDynamicSharedSize = 8;
constexpr unsigned kStreamNonBlocking = 1;
constexpr int kCaptureModeThreadLocal = 1;
constexpr char kCudaResultPayload[] = "kiln.dev/cuda-result";

// Resolves the first of `names` the library exports: versioned entry points
// (_v2) come first, the names older drivers export after them.
template <typename Fn>
bool Resolve(void* handle, std::initializer_list<const char*> names, Fn*& out,
             std::vector<std::string>* missing) {
  for (const char* name : names) {
    out = reinterpret_cast<Fn*>(dlsym(handle, name));
    if (out != nullptr) return true;
  }
  missing->emplace_back(*names.begin());
  return false;
}

absl::Status StatusFor(CUresult result, absl::string_view message) {
  switch (result) {
  case 1:   // CUDA_ERROR_INVALID_VALUE
  case 101: // CUDA_ERROR_INVALID_DEVICE
  case 200: // CUDA_ERROR_INVALID_IMAGE
  case 209: // CUDA_ERROR_NO_BINARY_FOR_GPU
  case 218: // CUDA_ERROR_INVALID_PTX
  case 222: // CUDA_ERROR_UNSUPPORTED_PTX_VERSION
    return absl::InvalidArgumentError(message);
  case 2:   // CUDA_ERROR_OUT_OF_MEMORY
  case 701: // CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    return absl::ResourceExhaustedError(message);
  case 3:   // CUDA_ERROR_NOT_INITIALIZED
  case 34:  // CUDA_ERROR_STUB_LIBRARY
  case 35:  // CUDA_ERROR_INSUFFICIENT_DRIVER
  case 100: // CUDA_ERROR_NO_DEVICE
  case 304: // CUDA_ERROR_OPERATING_SYSTEM
    return absl::UnavailableError(message);
  case 500: // CUDA_ERROR_NOT_FOUND
    return absl::NotFoundError(message);
  default:
    return absl::InternalError(message);
  }
}

} // namespace

// --- CudaDriver --------------------------------------------------------------

absl::StatusOr<std::shared_ptr<CudaDriver>> CudaDriver::Load(const std::string& library) {
  dlerror();
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return absl::NotFoundError(absl::StrCat(
        "CUDA driver not found: cannot load ", library, " (", err != nullptr ? err : "?",
        "); is the NVIDIA driver installed and a GPU attached?"));
  }
  std::shared_ptr<CudaDriver> driver(new CudaDriver());
  driver->handle_ = handle;
  driver->api_ = std::make_unique<CudaApi>();
  CudaApi& a = *driver->api_;
  std::vector<std::string> missing;
  Resolve(handle, {"cuInit"}, a.Init, &missing);
  Resolve(handle, {"cuDriverGetVersion"}, a.DriverGetVersion, &missing);
  Resolve(handle, {"cuDeviceGetCount"}, a.DeviceGetCount, &missing);
  Resolve(handle, {"cuDeviceGet"}, a.DeviceGet, &missing);
  Resolve(handle, {"cuDeviceGetName"}, a.DeviceGetName, &missing);
  Resolve(handle, {"cuDeviceGetAttribute"}, a.DeviceGetAttribute, &missing);
  Resolve(handle, {"cuDevicePrimaryCtxRetain"}, a.DevicePrimaryCtxRetain, &missing);
  Resolve(handle, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"},
          a.DevicePrimaryCtxRelease, &missing);
  Resolve(handle, {"cuCtxSetCurrent"}, a.CtxSetCurrent, &missing);
  Resolve(handle, {"cuCtxSynchronize"}, a.CtxSynchronize, &missing);
  Resolve(handle, {"cuModuleLoadData"}, a.ModuleLoadData, &missing);
  Resolve(handle, {"cuModuleUnload"}, a.ModuleUnload, &missing);
  Resolve(handle, {"cuModuleGetFunction"}, a.ModuleGetFunction, &missing);
  Resolve(handle, {"cuFuncSetAttribute"}, a.FuncSetAttribute, &missing);
  Resolve(handle, {"cuMemAlloc_v2"}, a.MemAlloc, &missing);
  Resolve(handle, {"cuMemFree_v2"}, a.MemFree, &missing);
  Resolve(handle, {"cuMemcpyHtoD_v2"}, a.MemcpyHtoD, &missing);
  Resolve(handle, {"cuMemcpyDtoH_v2"}, a.MemcpyDtoH, &missing);
  Resolve(handle, {"cuMemcpyDtoD_v2"}, a.MemcpyDtoD, &missing);
  Resolve(handle, {"cuMemsetD8_v2"}, a.MemsetD8, &missing);
  Resolve(handle, {"cuLaunchKernel"}, a.LaunchKernel, &missing);
  Resolve(handle, {"cuEventCreate"}, a.EventCreate, &missing);
  Resolve(handle, {"cuEventRecord"}, a.EventRecord, &missing);
  Resolve(handle, {"cuEventSynchronize"}, a.EventSynchronize, &missing);
  Resolve(handle, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, a.EventElapsedTime, &missing);
  Resolve(handle, {"cuEventDestroy_v2", "cuEventDestroy"}, a.EventDestroy, &missing);
  Resolve(handle, {"cuGetErrorName"}, a.GetErrorName, &missing);
  Resolve(handle, {"cuGetErrorString"}, a.GetErrorString, &missing);
  Resolve(handle, {"cuDeviceTotalMem_v2"}, a.DeviceTotalMem, &missing);
  Resolve(handle, {"cuFuncGetAttribute"}, a.FuncGetAttribute, &missing);
  Resolve(handle, {"cuStreamCreate"}, a.StreamCreate, &missing);
  Resolve(handle, {"cuStreamDestroy_v2", "cuStreamDestroy"}, a.StreamDestroy, &missing);
  Resolve(handle, {"cuStreamSynchronize"}, a.StreamSynchronize, &missing);
  Resolve(handle, {"cuMemsetD8Async"}, a.MemsetD8Async, &missing);
  std::vector<std::string> optional_missing;
  Resolve(handle, {"cuStreamBeginCapture_v2", "cuStreamBeginCapture"}, a.StreamBeginCapture,
          &optional_missing);
  Resolve(handle, {"cuStreamEndCapture"}, a.StreamEndCapture, &optional_missing);
  Resolve(handle, {"cuGraphInstantiateWithFlags"}, a.GraphInstantiateWithFlags, &optional_missing);
  Resolve(handle, {"cuGraphLaunch"}, a.GraphLaunch, &optional_missing);
  Resolve(handle, {"cuGraphExecDestroy"}, a.GraphExecDestroy, &optional_missing);
  Resolve(handle, {"cuGraphDestroy"}, a.GraphDestroy, &optional_missing);
  Resolve(handle, {"cuTensorMapEncodeTiled"}, a.TensorMapEncodeTiled, &optional_missing);
  if (!missing.empty()) {
    return absl::UnavailableError(absl::StrCat("CUDA driver ", library, " lacks ",
                                               absl::StrJoin(missing, ", "), " (driver too old?)"));
  }
  if (absl::Status s = driver->Check(a.Init(0), "cuInit"); !s.ok()) {
    return absl::UnavailableError(absl::StrCat("CUDA driver unusable: ", s.message()));
  }
  if (absl::Status s = driver->Check(a.DriverGetVersion(&driver->version_), "cuDriverGetVersion");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = driver->Check(a.DeviceGetCount(&driver->device_count_), "cuDeviceGetCount");
      !s.ok()) {
    return s;
  }
  if (driver->device_count_ == 0) {
    return absl::UnavailableError("CUDA driver loaded but it sees no GPU");
  }
  return driver;
}

CudaDriver::~CudaDriver() {
  if (handle_ != nullptr) dlclose(handle_);
}

absl::Status CudaDriver::Check(int result, std::string_view what_in) const {
  const absl::string_view what(what_in.data(), what_in.size());
  if (result == kSuccess) return absl::OkStatus();
  const char* name = nullptr;
  const char* text = nullptr;
  if (api_->GetErrorName == nullptr || api_->GetErrorName(result, &name) != kSuccess) {
    name = nullptr;
  }
  if (api_->GetErrorString == nullptr || api_->GetErrorString(result, &text) != kSuccess) {
    text = nullptr;
  }
  const std::string shown_name =
      name != nullptr ? std::string(name) : absl::StrCat("CUDA error ", result);
  absl::Status status =
      StatusFor(result, absl::StrCat(what, ": ", shown_name, " (",
                                     text != nullptr ? text : "no description", ")"));
  status.SetPayload(kCudaResultPayload, absl::Cord(absl::StrCat(result)));
  return status;
}

bool CudaDriver::has_graphs() const {
  return api_->StreamBeginCapture != nullptr && api_->StreamEndCapture != nullptr &&
         api_->GraphInstantiateWithFlags != nullptr && api_->GraphLaunch != nullptr &&
         api_->GraphExecDestroy != nullptr && api_->GraphDestroy != nullptr;
}

bool CudaDriver::has_tensor_maps() const { return api_->TensorMapEncodeTiled != nullptr; }

absl::StatusOr<CuTensorMap> EncodeTensorMap(const CudaDriver& driver, const std::string& name,
                                            const TensorMapEncoding& e) {
  if (!driver.has_tensor_maps()) {
    return absl::UnimplementedError(absl::StrCat(
        "tensor map for '", name,
        "': this CUDA driver has no cuTensorMapEncodeTiled (CUDA 12.0 or newer is needed for "
        "kernels that load tiles with the TMA)"));
  }
  if (e.rank < 1 || e.rank > static_cast<uint32_t>(kMaxTensorMapRank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor map for '", name, "': rank ", e.rank, " is outside 1..5"));
  }
  static_assert(sizeof(unsigned long long) == sizeof(uint64_t)); // NOLINT(google-runtime-int)
  std::array<unsigned long long, kMaxTensorMapRank> dims{};      // NOLINT(google-runtime-int)
  std::array<unsigned long long, kMaxTensorMapRank> strides{};   // NOLINT(google-runtime-int)
  std::copy(e.global_dim.begin(), e.global_dim.end(), dims.begin());
  std::copy(e.global_strides.begin(), e.global_strides.end(), strides.begin());
  CuTensorMap map;
  // The driver takes the device address (never dereferenced here) as void*.
  void* global = reinterpret_cast<void*>(e.global_address); // NOLINT(performance-no-int-to-ptr)
  const CUresult result = driver.api().TensorMapEncodeTiled(
      &map, e.data_type, e.rank, global, dims.data(), strides.data(), e.box_dim.data(),
      e.element_strides.data(), e.interleave, e.swizzle, e.l2_promotion, e.oob_fill);
  if (absl::Status s = driver.Check(result, "cuTensorMapEncodeTiled"); !s.ok()) {
    absl::Status out = absl::InvalidArgumentError(absl::StrCat(
        "tensor map for '", name, "': ", s.message(), "; rank ", e.rank, ", dims [",
        absl::StrJoin(e.global_dim.begin(), e.global_dim.begin() + e.rank, ", "), "], strides [",
        absl::StrJoin(e.global_strides.begin(), e.global_strides.begin() + (e.rank - 1), ", "),
        "], box [", absl::StrJoin(e.box_dim.begin(), e.box_dim.begin() + e.rank, ", "),
        "], swizzle ", e.swizzle, " (innermost first)"));
    if (auto payload = s.GetPayload(kCudaResultPayload))
      out.SetPayload(kCudaResultPayload, *payload);
    return out;
  }
  return map;
}

std::optional<int> CudaResultOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kCudaResultPayload);
  int result = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(static_cast<std::string>(*payload), &result)) {
    return std::nullopt;
  }
  return result;
}

bool IsContextFatal(const absl::Status& status) {
  std::optional<int> result = CudaResultOf(status);
  if (!result.has_value()) return false;
  switch (*result) {
  case 4:   // CUDA_ERROR_DEINITIALIZED
  case 214: // CUDA_ERROR_ECC_UNCORRECTABLE
  case 220: // CUDA_ERROR_NVLINK_UNCORRECTABLE
  case 700: // CUDA_ERROR_ILLEGAL_ADDRESS
  case 702: // CUDA_ERROR_LAUNCH_TIMEOUT
  case 709: // CUDA_ERROR_CONTEXT_IS_DESTROYED
  case 710: // CUDA_ERROR_ASSERT
  case 714: // CUDA_ERROR_HARDWARE_STACK_ERROR
  case 715: // CUDA_ERROR_ILLEGAL_INSTRUCTION
  case 716: // CUDA_ERROR_MISALIGNED_ADDRESS
  case 717: // CUDA_ERROR_INVALID_ADDRESS_SPACE
  case 718: // CUDA_ERROR_INVALID_PC
  case 719: // CUDA_ERROR_LAUNCH_FAILED
  case 999: // CUDA_ERROR_UNKNOWN
    return true;
  default:
    return false;
  }
}

// --- Device ------------------------------------------------------------------

std::string DeviceProperties::arch() const { return absl::StrCat("sm_", cc_major, cc_minor); }

absl::StatusOr<std::shared_ptr<Device>> Device::Open(std::shared_ptr<CudaDriver> driver,
                                                     int ordinal) {
  if (ordinal < 0 || ordinal >= driver->device_count()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no CUDA device ", ordinal, ": ", driver->device_count(),
                     " device(s) visible (0..", driver->device_count() - 1, ")"));
  }
  const CudaApi& a = driver->api();
  std::shared_ptr<Device> device(new Device());
  device->driver_ = std::move(driver);
  const CudaDriver& drv = *device->driver_;
  DeviceProperties& p = device->properties_;
  p.ordinal = ordinal;
  if (absl::Status s = drv.Check(a.DeviceGet(&device->handle_, ordinal), "cuDeviceGet"); !s.ok()) {
    return s;
  }
  char name[256] = {0};
  if (absl::Status s =
          drv.Check(a.DeviceGetName(name, sizeof(name) - 1, device->handle_), "cuDeviceGetName");
      !s.ok()) {
    return s;
  }
  p.name = name;
  struct Attr {
    int attr;
    const char* what;
    int* out;
  };
  int smem = 0, smem_optin = 0;
  for (const Attr& attr :
       {Attr{kAttrComputeCapabilityMajor, "compute capability major", &p.cc_major},
        Attr{kAttrComputeCapabilityMinor, "compute capability minor", &p.cc_minor},
        Attr{kAttrMultiprocessorCount, "multiprocessor count", &p.multiprocessors},
        Attr{kAttrMaxSharedPerBlock, "max shared memory per block", &smem},
        Attr{kAttrMaxSharedPerBlockOptin, "max shared memory per block (opt-in)", &smem_optin}}) {
    if (absl::Status s = drv.Check(a.DeviceGetAttribute(attr.out, attr.attr, device->handle_),
                                   absl::StrCat("cuDeviceGetAttribute(", attr.what, ")"));
        !s.ok()) {
      return s;
    }
  }
  p.max_shared_per_block = smem;
  p.max_shared_per_block_optin = smem_optin;
  CUcontext context = nullptr;
  if (absl::Status s = drv.Check(a.DevicePrimaryCtxRetain(&context, device->handle_),
                                 "cuDevicePrimaryCtxRetain");
      !s.ok()) {
    return s;
  }
  device->context_ = context;
  if (absl::Status s = device->MakeCurrent(); !s.ok()) return s;
  return device;
}

Device::~Device() {
  if (context_ != nullptr) driver_->api().DevicePrimaryCtxRelease(handle_);
}

absl::Status Device::MakeCurrent() const {
  return driver_->Check(driver_->api().CtxSetCurrent(context_), "cuCtxSetCurrent");
}

absl::Status Device::Synchronize() const {
  if (absl::Status s = MakeCurrent(); !s.ok()) return s;
  return driver_->Check(driver_->api().CtxSynchronize(), "cuCtxSynchronize");
}

absl::StatusOr<int> Device::Attribute(int attribute) const {
  int value = 0;
  if (absl::Status s = driver_->Check(driver_->api().DeviceGetAttribute(&value, attribute, handle_),
                                      absl::StrCat("cuDeviceGetAttribute(", attribute, ")"));
      !s.ok()) {
    return s;
  }
  return value;
}

absl::StatusOr<int64_t> Device::TotalMemoryBytes() const {
  size_t bytes = 0;
  if (absl::Status s =
          driver_->Check(driver_->api().DeviceTotalMem(&bytes, handle_), "cuDeviceTotalMem");
      !s.ok()) {
    return s;
  }
  return static_cast<int64_t>(bytes);
}

// --- Stream ------------------------------------------------------------------

absl::StatusOr<Stream> Stream::Create(std::shared_ptr<Device> device) {
  if (absl::Status s = device->MakeCurrent(); !s.ok()) return s;
  CUstream handle = nullptr;
  if (absl::Status s = device->driver().Check(
          device->driver().api().StreamCreate(&handle, kStreamNonBlocking), "cuStreamCreate");
      !s.ok()) {
    return s;
  }
  Stream stream;
  stream.device_ = std::move(device);
  stream.handle_ = handle;
  return stream;
}

Stream::Stream(Stream&& other) noexcept
    : device_(std::move(other.device_)), handle_(std::exchange(other.handle_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream old(std::move(*this));
    device_ = std::move(other.device_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Stream::~Stream() {
  if (handle_ == nullptr) return;
  (void)device_->MakeCurrent();
  device_->driver().api().StreamDestroy(handle_);
}

absl::Status Stream::Synchronize() const {
  return device_->driver().Check(device_->driver().api().StreamSynchronize(handle_),
                                 "cuStreamSynchronize");
}

// --- Module ------------------------------------------------------------------

absl::StatusOr<Module> Module::Load(std::shared_ptr<Device> device, std::string_view image) {
  if (absl::Status s = device->MakeCurrent(); !s.ok()) return s;
  // PTX must be NUL-terminated; a cubin is unaffected by the extra byte.
  std::string copy(image);
  CUmodule handle = nullptr;
  if (absl::Status s = device->driver().Check(
          device->driver().api().ModuleLoadData(&handle, copy.c_str()), "cuModuleLoadData");
      !s.ok()) {
    return s;
  }
  Module module;
  module.device_ = std::move(device);
  module.handle_ = handle;
  return module;
}

Module::Module(Module&& other) noexcept
    : device_(std::move(other.device_)), handle_(std::exchange(other.handle_, nullptr)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    Module old(std::move(*this));
    device_ = std::move(other.device_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Module::~Module() {
  if (handle_ == nullptr) return;
  // Unloading acts on the current context.
  (void)device_->MakeCurrent();
  device_->driver().api().ModuleUnload(handle_);
}

absl::StatusOr<Function> Module::GetFunction(const std::string& name) const {
  CUfunction fn = nullptr;
  absl::Status s =
      device_->driver().Check(device_->driver().api().ModuleGetFunction(&fn, handle_, name.c_str()),
                              absl::StrCat("cuModuleGetFunction(", name, ")"));
  if (!s.ok()) return s;
  return Function{fn, name, device_.get()};
}

// --- DeviceBuffer --------------------------------------------------------------

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(std::shared_ptr<Device> device, size_t bytes) {
  DeviceBuffer buffer;
  if (bytes > 0) {
    if (absl::Status s = device->MakeCurrent(); !s.ok()) return s;
    CUdeviceptr address = 0;
    if (absl::Status s = device->driver().Check(device->driver().api().MemAlloc(&address, bytes),
                                                absl::StrCat("cuMemAlloc(", bytes, " bytes)"));
        !s.ok()) {
      return s;
    }
    buffer.address_ = address;
  }
  buffer.device_ = std::move(device);
  buffer.size_ = bytes;
  return buffer;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : device_(std::move(other.device_)), address_(std::exchange(other.address_, 0)),
      size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer old(std::move(*this));
    device_ = std::move(other.device_);
    address_ = std::exchange(other.address_, 0);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (address_ == 0) return;
  (void)device_->MakeCurrent();
  device_->driver().api().MemFree(address_);
}

absl::Status DeviceBuffer::CopyFromHost(const void* data, size_t bytes) {
  if (bytes != size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("host-to-device copy of ", bytes, " bytes into a buffer of ", size_));
  }
  if (bytes == 0) return absl::OkStatus();
  if (absl::Status s = device_->MakeCurrent(); !s.ok()) return s;
  return device_->driver().Check(device_->driver().api().MemcpyHtoD(address_, data, bytes),
                                 "cuMemcpyHtoD");
}

absl::Status DeviceBuffer::CopyToHost(void* data, size_t bytes) const {
  if (bytes != size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("device-to-host copy of ", bytes, " bytes from a buffer of ", size_));
  }
  if (bytes == 0) return absl::OkStatus();
  if (absl::Status s = device_->MakeCurrent(); !s.ok()) return s;
  return device_->driver().Check(device_->driver().api().MemcpyDtoH(data, address_, bytes),
                                 "cuMemcpyDtoH");
}

absl::Status DeviceBuffer::CopyFrom(const DeviceBuffer& source) {
  if (source.size_ != size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("device-to-device copy of ", source.size_, " bytes into a buffer of ", size_));
  }
  if (size_ == 0) return absl::OkStatus();
  if (absl::Status s = device_->MakeCurrent(); !s.ok()) return s;
  return device_->driver().Check(
      device_->driver().api().MemcpyDtoD(address_, source.address_, size_), "cuMemcpyDtoD");
}

absl::Status DeviceBuffer::Fill(uint8_t byte) {
  if (size_ == 0) return absl::OkStatus();
  if (absl::Status s = device_->MakeCurrent(); !s.ok()) return s;
  return device_->driver().Check(device_->driver().api().MemsetD8(address_, byte, size_),
                                 "cuMemsetD8");
}

absl::Status DeviceBuffer::FillAsync(uint8_t byte, const Stream& stream) {
  if (size_ == 0) return absl::OkStatus();
  return device_->driver().Check(
      device_->driver().api().MemsetD8Async(address_, byte, size_, stream.handle()),
      "cuMemsetD8Async");
}

// --- Event -------------------------------------------------------------------

absl::StatusOr<Event> Event::Create(std::shared_ptr<Device> device) {
  if (absl::Status s = device->MakeCurrent(); !s.ok()) return s;
  CUevent handle = nullptr;
  if (absl::Status s =
          device->driver().Check(device->driver().api().EventCreate(&handle, 0), "cuEventCreate");
      !s.ok()) {
    return s;
  }
  Event event;
  event.device_ = std::move(device);
  event.handle_ = handle;
  return event;
}

Event::Event(Event&& other) noexcept
    : device_(std::move(other.device_)), handle_(std::exchange(other.handle_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event old(std::move(*this));
    device_ = std::move(other.device_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

Event::~Event() {
  if (handle_ == nullptr) return;
  (void)device_->MakeCurrent();
  device_->driver().api().EventDestroy(handle_);
}

absl::Status Event::Record(const Stream* stream) {
  return device_->driver().Check(
      device_->driver().api().EventRecord(handle_, stream != nullptr ? stream->handle() : nullptr),
      "cuEventRecord");
}

absl::StatusOr<float> Event::ElapsedMsSince(const Event& start) const {
  const CudaDriver& driver = device_->driver();
  if (absl::Status s = driver.Check(driver.api().EventSynchronize(handle_), "cuEventSynchronize");
      !s.ok()) {
    return s;
  }
  float ms = 0;
  if (absl::Status s = driver.Check(driver.api().EventElapsedTime(&ms, start.handle_, handle_),
                                    "cuEventElapsedTime");
      !s.ok()) {
    return s;
  }
  return ms;
}

// --- Launch ------------------------------------------------------------------

absl::Status Launch(const Function& function, const LaunchConfig& config, void** args,
                    const Stream* stream) {
  if (function.handle == nullptr || function.device == nullptr) {
    return absl::InvalidArgumentError("Launch: no function");
  }
  for (int d = 0; d < 3; ++d) {
    if (config.grid[d] == 0 || config.block[d] == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("Launch of ", function.name, ": empty grid or block (grid ", config.grid[0],
                       "x", config.grid[1], "x", config.grid[2], ", block ", config.block[0], "x",
                       config.block[1], "x", config.block[2], ")"));
    }
  }
  const Device& device = *function.device;
  const CudaDriver& driver = device.driver();
  if (absl::Status s = device.MakeCurrent(); !s.ok()) return s;
  if (config.dynamic_smem_bytes > kDefaultDynamicSmemLimit) {
    const int64_t limit = device.properties().max_shared_per_block_optin;
    if (config.dynamic_smem_bytes > limit) {
      return absl::InvalidArgumentError(
          absl::StrCat("Launch of ", function.name, ": ", config.dynamic_smem_bytes,
                       " bytes of dynamic shared memory exceed the device's limit of ", limit,
                       " bytes per block (", device.properties().name, ")"));
    }
    if (absl::Status s = driver.Check(
            driver.api().FuncSetAttribute(function.handle, kFuncAttrMaxDynamicSharedSize,
                                          static_cast<int>(config.dynamic_smem_bytes)),
            absl::StrCat("cuFuncSetAttribute(", function.name, ", MAX_DYNAMIC_SHARED_SIZE_BYTES)"));
        !s.ok()) {
      return s;
    }
  }
  return driver.Check(driver.api().LaunchKernel(function.handle, config.grid[0], config.grid[1],
                                                config.grid[2], config.block[0], config.block[1],
                                                config.block[2], config.dynamic_smem_bytes,
                                                stream != nullptr ? stream->handle() : nullptr,
                                                args, nullptr),
                      absl::StrCat("cuLaunchKernel(", function.name, ")"));
}

absl::StatusOr<int> FunctionAttribute(const Function& function, int attribute) {
  if (function.handle == nullptr || function.device == nullptr) {
    return absl::InvalidArgumentError("FunctionAttribute: no function");
  }
  const CudaDriver& driver = function.device->driver();
  int value = 0;
  if (absl::Status s =
          driver.Check(driver.api().FuncGetAttribute(&value, attribute, function.handle),
                       absl::StrCat("cuFuncGetAttribute(", function.name, ", ", attribute, ")"));
      !s.ok()) {
    return s;
  }
  return value;
}

// --- Graph -------------------------------------------------------------------

absl::StatusOr<Graph> Graph::Capture(std::shared_ptr<Device> device, const Stream& stream,
                                     const std::function<absl::Status()>& body) {
  const CudaDriver& driver = device->driver();
  if (!driver.has_graphs()) {
    return absl::UnimplementedError("this CUDA driver has no stream capture / graph entry points");
  }
  const CudaApi& a = driver.api();
  if (absl::Status s = device->MakeCurrent(); !s.ok()) return s;
  if (absl::Status s = driver.Check(a.StreamBeginCapture(stream.handle(), kCaptureModeThreadLocal),
                                    "cuStreamBeginCapture");
      !s.ok()) {
    return s;
  }
  absl::Status body_status = body();
  CUgraph graph = nullptr;
  absl::Status end =
      driver.Check(a.StreamEndCapture(stream.handle(), &graph), "cuStreamEndCapture");
  Graph out;
  out.device_ = std::move(device);
  out.graph_ = graph;
  if (!body_status.ok()) return body_status;
  if (!end.ok()) return end;
  CUgraphExec exec = nullptr;
  if (absl::Status s =
          driver.Check(a.GraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
      !s.ok()) {
    return s;
  }
  out.exec_ = exec;
  return out;
}

Graph::Graph(Graph&& other) noexcept
    : device_(std::move(other.device_)), graph_(std::exchange(other.graph_, nullptr)),
      exec_(std::exchange(other.exec_, nullptr)) {}

Graph& Graph::operator=(Graph&& other) noexcept {
  if (this != &other) {
    Graph old(std::move(*this));
    device_ = std::move(other.device_);
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

Graph::~Graph() {
  if (device_ == nullptr) return;
  const CudaApi& a = device_->driver().api();
  if (exec_ != nullptr) a.GraphExecDestroy(exec_);
  if (graph_ != nullptr) a.GraphDestroy(graph_);
}

absl::Status Graph::Launch(const Stream& stream) const {
  if (exec_ == nullptr) return absl::FailedPreconditionError("Graph::Launch: no graph");
  return device_->driver().Check(device_->driver().api().GraphLaunch(exec_, stream.handle()),
                                 "cuGraphLaunch");
}

absl::StatusOr<float> TimedLaunch(std::shared_ptr<Device> device, const Function& function,
                                  const LaunchConfig& config, void** args) {
  // The events share ownership of the device, which keeps `dev` alive.
  const Device& dev = *device;
  absl::StatusOr<Event> start = Event::Create(device);
  if (!start.ok()) return start.status();
  absl::StatusOr<Event> stop = Event::Create(std::move(device));
  if (!stop.ok()) return stop.status();
  if (absl::Status s = start->Record(); !s.ok()) return s;
  if (absl::Status s = Launch(function, config, args); !s.ok()) return s;
  if (absl::Status s = stop->Record(); !s.ok()) return s;
  absl::StatusOr<float> ms = stop->ElapsedMsSince(*start);
  if (!ms.ok()) return ms.status();
  // Faults of the kernel itself surface here at the latest.
  if (absl::Status s = dev.Synchronize(); !s.ok()) return s;
  return ms;
}

} // namespace kiln::measure
