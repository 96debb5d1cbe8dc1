// GPU test (label gpu): the CUDA runtime's collectives and conversions on a
// real GPU against the CPU runtime's emulation. The kernels are compiled by
// nvcc from the embedded CUDA headers, loaded and launched through the CUDA
// driver API (dlopen of libcuda.so.1, as kiln-worker does), on random inputs.
// ldmatrix, shuffles, reductions, cp.async and conversions must agree bit for
// bit; mma agrees bit for bit for s8 and within 1e-5 of the magnitude of the
// summed terms for f32 accumulation (tensor cores add in another order).
// Conversions run twice: from an sm_XX cubin (fp8 via the sm_89 cvt) and from
// compute_80 PTX JIT-compiled by the driver (fp8 via the software fallback).
// On Hopper (compute capability 9.0) an sm_90a cubin runs fp8 wgmma from
// descriptor-addressed swizzled shared memory against the CPU twin.
// Skips without /dev/nvidiactl or without nvcc.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include "compiler/runtime/runtime_headers.h"
#include "gtest/gtest.h"
#include "kiln/cpu/runtime.h"

namespace kiln::rt {
namespace {

namespace fs = std::filesystem;

constexpr char kKernels[] = R"cu(
#include "kiln/cuda/runtime.h"
using namespace kiln::rt;

// variant 0 f16, 1 bf16, 2 tf32; registers [32][4], [32][2], [32][4].
extern "C" __global__ void k_mma_f32(const uint32_t* a, const uint32_t* b, const float* c,
                                     float* d, int variant) {
  const int l = threadIdx.x;
  uint32_t ra[4], rb[2];
  float rc[4], rd[4];
  for (int i = 0; i < 4; ++i) ra[i] = a[l * 4 + i], rc[i] = c[l * 4 + i];
  for (int i = 0; i < 2; ++i) rb[i] = b[l * 2 + i];
  if (variant == 0) mma_m16n8k16_f16(rd, ra, rb, rc);
  if (variant == 1) mma_m16n8k16_bf16(rd, ra, rb, rc);
  if (variant == 2) mma_m16n8k8_tf32(rd, ra, rb, rc);
  for (int i = 0; i < 4; ++i) d[l * 4 + i] = rd[i];
}

extern "C" __global__ void k_mma_s8(const uint32_t* a, const uint32_t* b, const int32_t* c,
                                    int32_t* d) {
  const int l = threadIdx.x;
  uint32_t ra[4], rb[2];
  int32_t rc[4], rd[4];
  for (int i = 0; i < 4; ++i) ra[i] = a[l * 4 + i], rc[i] = c[l * 4 + i];
  for (int i = 0; i < 2; ++i) rb[i] = b[l * 2 + i];
  mma_m16n8k32_s8(rd, ra, rb, rc);
  for (int i = 0; i < 4; ++i) d[l * 4 + i] = rd[i];
}

// words: 64 rows of 8 b16; slot[lane]: the row lane l addresses.
// out: [6 variants][32 lanes][4].
extern "C" __global__ void k_ldmatrix(const uint16_t* words, const int* slot, uint32_t* out) {
  __shared__ __align__(16) uint16_t smem[64 * 8];
  const int l = threadIdx.x;
  for (int i = l; i < 64 * 8; i += 32) smem[i] = words[i];
  sync_threads();
  const void* row = &smem[slot[l] * 8];
  uint32_t r[6][4] = {};
  ldmatrix_x1(r[0], row);
  ldmatrix_x2(r[1], row);
  ldmatrix_x4(r[2], row);
  ldmatrix_x1_trans(r[3], row);
  ldmatrix_x2_trans(r[4], row);
  ldmatrix_x4_trans(r[5], row);
  for (int v = 0; v < 6; ++v)
    for (int i = 0; i < 4; ++i) out[(v * 32 + l) * 4 + i] = r[v][i];
}

// out rows of 32: xor 1,2,5,16,31 | down 1,3,16,31 | idx src | sum max min (float),
// then the same for int; 13 rows per type.
extern "C" __global__ void k_warp(const float* fv, const int32_t* iv, const int* src,
                                  float* fout, int32_t* iout) {
  const int l = threadIdx.x;
  const unsigned xs[5] = {1, 2, 5, 16, 31}, ds[4] = {1, 3, 16, 31};
  const float f = fv[l];
  const int32_t x = iv[l];
  int row = 0;
  for (int i = 0; i < 5; ++i, ++row) {
    fout[row * 32 + l] = shfl_xor(f, xs[i]);
    iout[row * 32 + l] = shfl_xor(x, xs[i]);
  }
  for (int i = 0; i < 4; ++i, ++row) {
    fout[row * 32 + l] = shfl_down(f, ds[i]);
    iout[row * 32 + l] = shfl_down(x, ds[i]);
  }
  fout[row * 32 + l] = shfl_idx(f, (uint32_t)src[l]);
  iout[row * 32 + l] = shfl_idx(x, (uint32_t)src[l]);
  ++row;
  fout[row * 32 + l] = warp_reduce_sum(f);
  iout[row * 32 + l] = warp_reduce_sum(x);
  ++row;
  fout[row * 32 + l] = warp_reduce_max(f);
  iout[row * 32 + l] = warp_reduce_max(x);
  ++row;
  fout[row * 32 + l] = warp_reduce_min(f);
  iout[row * 32 + l] = warp_reduce_min(x);
}

// Each lane copies 16 bytes with cg (src_bytes = lane % 17), 8 with ca
// (src_bytes = lane % 9) and 4 with ca (src_bytes = lane % 5); out[32][28].
extern "C" __global__ void k_cp_async(const unsigned char* src, unsigned char* out) {
  __shared__ __align__(16) unsigned char s[32 * 32];
  const int l = threadIdx.x;
  for (int i = 0; i < 32; ++i) s[l * 32 + i] = 0xaa;
  sync_threads();
  cp_async_cg(&s[l * 32], src + l * 32, l % 17);
  cp_async_commit_group();
  cp_async_ca<8>(&s[l * 32 + 16], src + l * 32 + 16, l % 9);
  cp_async_commit_group();
  cp_async_ca<4>(&s[l * 32 + 24], src + l * 32 + 24, l % 5);
  cp_async_commit_group();
  cp_async_wait_group<1>();
  cp_async_wait_group<0>();
  sync_threads();
  for (int i = 0; i < 28; ++i) out[l * 28 + i] = s[l * 32 + i];
}

// Conversions of n floats x, and decodes of 65536 16-bit codes.
extern "C" __global__ void k_convert(const float* x, int n, uint16_t* h, uint16_t* bf,
                                     uint8_t* e4, uint8_t* e5, float* tf, float* dh,
                                     float* dbf, float* de4, float* de5) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    h[i] = float_to_half(x[i]).bits;
    bf[i] = float_to_bfloat16(x[i]).bits;
    e4[i] = float_to_e4m3(x[i]).bits;
    e5[i] = float_to_e5m2(x[i]).bits;
    tf[i] = tf32_round(x[i]);
  }
  if (i < 65536) {
    half_t hv = {(uint16_t)i};
    bfloat16_t bv = {(uint16_t)i};
    dh[i] = half_to_float(hv);
    dbf[i] = bfloat16_to_float(bv);
  }
  if (i < 256) {
    fp8_e4m3_t a = {(uint8_t)i};
    fp8_e5m2_t b = {(uint8_t)i};
    de4[i] = e4m3_to_float(a);
    de5[i] = e5m2_to_float(b);
  }
}
)cu";

