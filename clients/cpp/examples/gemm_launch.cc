// kiln-gemm-launch: a libkiln_client example. Compiles examples/gemm/gemm.py
// on a kilnd for a CUDA target, fetches the cubin (through the optional local
// cache), loads it with the CUDA driver API (libcuda.so.1 through dlopen, so
// the binary builds and starts on machines without a driver), launches it on
// fp16 inputs and checks C = A @ B against a host reference.
//
//   kiln-gemm-launch --file examples/gemm/gemm.py [--server HOST:PORT]
//       [--m 1024 --n 1024 --k 1024] [--block-m 128 --block-n 128 --block-k 32]
//       [--stages 3] [--threads 128] [--arch sm_90] [--device 0]
//       [--cache-dir DIR] [--token T] [--fetch-only]
//
// Kernels that load tiles with Hopper TMA take, after their parameters and
// symbols, one CUtensorMap per LaunchInfo.tensor_maps entry: this example
// encodes each with the driver's cuTensorMapEncodeTiled from the tensor's
// shape and device pointer (compiler/codegen/kernel_spec.h, TensorMapSpec;
// docs/api.md has a worked example) and passes it by value after the others.
// A build with global workspaces (split-K at decode shapes, --m 16) takes one
// zero-filled device buffer per LaunchInfo.workspaces entry after the
// parameters, before the tensor maps.
//
// Exit: 0 the result matched (or, with --fetch-only, the cubin was fetched
// and is an ELF file), 1 a mismatch or a failed call (the message says
// which), 2 usage, 77 no GPU or no CUDA driver here (nothing was launched).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <dlfcn.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "clients/cpp/client/client.h"
#include "proto/kiln/v1/dtype_bytes.h"

namespace {

constexpr int kExitSkip = 77;

// The few driver API types and entry points this example needs.
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUdeviceptr = unsigned long long;
constexpr int kFuncAttrMaxDynamicShared = 8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES

// CUtensorMap: 128 opaque bytes, 64-byte aligned (cuda.h); the kernel takes it
// by value as a `const __grid_constant__` parameter.
struct alignas(64) CUtensorMap {
  uint64_t opaque[16];
};
static_assert(sizeof(CUtensorMap) == 128, "CUtensorMap is 128 bytes");

struct Driver {
  CUresult (*Init)(unsigned) = nullptr;
  CUresult (*DeviceGetCount)(int*) = nullptr;
  CUresult (*DeviceGet)(CUdevice*, int) = nullptr;
  CUresult (*DeviceGetName)(char*, int, CUdevice) = nullptr;
  CUresult (*PrimaryCtxRetain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*CtxSetCurrent)(CUcontext) = nullptr;
  CUresult (*CtxSynchronize)() = nullptr;
  CUresult (*ModuleLoadData)(CUmodule*, const void*) = nullptr;
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*FuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*MemAlloc)(CUdeviceptr*, size_t) = nullptr;
  CUresult (*MemFree)(CUdeviceptr) = nullptr;
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void*, size_t) = nullptr;
  CUresult (*MemcpyDtoH)(void*, CUdeviceptr, size_t) = nullptr;
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, void*, void**, void**) = nullptr;
  CUresult (*GetErrorString)(CUresult, const char**) = nullptr;
  // CUDA 12 and newer; null on older drivers (then no kernel with tensor maps runs).
  CUresult (*TensorMapEncodeTiled)(CUtensorMap*, int, unsigned, void*, const uint64_t*,
                                   const uint64_t*, const uint32_t*, const uint32_t*, int, int, int,
                                   int) = nullptr;

  std::string Error(CUresult r) const {
    const char* s = nullptr;
    if (GetErrorString != nullptr && GetErrorString(r, &s) == 0 && s != nullptr) return s;
    return "CUDA error " + std::to_string(r);
  }
};

template <typename T>
bool Resolve(void* lib, const char* name, T* fn) {
  *fn = reinterpret_cast<T>(dlsym(lib, name));
  if (*fn == nullptr) std::fprintf(stderr, "kiln-gemm-launch: libcuda lacks %s\n", name);
  return *fn != nullptr;
}

