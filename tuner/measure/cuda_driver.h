// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that
// nothing links libcuda: binaries built with this start (and report a clear
// error) on machines without an NVIDIA driver. A small RAII layer on top:
// CudaDriver (the library, initialised), Device (a primary context), Module
// (a loaded cubin), DeviceBuffer (device memory), Event, and Launch.
//
// Lifetimes: a Device keeps its driver alive; Module, DeviceBuffer and Event
// keep their Device (and so its primary context) alive, so they may be
// destroyed in any order. A Function is a plain handle, valid while the
// Module it came from is alive.
//
// Thread-safety: the driver API is thread-safe; these objects hold no
// mutable state of their own. The driver's current context is per thread:
// Device::Open makes the context current on the calling thread, and a thread
// that did not open the Device calls MakeCurrent() before using it.
//
// Errors: a failing driver call becomes a status whose message names the call
// and carries cuGetErrorName and cuGetErrorString, e.g.
//   "cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)".
// Codes: ResourceExhausted for out-of-memory, InvalidArgument for invalid
// values or launch configurations, Unavailable for "no device" kinds of
// failures, Internal otherwise. CudaDriver::Load: NotFound when libcuda.so.1
// cannot be loaded (no NVIDIA driver), Unavailable when cuInit fails or no
// device is visible. Every status from a failing driver call carries the
// CUresult as a payload (CudaResultOf), so callers can tell a fault that
// leaves the context unusable (IsContextFatal: illegal address, illegal
// instruction, a trap, ...) from an ordinary error.
//
// Streams and graphs (for timing): Stream is a non-blocking stream; Graph
// captures launches made on a stream into an executable CUDA graph. The graph
// entry points are optional: Graph::Capture returns Unimplemented on a driver
// that lacks them.
//
// Tensor maps (Hopper TMA): EncodeTensorMap runs cuTensorMapEncodeTiled, also
// optional (CUDA 12.0): without it only kernels that take tensor maps fail.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tuner/measure/tensor_map.h"

namespace kiln::measure {

struct CudaApi; // function pointers resolved from the library

class CudaDriver {
 public:
  // Loads `library` (a name or path, as dlopen takes it) and calls cuInit(0).
  static absl::StatusOr<std::shared_ptr<CudaDriver>>
  Load(const std::string& library = "libcuda.so.1");
  ~CudaDriver();
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  int device_count() const { return device_count_; }
  // Whether the optional stream-capture and graph entry points exist.
  bool has_graphs() const;
  // Whether the optional cuTensorMapEncodeTiled exists.
  bool has_tensor_maps() const;
  // The driver's CUDA version, e.g. 12080 for 12.8.
  int version() const { return version_; }

  // OK for CUDA_SUCCESS; otherwise the status described above, "<what>: ...".
  absl::Status Check(int result, std::string_view what) const;
  const CudaApi& api() const { return *api_; }

 private:
  CudaDriver() = default;
  void* handle_ = nullptr;
  std::unique_ptr<CudaApi> api_;
  int device_count_ = 0;
  int version_ = 0;
};

struct DeviceProperties {
  int ordinal = 0;
  std::string name; // "NVIDIA H200"
  int cc_major = 0; // compute capability
  int cc_minor = 0;
  int multiprocessors = 0;
  int64_t max_shared_per_block = 0;       // without opting in (48 KiB)
  int64_t max_shared_per_block_optin = 0; // with the function attribute
  // "sm_90" for compute capability 9.0.
  std::string arch() const;
};

class Device {
 public:
  // Retains device `ordinal`'s primary context and makes it current on the
  // calling thread. InvalidArgument for an ordinal out of range.
  static absl::StatusOr<std::shared_ptr<Device>> Open(std::shared_ptr<CudaDriver> driver,
                                                      int ordinal);
  ~Device(); // releases the primary context
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceProperties& properties() const { return properties_; }
  const CudaDriver& driver() const { return *driver_; }
  // cuDeviceGetAttribute(`attribute`): a CUdevice_attribute value.
  absl::StatusOr<int> Attribute(int attribute) const;
  // cuDeviceTotalMem.
  absl::StatusOr<int64_t> TotalMemoryBytes() const;
  absl::Status MakeCurrent() const;
  // Waits for all work on the context; reports asynchronous kernel faults.
  absl::Status Synchronize() const;

 private:
  Device() = default;
  std::shared_ptr<CudaDriver> driver_;
  int handle_ = 0;          // CUdevice
  void* context_ = nullptr; // CUcontext
  DeviceProperties properties_;
};

// A non-blocking stream on a device (no implicit synchronisation with the
// legacy default stream).
class Stream {
 public:
  static absl::StatusOr<Stream> Create(std::shared_ptr<Device> device);
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  void* handle() const { return handle_; } // CUstream
  // Waits for the stream's work; reports asynchronous kernel faults.
  absl::Status Synchronize() const;