// sm_90a only (kiln/cuda/wgmma_fp8.h). One warpgroup: the 128-byte swizzled
// images of A (64 rows) and B (128 rows, B stored N x K), 128 bytes a row,
// copied to dynamic shared memory as they are (the window is 1024-byte
// aligned, so the swizzle's address bits are the images' own); four
// m64n128k32 calls, one per 32-byte K slice of the rows, accumulate onto c.
// c, d: [128 threads][64].
constexpr char kWgmmaKernels[] = R"cu(
#include "kiln/cuda/runtime.h"
#include "kiln/cuda/wgmma.h"
#include "kiln/cuda/wgmma_fp8.h"
using namespace kiln::rt;

template <bool kE5m2>
__device__ void WgmmaFp8Slices(float* acc, unsigned char* s) {
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    if constexpr (kE5m2) {
      wgmma_m64n128k32_e5m2<0, 0, 16, 1024, 1, 16, 1024, 1>(acc, s + 32 * ks, s + 8192 + 32 * ks);
    } else {
      wgmma_m64n128k32_e4m3<0, 0, 16, 1024, 1, 16, 1024, 1>(acc, s + 32 * ks, s + 8192 + 32 * ks);
    }
  }
}

extern "C" __global__ void k_wgmma_fp8(const unsigned char* a, const unsigned char* b,
                                       const float* c, float* d, int e5m2) {
  unsigned char* s = dyn_smem();
  const int t = threadIdx.x;
  for (int i = t; i < 64 * 128; i += 128) s[i] = a[i];
  for (int i = t; i < 128 * 128; i += 128) s[8192 + i] = b[i];
  float acc[64];
  for (int i = 0; i < 64; ++i) acc[i] = c[t * 64 + i];
  fence_proxy_async();
  sync_threads();
  wgmma_fence();
  if (e5m2) {
    WgmmaFp8Slices<true>(acc, s);
  } else {
    WgmmaFp8Slices<false>(acc, s);
  }
  wgmma_commit();
  wgmma_wait<0>();
  for (int i = 0; i < 64; ++i) d[t * 64 + i] = acc[i];
}
)cu";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The driver API functions the test uses, loaded with dlopen.
struct Driver {
  void* lib = nullptr;
  int (*cuInit)(unsigned);
  int (*cuDeviceGet)(int*, int);
  int (*cuDeviceGetAttribute)(int*, int, int);
  int (*cuDevicePrimaryCtxRetain)(void**, int);
  int (*cuCtxSetCurrent)(void*);
  int (*cuModuleLoadData)(void**, const void*);
  int (*cuModuleGetFunction)(void**, void*, const char*);
  int (*cuMemAlloc)(uint64_t*, size_t);
  int (*cuMemFree)(uint64_t);
  int (*cuMemcpyHtoD)(uint64_t, const void*, size_t);
  int (*cuMemcpyDtoH)(void*, uint64_t, size_t);
  int (*cuLaunchKernel)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        void*, void**, void**);
  int (*cuCtxSynchronize)();

  bool Load() {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return false;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      return fn != nullptr;
    };
    return sym(cuInit, "cuInit") && sym(cuDeviceGet, "cuDeviceGet") &&
           sym(cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
           sym(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
           sym(cuCtxSetCurrent, "cuCtxSetCurrent") && sym(cuModuleLoadData, "cuModuleLoadData") &&
           sym(cuModuleGetFunction, "cuModuleGetFunction") && sym(cuMemAlloc, "cuMemAlloc_v2") &&
           sym(cuMemFree, "cuMemFree_v2") && sym(cuMemcpyHtoD, "cuMemcpyHtoD_v2") &&
           sym(cuMemcpyDtoH, "cuMemcpyDtoH_v2") && sym(cuLaunchKernel, "cuLaunchKernel") &&
           sym(cuCtxSynchronize, "cuCtxSynchronize");
  }
};