// Loads the driver; false (after printing why) when there is none.
bool LoadDriver(Driver* d) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "kiln-gemm-launch: no CUDA driver here (%s); skipping the launch\n",
                 dlerror());
    return false;
  }
  d->TensorMapEncodeTiled =
      reinterpret_cast<decltype(d->TensorMapEncodeTiled)>(dlsym(lib, "cuTensorMapEncodeTiled"));
  return Resolve(lib, "cuInit", &d->Init) && Resolve(lib, "cuDeviceGetCount", &d->DeviceGetCount) &&
         Resolve(lib, "cuDeviceGet", &d->DeviceGet) &&
         Resolve(lib, "cuDeviceGetName", &d->DeviceGetName) &&
         Resolve(lib, "cuDevicePrimaryCtxRetain", &d->PrimaryCtxRetain) &&
         Resolve(lib, "cuCtxSetCurrent", &d->CtxSetCurrent) &&
         Resolve(lib, "cuCtxSynchronize", &d->CtxSynchronize) &&
         Resolve(lib, "cuModuleLoadData", &d->ModuleLoadData) &&
         Resolve(lib, "cuModuleGetFunction", &d->ModuleGetFunction) &&
         Resolve(lib, "cuFuncSetAttribute", &d->FuncSetAttribute) &&
         Resolve(lib, "cuMemAlloc_v2", &d->MemAlloc) && Resolve(lib, "cuMemFree_v2", &d->MemFree) &&
         Resolve(lib, "cuMemcpyHtoD_v2", &d->MemcpyHtoD) &&
         Resolve(lib, "cuMemcpyDtoH_v2", &d->MemcpyDtoH) &&
         Resolve(lib, "cuLaunchKernel", &d->LaunchKernel) &&
         Resolve(lib, "cuGetErrorString", &d->GetErrorString);
}

// IEEE binary16 <-> float. The inputs are multiples of 1/64 in [-1, 1), which
// binary16 holds exactly; the output conversion is exact for every half.
uint16_t ToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if ((x & 0x7fffffffu) == 0) return static_cast<uint16_t>(sign);
  if (exp <= 0) { // subnormal half (not produced by this example's inputs)
    mant |= 0x800000u;
    const int shift = 14 - exp;
    return static_cast<uint16_t>(sign | (mant >> shift));
  }
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h; // round to nearest even
  return static_cast<uint16_t>(h);
}

float FromHalf(uint16_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -f : f;
  }
  if (exp == 31) {
    const uint32_t bits = sign | 0x7f800000u | (mant << 13);
    std::memcpy(&f, &bits, 4);
    return f;
  }
  const uint32_t bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  std::memcpy(&f, &bits, 4);
  return f;
}

// The arguments of one cuTensorMapEncodeTiled call, dimensions innermost first.
struct TensorMapArgs {
  int data_type = 0; // CUtensorMapDataType: UINT8/16/32/64 by element size
  unsigned rank = 0;
  uint64_t dims[5] = {};
  uint64_t strides[4] = {}; // bytes, dimensions 1..rank-1
  uint32_t box[5] = {};
  uint32_t element_strides[5] = {1, 1, 1, 1, 1};
  int swizzle = 0; // CUtensorMapSwizzle
};
constexpr int kTensorMapInterleaveNone = 0;
constexpr int kTensorMapL2Promotion128B = 2;
constexpr int kTensorMapOobFillNone = 0; // out-of-bounds elements read as zero