 private:
  Stream() = default;
  std::shared_ptr<Device> device_;
  void* handle_ = nullptr;
};

// A kernel of a loaded Module.
struct Function {
  void* handle = nullptr; // CUfunction
  std::string name;
  const Device* device = nullptr;
};

class Module {
 public:
  // Loads a cubin (or PTX text, NUL-terminated by this call) on `device`.
  static absl::StatusOr<Module> Load(std::shared_ptr<Device> device, std::string_view image);
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();

  // NotFound when the module has no kernel `name` (extern "C" names).
  absl::StatusOr<Function> GetFunction(const std::string& name) const;

 private:
  Module() = default;
  std::shared_ptr<Device> device_;
  void* handle_ = nullptr; // CUmodule
};

class DeviceBuffer {
 public:
  // `bytes` of device memory (uninitialised). Zero bytes gives a buffer
  // whose address is 0.
  static absl::StatusOr<DeviceBuffer> Allocate(std::shared_ptr<Device> device, size_t bytes);
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  uint64_t address() const { return address_; } // CUdeviceptr
  size_t size() const { return size_; }
  // Copies are synchronous; sizes must equal size().
  absl::Status CopyFromHost(const void* data, size_t bytes);
  absl::Status CopyToHost(void* data, size_t bytes) const;
  // From another buffer of the same size on the same device (ordered on the
  // legacy stream, like the host copies).
  absl::Status CopyFrom(const DeviceBuffer& source);
  absl::Status Fill(uint8_t byte);
  // Fill, queued on `stream`.
  absl::Status FillAsync(uint8_t byte, const Stream& stream);

 private:
  DeviceBuffer() = default;
  std::shared_ptr<Device> device_;
  uint64_t address_ = 0;
  size_t size_ = 0;
};

class Event {
 public:
  static absl::StatusOr<Event> Create(std::shared_ptr<Device> device);
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  // Records on `stream`, or the default stream.
  absl::Status Record(const Stream* stream = nullptr);
  // Milliseconds from `start` to this event; waits for this event first.
  absl::StatusOr<float> ElapsedMsSince(const Event& start) const;

 private:
  Event() = default;
  std::shared_ptr<Device> device_;
  void* handle_ = nullptr; // CUevent
};

struct LaunchConfig {
  std::array<uint32_t, 3> grid = {1, 1, 1};
  std::array<uint32_t, 3> block = {1, 1, 1};
  uint32_t dynamic_smem_bytes = 0;
};

// Opt-in dynamic shared memory is needed above this (the 48 KiB default).
inline constexpr uint32_t kDefaultDynamicSmemLimit = 48 * 1024;

// Launches `function` on `stream` (default: the default stream),
// asynchronously; `args` is
// cuLaunchKernel's kernelParams (args[i] points at the i-th argument). Above
// kDefaultDynamicSmemLimit it first sets the function's
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; a request over the
// device's opt-in limit is InvalidArgument before anything is launched.
absl::Status Launch(const Function& function, const LaunchConfig& config, void** args,
                    const Stream* stream = nullptr);

// cuFuncGetAttribute(`attribute`): a CUfunction_attribute value.
absl::StatusOr<int> FunctionAttribute(const Function& function, int attribute);

// An executable CUDA graph.
class Graph {
 public:
  // Runs `body` with `stream` in capture mode (thread-local), then
  // instantiates what it queued there. The body's own error wins over the
  // capture's.
  static absl::StatusOr<Graph> Capture(std::shared_ptr<Device> device, const Stream& stream,
                                       const std::function<absl::Status()>& body);
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  // Queues one replay on `stream`.
  absl::Status Launch(const Stream& stream) const;

 private:
  Graph() = default;
  std::shared_ptr<Device> device_;
  void* graph_ = nullptr; // CUgraph
  void* exec_ = nullptr;  // CUgraphExec
};

// Encodes the tensor map planned in `e` (PlanTensorMap) for tensor `name`.
// Needs no current context. InvalidArgument "tensor map for 'NAME': ..." with
// the driver's error name and the encoding when the driver refuses it
// (carrying the CUresult like other driver errors); Unimplemented when the
// driver has no cuTensorMapEncodeTiled.
absl::StatusOr<CuTensorMap> EncodeTensorMap(const CudaDriver& driver, const std::string& name,
                                            const TensorMapEncoding& e);

// The CUresult a status from this file carries, if any.
std::optional<int> CudaResultOf(const absl::Status& status);
// Whether `status` is a fault after which the context cannot be used again
// (CUDA's "sticky" errors: the process must exit to recover the device).
bool IsContextFatal(const absl::Status& status);

// Launch between two events, then waits: the kernel's time in milliseconds.
// Faults during the kernel come back as the synchronising call's error.
absl::StatusOr<float> TimedLaunch(std::shared_ptr<Device> device, const Function& function,
                                  const LaunchConfig& config, void** args);

} // namespace kiln::measure