// A device buffer mirrored by a host vector.
template <typename T>
struct Buf {
  std::vector<T> host;
  uint64_t dev = 0;
};

class RuntimeGpuTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (access("/dev/nvidiactl", F_OK) != 0) {
      skip_ = "no GPU attached (/dev/nvidiactl missing)";
      return;
    }
    if (!fs::exists("/usr/local/cuda/bin/nvcc")) {
      skip_ = "no nvcc at /usr/local/cuda/bin";
      return;
    }
    drv_ = new Driver;
    ASSERT_TRUE(drv_->Load()) << dlerror();
    ASSERT_EQ(drv_->cuInit(0), 0);
    int dev = 0;
    ASSERT_EQ(drv_->cuDeviceGet(&dev, 0), 0);
    int major = 0, minor = 0;
    ASSERT_EQ(drv_->cuDeviceGetAttribute(&major, 75, dev), 0); // compute capability
    ASSERT_EQ(drv_->cuDeviceGetAttribute(&minor, 76, dev), 0);
    void* ctx = nullptr;
    ASSERT_EQ(drv_->cuDevicePrimaryCtxRetain(&ctx, dev), 0);
    ASSERT_EQ(drv_->cuCtxSetCurrent(ctx), 0);
    // The kernels see the headers only through the embedding.
    std::string templ = (fs::temp_directory_path() / "kiln_rt_gpu_XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    const fs::path dir = templ;
    for (const runtime::EmbeddedHeader& h : runtime::CudaRuntimeHeaders()) {
      fs::create_directories((dir / std::string(h.name)).parent_path());
      std::ofstream(dir / std::string(h.name), std::ios::binary) << h.content;
    }
    std::ofstream(dir / "k.cu") << kKernels;
    std::ofstream(dir / "wgmma.cu") << kWgmmaKernels;
    const std::string arch = "sm_" + std::to_string(major * 10 + minor);
    const std::string nvcc = "timeout 300 /usr/local/cuda/bin/nvcc -I " + dir.string() + " ";
    const std::string log = (dir / "nvcc.log").string();
    ASSERT_EQ(std::system((nvcc + "-cubin -arch=" + arch + " -o " + (dir / "k.cubin").string() +
                           " " + (dir / "k.cu").string() + " > " + log + " 2>&1")
                              .c_str()),
              0)
        << ReadFile(log);
    ASSERT_EQ(std::system((nvcc + "-ptx -arch=compute_80 -o " + (dir / "k.ptx").string() + " " +
                           (dir / "k.cu").string() + " > " + log + " 2>&1")
                              .c_str()),
              0)
        << ReadFile(log);
    const std::string cubin = ReadFile(dir / "k.cubin");
    const std::string ptx = ReadFile(dir / "k.ptx");
    ASSERT_EQ(drv_->cuModuleLoadData(&native_, cubin.data()), 0);
    ASSERT_EQ(drv_->cuModuleLoadData(&jit_, ptx.c_str()), 0);
    if (major == 9 && minor == 0) {
      ASSERT_EQ(std::system((nvcc + "-cubin -arch=sm_90a -o " + (dir / "wgmma.cubin").string() +
                             " " + (dir / "wgmma.cu").string() + " > " + log + " 2>&1")
                                .c_str()),
                0)
          << ReadFile(log);
      const std::string hopper = ReadFile(dir / "wgmma.cubin");
      ASSERT_EQ(drv_->cuModuleLoadData(&hopper_, hopper.data()), 0);
    }
    fs::remove_all(dir);
  }

  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_NE(native_, nullptr);
  }

  template <typename T>
  void Alloc(Buf<T>& b, size_t n) {
    b.host.resize(n);
    ASSERT_EQ(drv_->cuMemAlloc(&b.dev, n * sizeof(T)), 0);
  }
  template <typename T>
  void Upload(Buf<T>& b) {
    Alloc(b, b.host.size());
    ASSERT_EQ(drv_->cuMemcpyHtoD(b.dev, b.host.data(), b.host.size() * sizeof(T)), 0);
  }
  template <typename T>
  void Download(Buf<T>& b) {
    ASSERT_EQ(drv_->cuMemcpyDtoH(b.host.data(), b.dev, b.host.size() * sizeof(T)), 0);
    drv_->cuMemFree(b.dev);
    b.dev = 0;
  }
  void Launch(void* module, const char* name, unsigned blocks, unsigned threads,
              std::vector<void*> args, unsigned dynamic_smem = 0) {
    void* fn = nullptr;
    ASSERT_EQ(drv_->cuModuleGetFunction(&fn, module, name), 0) << name;
    ASSERT_EQ(drv_->cuLaunchKernel(fn, blocks, 1, 1, threads, 1, 1, dynamic_smem, nullptr,
                                   args.data(), nullptr),
              0)
        << name;
    ASSERT_EQ(drv_->cuCtxSynchronize(), 0) << name;
  }

  static inline std::string skip_;
  static inline Driver* drv_ = nullptr;
  static inline void* native_ = nullptr;
  static inline void* jit_ = nullptr;
  static inline void* hopper_ = nullptr; // sm_90a kernels, on compute capability 9.0 only
};