// The encode arguments for `map` (a LaunchInfo.tensor_maps entry) over its
// tensor of `shape` (outermost first, row-major and contiguous) with
// `element_bytes` per element at device `address`, as TensorMapSpec says;
// false with *error naming the tensor where TMA cannot take it.
bool TensorMapArgsFor(const kiln::v1::TensorMap& map, const std::vector<int64_t>& shape,
                      int element_bytes, CUdeviceptr address, TensorMapArgs* out,
                      std::string* error) {
  const std::string where = "tensor map of " + map.param() + ": ";
  const int rank = static_cast<int>(shape.size());
  if (rank < 1 || rank > 5) {
    *error = where + "rank " + std::to_string(rank) + "; TMA takes ranks 1 to 5";
    return false;
  }
  if (map.box_size() != rank) {
    *error = where + "the box has " + std::to_string(map.box_size()) + " dimensions, the tensor " +
             std::to_string(rank);
    return false;
  }
  const int data_type = element_bytes == 1   ? 0
                        : element_bytes == 2 ? 1
                        : element_bytes == 4 ? 2
                        : element_bytes == 8 ? 4
                                             : -1;
  const int swizzle = map.swizzle_bytes() == 0     ? 0
                      : map.swizzle_bytes() == 32  ? 1
                      : map.swizzle_bytes() == 64  ? 2
                      : map.swizzle_bytes() == 128 ? 3
                                                   : -1;
  if (data_type < 0 || swizzle < 0) {
    *error = where + "elements of " + std::to_string(element_bytes) + " bytes, swizzle " +
             std::to_string(map.swizzle_bytes()) +
             " bytes: TMA takes 1, 2, 4 or 8 and 0, 32, 64 or 128";
    return false;
  }
  if (address % 16 != 0) {
    *error = where + "the pointer is not 16-byte aligned";
    return false;
  }
  out->data_type = data_type;
  out->swizzle = swizzle;
  out->rank = static_cast<unsigned>(rank);
  uint64_t stride = static_cast<uint64_t>(element_bytes);
  for (int i = 0; i < rank; ++i) {
    const int64_t dim = shape[static_cast<size_t>(rank - 1 - i)];
    const int64_t box = map.box(rank - 1 - i);
    if (dim < 1 || dim > (int64_t{1} << 32) || box < 1 || box > 256) {
      *error = where + "dimension " + std::to_string(rank - 1 - i) + " has extent " +
               std::to_string(dim) + " and box " + std::to_string(box) +
               " (TMA: 1 to 2^32, box 1 to 256)";
      return false;
    }
    out->dims[i] = static_cast<uint64_t>(dim);
    out->box[i] = static_cast<uint32_t>(box);
    if (i > 0) {
      stride *= out->dims[i - 1];
      if (stride % 16 != 0 || stride >= (uint64_t{1} << 40)) {
        *error = where + "the stride of dimension " + std::to_string(rank - 1 - i) + " is " +
                 std::to_string(stride) + " bytes, not a multiple of 16 below 2^40";
        return false;
      }
      out->strides[i - 1] = stride;
    }
  }
  const uint64_t inner = out->box[0] * static_cast<uint64_t>(element_bytes);
  if (inner % 16 != 0 ||
      (map.swizzle_bytes() != 0 && inner > static_cast<uint64_t>(map.swizzle_bytes()))) {
    *error = where + "the box's inner dimension is " + std::to_string(inner) +
             " bytes: it must be a multiple of 16 within the swizzle span";
    return false;
  }
  return true;
}

struct Args {
  std::string file;
  int64_t m = 1024, n = 1024, k = 1024;
  int64_t block_m = 128, block_n = 128, block_k = 32, stages = 3, threads = 128;
  std::string arch = "sm_90";
  int device = 0;
  bool fetch_only = false;
  kiln::client::ClientOptions client = kiln::client::OptionsFromEnvironment();
};

bool ParseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    auto number = [&](int64_t* out) {
      std::string v;
      return value(&v) && absl::SimpleAtoi(v, out) && *out > 0;
    };
    std::string v;
    int64_t dev = 0;
    bool ok = true;
    if (flag == "--file") {
      ok = value(&a->file);
    } else if (flag == "--server") {
      ok = value(&a->client.address);
    } else if (flag == "--token") {
      ok = value(&a->client.token);
    } else if (flag == "--cache-dir") {
      ok = value(&a->client.cache_dir);
    } else if (flag == "--arch") {
      ok = value(&a->arch);
    } else if (flag == "--m") {
      ok = number(&a->m);
    } else if (flag == "--n") {
      ok = number(&a->n);
    } else if (flag == "--k") {
      ok = number(&a->k);
    } else if (flag == "--block-m") {
      ok = number(&a->block_m);
    } else if (flag == "--block-n") {
      ok = number(&a->block_n);
    } else if (flag == "--block-k") {
      ok = number(&a->block_k);
    } else if (flag == "--stages") {
      ok = number(&a->stages);
    } else if (flag == "--threads") {
      ok = number(&a->threads);
    } else if (flag == "--device") {
      ok = value(&v) && absl::SimpleAtoi(v, &dev) && dev >= 0;
      a->device = static_cast<int>(dev);
    } else if (flag == "--fetch-only") {
      a->fetch_only = true;
    } else {
      std::fprintf(stderr, "kiln-gemm-launch: unknown argument '%s'\n", flag.c_str());
      return false;
    }
    if (!ok) {
      std::fprintf(stderr, "kiln-gemm-launch: %s needs a valid value\n", flag.c_str());
      return false;
    }
  }
  if (a->file.empty()) {
    std::fprintf(stderr, "kiln-gemm-launch: --file examples/gemm/gemm.py is required\n");
    return false;
  }
  return true;
}