TEST_F(RuntimeGpuTest, MmaMatchesTheCpuEmulation) {
  std::mt19937 rng(100);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int variant = 0; variant < 3; ++variant) {
    for (int trial = 0; trial < 10; ++trial) {
      SCOPED_TRACE(testing::Message() << "variant " << variant << " trial " << trial);
      Buf<uint32_t> a, b;
      Buf<float> c, d;
      a.host.resize(128);
      b.host.resize(64);
      c.host.resize(128);
      auto elem = [&]() -> uint32_t {
        const float f = dist(rng);
        if (variant == 0) return float_to_half(f).bits;
        if (variant == 1) return float_to_bfloat16(f).bits;
        return float_bits(tf32_round(f));
      };
      for (auto* regs : {&a.host, &b.host})
        for (uint32_t& r : *regs) r = variant == 2 ? elem() : elem() | (elem() << 16);
      for (float& v : c.host) v = dist(rng);
      Upload(a);
      Upload(b);
      Upload(c);
      Alloc(d, 128);
      int v = variant;
      Launch(native_, "k_mma_f32", 1, 32, {&a.dev, &b.dev, &c.dev, &d.dev, &v});
      Download(d);
      drv_->cuMemFree(a.dev);
      drv_->cuMemFree(b.dev);
      drv_->cuMemFree(c.dev);
      float cpu[32][4];
      auto va = WarpRegs<const uint32_t>(a.host.data(), 4);
      auto vb = WarpRegs<const uint32_t>(b.host.data(), 2);
      auto vc = WarpRegs<const float>(c.host.data(), 4);
      if (variant == 0) mma_m16n8k16_f16(cpu, va, vb, vc);
      if (variant == 1) mma_m16n8k16_bf16(cpu, va, vb, vc);
      if (variant == 2) mma_m16n8k8_tf32(cpu, va, vb, vc);
      // The scale of each sum: the same mma over |a|, |b|, |c| (sign bits
      // cleared), i.e. |c| + sum |a_k * b_k|. Tensor cores and the CPU may
      // differ by rounding, which is relative to that, not to the result.
      const uint32_t sign = variant == 2 ? 0x80000000u : 0x80008000u;
      std::vector<uint32_t> abs_a(a.host), abs_b(b.host);
      std::vector<float> abs_c(c.host);
      for (uint32_t& r : abs_a) r &= ~sign;
      for (uint32_t& r : abs_b) r &= ~sign;
      for (float& f : abs_c) f = std::fabs(f);
      float scale[32][4];
      auto sa = WarpRegs<const uint32_t>(abs_a.data(), 4);
      auto sb = WarpRegs<const uint32_t>(abs_b.data(), 2);
      auto sc = WarpRegs<const float>(abs_c.data(), 4);
      if (variant == 0) mma_m16n8k16_f16(scale, sa, sb, sc);
      if (variant == 1) mma_m16n8k16_bf16(scale, sa, sb, sc);
      if (variant == 2) mma_m16n8k8_tf32(scale, sa, sb, sc);
      for (int l = 0; l < 32; ++l)
        for (int i = 0; i < 4; ++i)
          EXPECT_NEAR(d.host[l * 4 + i], cpu[l][i], 1e-5 * scale[l][i])
              << "lane " << l << " reg " << i;
    }
  }
}

TEST_F(RuntimeGpuTest, MmaS8IsBitExact) {
  std::mt19937 rng(101);
  Buf<uint32_t> a, b;
  Buf<int32_t> c, d;
  a.host.resize(128);
  b.host.resize(64);
  c.host.resize(128);
  for (uint32_t& r : a.host) r = static_cast<uint32_t>(rng());
  for (uint32_t& r : b.host) r = static_cast<uint32_t>(rng());
  for (int32_t& r : c.host) r = static_cast<int32_t>(rng() % 2000000) - 1000000;
  Upload(a);
  Upload(b);
  Upload(c);
  Alloc(d, 128);
  Launch(native_, "k_mma_s8", 1, 32, {&a.dev, &b.dev, &c.dev, &d.dev});
  Download(d);
  int32_t cpu[32][4];
  mma_m16n8k32_s8(cpu, WarpRegs<const uint32_t>(a.host.data(), 4),
                  WarpRegs<const uint32_t>(b.host.data(), 2),
                  WarpRegs<const int32_t>(c.host.data(), 4));
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(d.host[l * 4 + i], cpu[l][i]) << l << " " << i;
}

TEST_F(RuntimeGpuTest, LdmatrixIsBitExact) {
  std::mt19937 rng(102);
  Buf<uint16_t> words;
  Buf<int> slot;
  Buf<uint32_t> out;
  words.host.resize(64 * 8);
  for (uint16_t& w : words.host) w = static_cast<uint16_t>(rng());
  slot.host.resize(32);
  std::vector<int> perm(64);
  for (int i = 0; i < 64; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int l = 0; l < 32; ++l) slot.host[l] = perm[l];
  Upload(words);
  Upload(slot);
  Alloc(out, 6 * 32 * 4);
  Launch(native_, "k_ldmatrix", 1, 32, {&words.dev, &slot.dev, &out.dev});
  Download(out);
  const void* rows[32];
  for (int l = 0; l < 32; ++l) rows[l] = &words.host[slot.host[l] * 8];
  void (*fns[6])(WarpRegs<uint32_t>, const void* const*) = {&ldmatrix_x1,       &ldmatrix_x2,
                                                            &ldmatrix_x4,       &ldmatrix_x1_trans,
                                                            &ldmatrix_x2_trans, &ldmatrix_x4_trans};
  const int num[6] = {1, 2, 4, 1, 2, 4};
  for (int v = 0; v < 6; ++v) {
    SCOPED_TRACE(v);
    uint32_t cpu[32][4] = {};
    fns[v](WarpRegs<uint32_t>(cpu), rows);
    for (int l = 0; l < 32; ++l)
      for (int j = 0; j < num[v]; ++j)
        EXPECT_EQ(out.host[(v * 32 + l) * 4 + j], cpu[l][j]) << "lane " << l << " reg " << j;
  }
}