#define CU_CHECK(call, what)                                                                       \
  do {                                                                                             \
    const CUresult r_ = (call);                                                                    \
    if (r_ != 0) {                                                                                 \
      std::fprintf(stderr, "kiln-gemm-launch: %s: %s\n", what, drv.Error(r_).c_str());             \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

} // namespace

int main(int argc, char** argv) {
  Args a;
  if (!ParseArgs(argc, argv, &a)) return 2;

  // Without a GPU there is nothing to launch: say so before any network use.
  Driver drv;
  int gpus = 0;
  if (!a.fetch_only) {
    if (!LoadDriver(&drv)) return kExitSkip;
    const CUresult init = drv.Init(0);
    if (init != 0 || drv.DeviceGetCount(&gpus) != 0 || gpus <= a.device) {
      std::fprintf(stderr, "kiln-gemm-launch: no CUDA device %d here (cuInit: %s); skipping\n",
                   a.device, drv.Error(init).c_str());
      return kExitSkip;
    }
  }

  absl::StatusOr<std::unique_ptr<kiln::client::Client>> client =
      kiln::client::Client::Create(a.client);
  if (!client.ok()) {
    std::fprintf(stderr, "kiln-gemm-launch: %s\n", absl::StrCat(client.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<kiln::v1::ProgramSource> program = kiln::client::LoadProgram(a.file);
  if (!program.ok()) {
    std::fprintf(stderr, "kiln-gemm-launch: %s\n",
                 absl::StrCat(program.status().message()).c_str());
    return 1;
  }
  kiln::v1::CompileRequest req;
  *req.mutable_program() = *program;
  auto bind = [&](const char* name, int64_t v) {
    (*req.mutable_program()->mutable_bindings())[name].set_int_value(v);
  };
  bind("M", a.m);
  bind("N", a.n);
  bind("K", a.k);
  bind("block_M", a.block_m);
  bind("block_N", a.block_n);
  bind("block_K", a.block_k);
  bind("num_stages", a.stages);
  bind("threads", a.threads);
  req.set_target("cuda:" + a.arch);

  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<kiln::client::CompileResult> compiled = (*client)->Compile(req);
  if (!compiled.ok()) {
    std::fprintf(stderr, "kiln-gemm-launch: compile: %s\n",
                 absl::StrCat(compiled.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<std::string> cubin =
      (*client)->FetchFile(compiled->key, kiln::v1::ARTIFACT_KIND_CUBIN);
  if (!cubin.ok()) {
    std::fprintf(stderr, "kiln-gemm-launch: fetch: %s\n",
                 absl::StrCat(cubin.status().message()).c_str());
    return 1;
  }
  const double fetch_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("kernel %s: %s, cubin %zu bytes, compile+fetch %.1f ms\n",
              compiled->key.substr(0, 12).c_str(), kiln::client::CacheStateName(compiled->cache),
              cubin->size(), fetch_ms);
  if (cubin->size() < 4 || cubin->compare(0, 4,
                                          "\x7f"
                                          "ELF") != 0) {
    std::fprintf(stderr, "kiln-gemm-launch: the fetched cubin is not an ELF file\n");
    return 1;
  }
  if (a.fetch_only) return 0;

  const kiln::v1::LaunchInfo& launch = compiled->metadata.launch();
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  for (int i = 0; i < launch.grid_size() && i < 3; ++i) {
    int64_t g = 0;
    if (!absl::SimpleAtoi(launch.grid(i), &g) || g <= 0) {
      std::fprintf(stderr, "kiln-gemm-launch: grid extent %d is '%s', not a number\n", i,
                   launch.grid(i).c_str());
      return 1;
    }
    grid[i] = static_cast<unsigned>(g);
  }
  for (int i = 0; i < launch.block_size() && i < 3; ++i) {
    block[i] = static_cast<unsigned>(launch.block(i));
  }
  if (launch.params_size() != 3 || !launch.symbols().empty()) {
    std::fprintf(stderr, "kiln-gemm-launch: expected the kernel (A, B, C), got %d parameters\n",
                 launch.params_size());
    return 1;
  }
  if (launch.next_kernels_size() > 0) {
    std::fprintf(stderr,
                 "kiln-gemm-launch: the program is a sequence of %d kernels; this "
                 "example launches one (a split-K build with split-k-reduce=kernel?)\n",
                 launch.next_kernels_size() + 1);
    return 1;
  }

  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  char name[256] = {0};
  CU_CHECK(drv.DeviceGet(&dev, a.device), "cuDeviceGet");
  CU_CHECK(drv.DeviceGetName(name, sizeof(name), dev), "cuDeviceGetName");
  CU_CHECK(drv.PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  CU_CHECK(drv.CtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  CU_CHECK(drv.ModuleLoadData(&module, cubin->data()), "cuModuleLoadData");
  CU_CHECK(drv.ModuleGetFunction(&fn, module, launch.kernel_symbol().c_str()),
           "cuModuleGetFunction");
  const int smem = static_cast<int>(launch.dynamic_shared_bytes());
  if (smem > 48 * 1024) {
    CU_CHECK(drv.FuncSetAttribute(fn, kFuncAttrMaxDynamicShared, smem), "cuFuncSetAttribute");
  }

  const size_t m = static_cast<size_t>(a.m), n = static_cast<size_t>(a.n),
               k = static_cast<size_t>(a.k);
  std::vector<uint16_t> ha(m * k), hb(k * n), hc(m * n, 0);
  std::vector<float> fa(m * k), fb(k * n);
  std::mt19937 rng(7);
  for (size_t i = 0; i < ha.size(); ++i) {
    fa[i] = static_cast<float>(static_cast<int>(rng() % 128) - 64) / 64.0f;
    ha[i] = ToHalf(fa[i]);
  }
  for (size_t i = 0; i < hb.size(); ++i) {
    fb[i] = static_cast<float>(static_cast<int>(rng() % 128) - 64) / 64.0f;
    hb[i] = ToHalf(fb[i]);
  }
  CUdeviceptr da = 0, db = 0, dc = 0;
  CU_CHECK(drv.MemAlloc(&da, ha.size() * 2), "cuMemAlloc A");
  CU_CHECK(drv.MemAlloc(&db, hb.size() * 2), "cuMemAlloc B");
  CU_CHECK(drv.MemAlloc(&dc, hc.size() * 2), "cuMemAlloc C");
  CU_CHECK(drv.MemcpyHtoD(da, ha.data(), ha.size() * 2), "copy A");
  CU_CHECK(drv.MemcpyHtoD(db, hb.data(), hb.size() * 2), "copy B");
  CU_CHECK(drv.MemcpyHtoD(dc, hc.data(), hc.size() * 2), "clear C");
  // The arguments in the metadata's order: the tensors by name, then one
  // CUtensorMap per tensor_maps entry (this GEMM has no symbols).
  struct Tensor {
    CUdeviceptr* ptr;
    std::vector<int64_t> shape;
  };
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"A", {&da, {a.m, a.k}}}, {"B", {&db, {a.k, a.n}}}, {"C", {&dc, {a.m, a.n}}}};
  auto tensor = [&](const std::string& param) -> const Tensor* {
    for (const auto& [name, t] : tensors) {
      if (name == param) return &t;
    }
    return nullptr;
  };
  std::vector<void*> params;
  for (const kiln::v1::ParamInfo& p : launch.params()) {
    const Tensor* t = tensor(p.name());
    if (t == nullptr || p.is_scalar()) {
      std::fprintf(stderr, "kiln-gemm-launch: the kernel's parameter '%s' is not A, B or C\n",
                   p.name().c_str());
      return 1;
    }
    params.push_back(t->ptr);
  }
  // Global workspaces (split-K's partials and tickets at decode shapes):
  // one zero-filled device buffer each, after the parameters and symbols.
  // Kept for every launch below: the program leaves them reusable.
  std::vector<CUdeviceptr> workspaces(static_cast<size_t>(launch.workspaces_size()), 0);
  for (int i = 0; i < launch.workspaces_size(); ++i) {
    const kiln::v1::WorkspaceInfo& w = launch.workspaces(i);
    int64_t bytes = kiln::v1::DTypeBytes(w.dtype());
    for (const std::string& d : w.shape()) {
      int64_t e = 0;
      if (!absl::SimpleAtoi(d, &e) || e <= 0 || bytes > (int64_t{1} << 34) / e) {
        std::fprintf(stderr, "kiln-gemm-launch: workspace %s has extent '%s'\n", w.name().c_str(),
                     d.c_str());
        return 1;
      }
      bytes *= e;
    }
    const std::vector<char> zeros(static_cast<size_t>(bytes), 0);
    CU_CHECK(drv.MemAlloc(&workspaces[static_cast<size_t>(i)], zeros.size()),
             "cuMemAlloc workspace");
    CU_CHECK(drv.MemcpyHtoD(workspaces[static_cast<size_t>(i)], zeros.data(), zeros.size()),
             "clear workspace");
    params.push_back(&workspaces[static_cast<size_t>(i)]);
  }
  std::vector<CUtensorMap> maps(static_cast<size_t>(launch.tensor_maps_size()));
  for (int i = 0; i < launch.tensor_maps_size(); ++i) {
    const kiln::v1::TensorMap& map = launch.tensor_maps(i);
    const Tensor* t = tensor(map.param());
    const auto p =
        std::find_if(launch.params().begin(), launch.params().end(),
                     [&](const kiln::v1::ParamInfo& q) { return q.name() == map.param(); });
    TensorMapArgs enc;
    std::string error = "tensor map of " + map.param() + ": not a parameter of the kernel";
    if (t == nullptr || p == launch.params().end() ||
        !TensorMapArgsFor(map, t->shape, static_cast<int>(kiln::v1::DTypeBytes(p->dtype())),
                          *t->ptr, &enc, &error)) {
      std::fprintf(stderr, "kiln-gemm-launch: %s\n", error.c_str());
      return 1;
    }
    if (drv.TensorMapEncodeTiled == nullptr) {
      std::fprintf(stderr, "kiln-gemm-launch: the kernel takes tensor maps and this driver has "
                           "no cuTensorMapEncodeTiled (CUDA 12 or newer has it)\n");
      return 1;
    }
    void* address = nullptr; // the device address as the driver's void* globalAddress
    static_assert(sizeof(address) == sizeof(CUdeviceptr), "64-bit device addresses");
    std::memcpy(&address, t->ptr, sizeof(address));
    const CUresult r = drv.TensorMapEncodeTiled(
        &maps[static_cast<size_t>(i)], enc.data_type, enc.rank, address, enc.dims, enc.strides,
        enc.box, enc.element_strides, kTensorMapInterleaveNone, enc.swizzle,
        kTensorMapL2Promotion128B, kTensorMapOobFillNone);
    if (r != 0) {
      std::fprintf(stderr, "kiln-gemm-launch: cuTensorMapEncodeTiled for %s: %s (error %d)\n",
                   map.param().c_str(), drv.Error(r).c_str(), r);
      return 1;
    }
    params.push_back(&maps[static_cast<size_t>(i)]);
  }
  CU_CHECK(drv.LaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                            static_cast<unsigned>(smem), nullptr, params.data(), nullptr),
           "cuLaunchKernel");
  CU_CHECK(drv.CtxSynchronize(), "the kernel");
  CU_CHECK(drv.MemcpyDtoH(hc.data(), dc, hc.size() * 2), "copy C back");

  // Timing: 10 more launches.
  const int reps = 10;
  const auto t1 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) {
    CU_CHECK(drv.LaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                              static_cast<unsigned>(smem), nullptr, params.data(), nullptr),
             "cuLaunchKernel");
  }
  CU_CHECK(drv.CtxSynchronize(), "the kernel");
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count() /
      reps;

  // Host reference in double; the output is fp16, so allow its rounding.
  double max_err = 0;
  size_t bad = 0, first_bad = 0;
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double ref = 0;
      for (size_t p = 0; p < k; ++p) {
        ref += static_cast<double>(fa[i * k + p]) * static_cast<double>(fb[p * n + j]);
      }
      const double got = FromHalf(hc[i * n + j]);
      const double err = std::fabs(got - ref);
      max_err = std::max(max_err, err);
      if (err > 0.02 + 0.01 * std::fabs(ref)) {
        if (bad == 0) first_bad = i * n + j;
        ++bad;
      }
    }
  }
  (void)drv.MemFree(da);
  (void)drv.MemFree(db);
  (void)drv.MemFree(dc);
  for (CUdeviceptr w : workspaces) (void)drv.MemFree(w);
  const double tflops = 2.0 * static_cast<double>(m * n * k) / (ms * 1e-3) / 1e12;
  std::printf("%s: gemm %zux%zux%zu fp16, grid %ux%ux%u, block %u, %.3f ms (%.1f TFLOP/s), "
              "max abs err %.4g: %s\n",
              name, m, n, k, grid[0], grid[1], grid[2], block[0], ms, tflops, max_err,
              bad == 0 ? "PASS" : "FAIL");
  if (bad != 0) {
    std::fprintf(stderr, "kiln-gemm-launch: %zu of %zu elements differ; first at (%zu, %zu)\n", bad,
                 m * n, first_bad / n, first_bad % n);
    return 1;
  }
  return 0;
}