TEST_F(RuntimeGpuTest, ShufflesAndReductionsAreBitExact) {
  std::mt19937 rng(103);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  Buf<float> fv, fout;
  Buf<int32_t> iv, iout;
  Buf<int> src;
  fv.host.resize(32);
  iv.host.resize(32);
  src.host.resize(32);
  for (int l = 0; l < 32; ++l) {
    fv.host[l] = dist(rng);
    iv.host[l] = static_cast<int32_t>(rng());
    src.host[l] = static_cast<int>(rng() % 64); // >= 32 wraps to src & 31
  }
  Upload(fv);
  Upload(iv);
  Upload(src);
  Alloc(fout, 13 * 32);
  Alloc(iout, 13 * 32);
  Launch(native_, "k_warp", 1, 32, {&fv.dev, &iv.dev, &src.dev, &fout.dev, &iout.dev});
  Download(fout);
  Download(iout);
  float fc[13][32];
  int32_t ic[13][32];
  const unsigned xs[5] = {1, 2, 5, 16, 31}, ds[4] = {1, 3, 16, 31};
  int row = 0;
  for (unsigned m : xs) {
    shfl_xor(fc[row], fv.host.data(), m);
    shfl_xor(ic[row++], iv.host.data(), m);
  }
  for (unsigned d : ds) {
    shfl_down(fc[row], fv.host.data(), d);
    shfl_down(ic[row++], iv.host.data(), d);
  }
  shfl_idx(fc[row], fv.host.data(), src.host.data());
  shfl_idx(ic[row++], iv.host.data(), src.host.data());
  for (int k = 0; k < 3; ++k, ++row) {
    std::memcpy(fc[row], fv.host.data(), 128);
    std::memcpy(ic[row], iv.host.data(), 128);
    if (k == 0) warp_reduce_sum(fc[row]), warp_reduce_sum(ic[row]);
    if (k == 1) warp_reduce_max(fc[row]), warp_reduce_max(ic[row]);
    if (k == 2) warp_reduce_min(fc[row]), warp_reduce_min(ic[row]);
  }
  for (int r = 0; r < 13; ++r) {
    for (int l = 0; l < 32; ++l) {
      EXPECT_EQ(float_bits(fout.host[r * 32 + l]), float_bits(fc[r][l]))
          << "row " << r << " lane " << l;
      EXPECT_EQ(iout.host[r * 32 + l], ic[r][l]) << "row " << r << " lane " << l;
    }
  }
}

TEST_F(RuntimeGpuTest, CpAsyncZeroFillIsBitExact) {
  std::mt19937 rng(104);
  Buf<unsigned char> src, out;
  src.host.resize(32 * 32);
  for (unsigned char& b : src.host) b = static_cast<unsigned char>(rng() | 1);
  Upload(src);
  Alloc(out, 32 * 28);
  Launch(native_, "k_cp_async", 1, 32, {&src.dev, &out.dev});
  Download(out);
  for (int l = 0; l < 32; ++l) {
    unsigned char cpu[28];
    const unsigned char* s = &src.host[l * 32];
    cp_async_cg(cpu, s, l % 17);
    cp_async_ca<8>(cpu + 16, s + 16, l % 9);
    cp_async_ca<4>(cpu + 24, s + 24, l % 5);
    for (int i = 0; i < 28; ++i)
      EXPECT_EQ(out.host[l * 28 + i], cpu[i]) << "lane " << l << " byte " << i;
  }
}

// The byte of a 128-byte swizzled tile (rows of 128 bytes, 1024-byte
// aligned) where the tile's byte `offset` lands: 16-byte chunk c of row r
// at chunk c ^ (r % 8), as a TMA load with that swizzle writes it.
size_t Swizzled128(size_t offset) { return offset ^ (((offset >> 7) & 7) << 4); }

// fp8 wgmma from swizzled shared memory, against the CPU twin run on the
// same images through the same wrappers. Data set 0 holds multiples of 1/4
// in [-1, 1] (every product and partial sum exact in a few bits): tensor
// cores must agree bit for bit whatever their order and accumulator width.
// Data set 1 holds random values of the whole [-2, 2] range with tiny
// (subnormal) ones mixed in: the tolerance covers Hopper's fp8 accumulation,
// which keeps fewer bits than f32 inside an instruction.
TEST_F(RuntimeGpuTest, WgmmaFp8MatchesTheCpuEmulation) {
  if (hopper_ == nullptr) GTEST_SKIP() << "fp8 wgmma needs compute capability 9.0 (sm_90a)";
  std::mt19937 rng(106);
  for (int e5m2 = 0; e5m2 < 2; ++e5m2) {
    for (int set = 0; set < 2; ++set) {
      SCOPED_TRACE(testing::Message() << (e5m2 ? "e5m2" : "e4m3") << " data set " << set);
      auto value = [&](size_t i) {
        if (set == 0) return 0.25f * static_cast<float>(static_cast<int>(rng() % 9) - 4);
        const float f = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
        return i % 7 == 3 ? f * 0.001f : f;
      };
      auto encode = [&](float f) -> unsigned char {
        return e5m2 ? float_to_e5m2(f).bits : float_to_e4m3(f).bits;
      };
      auto decode = [&](unsigned char v) -> float {
        return e5m2 ? e5m2_to_float(fp8_e5m2_t{v}) : e4m3_to_float(fp8_e4m3_t{v});
      };
      // Row-major A (64 x 128) and B (128 x 128, N x K) and their images.
      std::vector<unsigned char> am(64 * 128), bm(128 * 128);
      Buf<unsigned char> a, b;
      Buf<float> c, d;
      a.host.resize(am.size());
      b.host.resize(bm.size());
      for (size_t i = 0; i < am.size(); ++i) a.host[Swizzled128(i)] = am[i] = encode(value(i));
      for (size_t i = 0; i < bm.size(); ++i) b.host[Swizzled128(i)] = bm[i] = encode(value(i));
      c.host.resize(128 * 64);
      for (float& v : c.host) v = set == 0 ? 0.25f * static_cast<float>(rng() % 9) : value(0);
      Upload(a);
      Upload(b);
      Upload(c);
      Alloc(d, 128 * 64);
      int variant = e5m2;
      Launch(hopper_, "k_wgmma_fp8", 1, 128, {&a.dev, &b.dev, &c.dev, &d.dev, &variant},
             8192 + 16384);
      Download(d);
      drv_->cuMemFree(a.dev);
      drv_->cuMemFree(b.dev);
      drv_->cuMemFree(c.dev);

      std::vector<float> cpu(128 * 64);
      char error[256] = "";
      ASSERT_EQ(launch_grid(
                    1, 1, 1, 128, 1, 1, 8192 + 16384,
                    [&] {
                      unsigned char* s = dyn_smem();
                      const int t = tid_x();
                      for (int i = t; i < 64 * 128; i += 128) s[i] = a.host[i];
                      for (int i = t; i < 128 * 128; i += 128) s[8192 + i] = b.host[i];
                      sync_threads();
                      float acc[64];
                      for (int i = 0; i < 64; ++i) acc[i] = c.host[t * 64 + i];
                      for (int ks = 0; ks < 4; ++ks) {
                        if (e5m2) {
                          wgmma_m64n128k32_e5m2<0, 0, 16, 1024, 1, 16, 1024, 1>(acc, s + 32 * ks,
                                                                                s + 8192 + 32 * ks);
                        } else {
                          wgmma_m64n128k32_e4m3<0, 0, 16, 1024, 1, 16, 1024, 1>(acc, s + 32 * ks,
                                                                                s + 8192 + 32 * ks);
                        }
                      }
                      for (int i = 0; i < 64; ++i) cpu[t * 64 + i] = acc[i];
                    },
                    error, sizeof error),
                0)
          << error;
      int failures = 0;
      double worst = 0;
      for (int t = 0; t < 128; ++t) {
        const int w = t / 32, g = (t % 32) / 4, q = t % 4;
        for (int reg = 0; reg < 64; ++reg) {
          const int row = 16 * w + g + 8 * (reg % 4 / 2), col = 8 * (reg / 4) + 2 * q + reg % 2;
          double scale = std::fabs(c.host[t * 64 + reg]);
          for (int k = 0; k < 128; ++k)
            scale += std::fabs(static_cast<double>(decode(am[row * 128 + k])) *
                               static_cast<double>(decode(bm[col * 128 + k])));
          const float gpu = d.host[t * 64 + reg], emu = cpu[t * 64 + reg];
          const double diff = std::fabs(static_cast<double>(gpu) - emu);
          if (scale > 0) worst = std::max(worst, diff / scale);
          const bool ok = set == 0 ? float_bits(gpu) == float_bits(emu) : diff <= 1e-3 * scale;
          if (!ok && ++failures <= 10)
            ADD_FAILURE() << "D(" << row << ", " << col << "): GPU " << gpu << ", CPU " << emu;
        }
      }
      EXPECT_EQ(failures, 0);
      std::printf("%s data set %d: largest |GPU - CPU| / (|c| + sum |a b|) = %g\n",
                  e5m2 ? "e5m2" : "e4m3", set, worst);
    }
  }
}

bool SameFloat(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || float_bits(a) == float_bits(b);
}

TEST_F(RuntimeGpuTest, ConversionsAreBitExact) {
  // Every half and bf16 value, the midpoints and neighbours around them,
  // fp8 boundaries, specials, and random bit patterns.
  std::vector<float> xs;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(half_t{static_cast<uint16_t>(h)});
    const float g = bfloat16_to_float(bfloat16_t{static_cast<uint16_t>(h)});
    for (float v : {f, g, std::nextafter(f, 1e30f), std::nextafter(f, -1e30f)}) xs.push_back(v);
    xs.push_back(bits_float((h << 16) | 0x8000u)); // bf16 midpoint
    xs.push_back(bits_float((h << 16) | 0x1000u)); // tf32 tie
  }
  for (float v : {448.0f, 464.0f, 480.0f, 57344.0f, 61440.0f, 1e30f, 65520.0f})
    for (float s : {1.0f, -1.0f}) xs.push_back(s * v);
  xs.push_back(std::numeric_limits<float>::infinity());
  xs.push_back(-std::numeric_limits<float>::infinity());
  xs.push_back(std::nanf(""));
  std::mt19937 rng(105);
  for (int i = 0; i < 1000000; ++i) xs.push_back(bits_float(static_cast<uint32_t>(rng())));
  const int n = static_cast<int>(xs.size());

  for (void* module : {native_, jit_}) {
    SCOPED_TRACE(module == native_ ? "native cubin" : "compute_80 PTX");
    Buf<float> x, tf, dh, dbf, de4, de5;
    Buf<uint16_t> h, bf;
    Buf<uint8_t> e4, e5;
    x.host = xs;
    Upload(x);
    Alloc(h, n);
    Alloc(bf, n);
    Alloc(e4, n);
    Alloc(e5, n);
    Alloc(tf, n);
    Alloc(dh, 65536);
    Alloc(dbf, 65536);
    Alloc(de4, 256);
    Alloc(de5, 256);
    int nn = n;
    Launch(module, "k_convert", static_cast<unsigned>((n + 255) / 256), 256,
           {&x.dev, &nn, &h.dev, &bf.dev, &e4.dev, &e5.dev, &tf.dev, &dh.dev, &dbf.dev, &de4.dev,
            &de5.dev});
    for (auto* b : {&tf, &dh, &dbf, &de4, &de5}) Download(*b);
    Download(h);
    Download(bf);
    Download(e4);
    Download(e5);
    drv_->cuMemFree(x.dev);
    int failures = 0;
    auto check = [&](bool ok, const char* what, uint32_t input_bits) {
      if (ok || ++failures > 20) return;
      ADD_FAILURE() << what << " differs for input bits 0x" << std::hex << input_bits;
    };
    for (int i = 0; i < n; ++i) {
      const float f = xs[i];
      const bool nan = std::isnan(f);
      // NaN results are compared by kind: the GPU may keep a payload.
      check(nan ? (h.host[i] & 0x7fffu) > 0x7c00u : h.host[i] == float_to_half(f).bits, "f16",
            float_bits(f));
      check(nan ? (bf.host[i] & 0x7fffu) > 0x7f80u : bf.host[i] == float_to_bfloat16(f).bits,
            "bf16", float_bits(f));
      check(nan ? (e4.host[i] & 0x7fu) == 0x7fu : e4.host[i] == float_to_e4m3(f).bits, "e4m3",
            float_bits(f));
      check(nan ? (e5.host[i] & 0x7fu) > 0x7cu : e5.host[i] == float_to_e5m2(f).bits, "e5m2",
            float_bits(f));
      check(SameFloat(tf.host[i], tf32_round(f)), "tf32", float_bits(f));
    }
    for (uint32_t c = 0; c < 65536; ++c) {
      check(SameFloat(dh.host[c], half_to_float(half_t{static_cast<uint16_t>(c)})), "f16 decode",
            c);
      check(SameFloat(dbf.host[c], bfloat16_to_float(bfloat16_t{static_cast<uint16_t>(c)})),
            "bf16 decode", c);
    }
    for (uint32_t c = 0; c < 256; ++c) {
      check(SameFloat(de4.host[c], e4m3_to_float(fp8_e4m3_t{static_cast<uint8_t>(c)})),
            "e4m3 decode", c);
      check(SameFloat(de5.host[c], e5m2_to_float(fp8_e5m2_t{static_cast<uint8_t>(c)})),
            "e5m2 decode", c);
    }
    EXPECT_EQ(failures, 0);
  }
}

} // namespace
} // namespace kiln::rt
