// The thread-level API is the same on both targets: one kernel body calling
// every kiln::rt thread operation, math function and conversion (all 15x15
// type pairs) compiles under NVRTC from the embedded CUDA headers alone for
// sm_80 and sm_90 (and its PTX assembles with ptxas and uses the intended
// instructions), and the same text compiles as host C++17 against the
// embedded CPU headers. Likewise for sm_90a, a body calling the wgmma forms
// (16-bit shared and register A, fp8 e4m3 and e5m2) from their own headers.
// Steps that need the CUDA toolkit skip without it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <stdlib.h>

#include "compiler/runtime/runtime_headers.h"
#include "gtest/gtest.h"

namespace kiln::runtime {
namespace {

namespace fs = std::filesystem;

// The body both targets compile; KILN_FN is the target's function prefix.
constexpr char kBody[] = R"cc(
namespace rt = kiln::rt;

template <class T>
KILN_FN void CopyBytes(unsigned char* dst, const T* src) {
  const unsigned char* s = reinterpret_cast<const unsigned char*>(src);
  for (unsigned i = 0; i < sizeof(T); ++i) dst[i] = s[i];
}

template <class To, class From>
KILN_FN void CvtOne(const unsigned char* in, unsigned char*& out) {
  From v;
  unsigned char* p = reinterpret_cast<unsigned char*>(&v);
  for (unsigned i = 0; i < sizeof(From); ++i) p[i] = in[i];
  const To t = rt::cvt<To>(v);
  CopyBytes(out, &t);
  out += sizeof(To);
}

template <class To, class... Froms>
KILN_FN void CvtRow(const unsigned char* in, unsigned char*& out) {
  (CvtOne<To, Froms>(in, out), ...);
}

template <class... Ts>
KILN_FN void CvtAllPairs(const unsigned char* in, unsigned char* out) {
  (CvtRow<Ts, Ts...>(in, out), ...);
}

KILN_FN void Body(float* f, double* d, int* s, unsigned* u, long long* ll, rt::half_t* h,
                  rt::bfloat16_t* bf, const float* gin, unsigned char* bytes) {
  unsigned char* smem = rt::dyn_smem();
  const int t = rt::tid_x() + rt::tid_y() + rt::tid_z() + rt::bid_x() + rt::bid_y() +
                rt::bid_z() + rt::nbid_x() + rt::nbid_y() + rt::nbid_z();
  const int lane = t % 32;
  unsigned r[4] = {0, 0, 0, 0};
  float acc[4] = {f[0], f[1], f[2], f[3]};
  int iacc[4] = {s[0], s[1], s[2], s[3]};
  const void* row = smem + 16 * lane;
  rt::ldmatrix_x1(r, row);
  rt::ldmatrix_x2(r, row);
  rt::ldmatrix_x4(r, row);
  rt::ldmatrix_x1_trans(r, row);
  rt::ldmatrix_x2_trans(r, row);
  rt::ldmatrix_x4_trans(r, row);
  rt::mma_m16n8k16_f16(acc, r, r + 2, acc);
  rt::mma_m16n8k16_bf16(acc, r, r + 2, acc);
  rt::mma_m16n8k8_tf32(acc, r, r + 2, acc);
  rt::mma_m16n8k32_s8(iacc, r, r + 2, iacc);
  rt::cp_async_4(smem + 1024 + 4 * lane, gin + lane, 4);
  rt::cp_async_8(smem + 1280 + 8 * lane, gin + 2 * lane, 3);
  rt::cp_async_16(smem + 1536 + 16 * lane, gin + 4 * lane, 16);
  rt::cp_async_commit();
  rt::cp_async_wait<1>();
  rt::cp_async_wait<0>();
  rt::sync_threads();
  rt::copy_2(smem + 2048 + 2 * lane, gin);
  rt::copy_4(smem + 2112 + 4 * lane, gin);
  rt::copy_8(smem + 2304 + 8 * lane, gin);
  rt::copy_16(smem + 2560 + 16 * lane, gin + 4 * lane);

  float xf;
  double xd;
  int xi;
  unsigned xu;
  long long xl;
  rt::half_t xh;
  rt::bfloat16_t xb;
  signed char x8;
  rt::shfl_xor(&xf, acc[0], 1);
  rt::shfl_xor(&xd, d[lane], 2);
  rt::shfl_xor(&xi, iacc[0], 4);
  rt::shfl_xor(&xu, r[0], 8);
  rt::shfl_xor(&xl, ll[lane], 16);
  rt::shfl_xor(&xh, h[lane], 3);
  rt::shfl_xor(&xb, bf[lane], 5);
  rt::shfl_xor(&x8, static_cast<signed char>(xi), 1);

  rt::atomic_add(f, xf);
  rt::atomic_add(d, xd);
  rt::atomic_add(s, xi);
  rt::atomic_add(u, xu);
  rt::atomic_add(ll, xl);
  rt::atomic_add(h + 1, xh);
  rt::atomic_add(bf + 1, xb);
  rt::atomic_max(f + 1, xf);
  rt::atomic_max(d + 1, xd);
  rt::atomic_max(s + 1, xi);
  rt::atomic_max(u + 1, xu);
  rt::atomic_max(ll + 1, xl);
  rt::atomic_max(h + 2, xh);
  rt::atomic_min(f + 2, xf);
  rt::atomic_min(d + 2, xd);
  rt::atomic_min(s + 2, xi);
  rt::atomic_min(u + 2, xu);
  rt::atomic_min(ll + 2, xl);
  rt::atomic_min(bf + 2, xb);

  float m = rt::exp(xf) + rt::exp2(xf) + rt::log(xf) + rt::log2(xf) + rt::sqrt(xf) +
            rt::rsqrt(xf) + rt::abs(xf) + rt::pow(xf, xf) + rt::tanh(xf) + rt::floor(xf) +
            rt::ceil(xf) + rt::sin(xf) + rt::cos(xf) + rt::round(xf) + rt::trunc(xf) +
            rt::sigmoid(xf) + rt::min(xf, 1.0f) + rt::max(xf, 2.0f);
  double md = rt::exp(xd) + rt::exp2(xd) + rt::log(xd) + rt::log2(xd) + rt::sqrt(xd) +
              rt::rsqrt(xd) + rt::abs(xd) + rt::pow(xd, xd) + rt::tanh(xd) + rt::floor(xd) +
              rt::ceil(xd) + rt::sin(xd) + rt::cos(xd) + rt::round(xd) + rt::trunc(xd) +
              rt::sigmoid(xd) + rt::min(xd, 1.0) + rt::max(xd, 2.0);
  xi = rt::abs(xi) + rt::min(xi, 3) + rt::max(xi, 4);
  xl = rt::abs(xl) + rt::min(xl, 3LL) + rt::max(xl, 4LL);
  xu = rt::min(xu, 5u) + rt::max(xu, 6u);

  CvtAllPairs<bool, signed char, short, int, long long, unsigned char, unsigned short, unsigned,
              unsigned long long, float, double, rt::half_t, rt::bfloat16_t, rt::fp8_e4m3_t,
              rt::fp8_e5m2_t>(smem + 4096 + 16 * lane, bytes + 4096 * lane);
  f[lane] = m + static_cast<float>(x8);
  d[lane] = md;
  s[lane] = xi;
  u[lane] = xu;
  ll[lane] = xl;
}
)cc";

// The Hopper wgmma forms, each from the header generated kernels include
// for it (kiln/cuda/wgmma.h, wgmma_rs.h, wgmma_fp8.h; the CPU twin has them
// all in kiln/cpu/runtime.h). 128-byte swizzled K-major tiles: A 64 rows,
// B 128 rows, 128 bytes each.
constexpr char kWgmmaBody[] = R"cc(
namespace rt = kiln::rt;

KILN_FN void WgmmaBody(float* out) {
  unsigned char* smem = rt::dyn_smem();
  const int t = rt::tid_x();
  float acc[64];
  for (int i = 0; i < 64; ++i) acc[i] = out[t * 64 + i];
  unsigned a_regs[4] = {0, 0, 0, 0};
  rt::fence_proxy_async();
  rt::sync_threads();
  rt::wgmma_fence();
  rt::wgmma_m64n128k16_f16<0, 0, 16, 1024, 1, 16, 1024, 1>(acc, smem, smem + 8192);
  rt::wgmma_m64n128k16_rs_bf16<0, 16, 1024, 1>(acc, a_regs, smem + 8192 + 32);
  rt::wgmma_m64n128k32_e4m3<0, 0, 16, 1024, 1, 16, 1024, 1>(acc, smem + 64, smem + 8192 + 64);
  rt::wgmma_m64n8k32_e5m2<0, 0, 16, 1024, 1, 16, 1024, 1>(acc, smem + 96, smem + 8192 + 96);
  float wide[128] = {};
  rt::wgmma_m64n256k32_e5m2<0, 0, 16, 512, 2, 16, 512, 2>(wide, smem, smem + 8192);
  rt::wgmma_commit();
  rt::wgmma_wait<0>();
  for (int i = 0; i < 64; ++i) out[t * 64 + i] = acc[i] + wide[i] + wide[64 + i];
}
)cc";

constexpr char kCudaWgmmaPrelude[] = R"cc(
#include "kiln/cuda/runtime.h"
#include "kiln/cuda/wgmma.h"
#include "kiln/cuda/wgmma_rs.h"
#include "kiln/cuda/wgmma_fp8.h"
#define KILN_FN __device__
)cc";
constexpr char kCudaWgmmaKernel[] = R"cc(
extern "C" __global__ void every_wgmma_form(float* out) { WgmmaBody(out); }
)cc";

constexpr char kCudaPrelude[] = R"cc(
#include "kiln/cuda/runtime.h"
#define KILN_FN __device__
)cc";
constexpr char kCudaKernel[] = R"cc(
extern "C" __global__ void every_thread_op(float* f, double* d, int* s, unsigned* u, long long* ll,
                                           kiln::rt::half_t* h, kiln::rt::bfloat16_t* bf,
                                           const float* gin, unsigned char* bytes) {
  Body(f, d, s, u, ll, h, bf, gin, bytes);
}
)cc";

constexpr char kCpuPrelude[] = R"cc(
#include "kiln/cpu/runtime.h"
#define KILN_FN inline
)cc";
constexpr char kCpuWgmmaKernel[] = R"cc(
extern "C" int every_wgmma_form(void** args, char* error, int error_len) {
  float* out = *static_cast<float**>(args[0]);
  return kiln::rt::launch_grid(1, 1, 1, 128, 1, 1, 65536, [&] { WgmmaBody(out); }, error,
                               error_len);
}
)cc";

constexpr char kCpuKernel[] = R"cc(
extern "C" int every_thread_op(void** args, char* error, int error_len) {
  float* f = *static_cast<float**>(args[0]);
  double* d = *static_cast<double**>(args[1]);
  int* s = *static_cast<int**>(args[2]);
  unsigned* u = *static_cast<unsigned**>(args[3]);
  long long* ll = *static_cast<long long**>(args[4]);
  kiln::rt::half_t* h = *static_cast<kiln::rt::half_t**>(args[5]);
  kiln::rt::bfloat16_t* bf = *static_cast<kiln::rt::bfloat16_t**>(args[6]);
  const float* gin = *static_cast<const float**>(args[7]);
  unsigned char* bytes = *static_cast<unsigned char**>(args[8]);
  return kiln::rt::launch_grid(1, 1, 1, 32, 1, 1, 8192,
                               [&] { Body(f, d, s, u, ll, h, bf, gin, bytes); }, error, error_len);
}
)cc";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path MakeTempDir() {
  std::string templ = (fs::temp_directory_path() / "kiln_thread_ops_XXXXXX").string();
  EXPECT_NE(mkdtemp(templ.data()), nullptr);
  return templ;
}

// Runs `cmd` under a time limit; returns its exit status and sets `log`.
int RunCommand(const std::string& cmd, const fs::path& dir, std::string* log) {
  const fs::path log_path = dir / "cmd.log";
  const int rc = std::system(("timeout 300 " + cmd + " > " + log_path.string() + " 2>&1").c_str());
  *log = ReadFile(log_path);
  return rc;
}

struct Nvrtc {
  using Create = int (*)(void**, const char*, const char*, int, const char* const*,
                         const char* const*);
  using Compile = int (*)(void*, int, const char* const*);
  using Size = int (*)(void*, size_t*);
  using Get = int (*)(void*, char*);
  using Destroy = int (*)(void**);
  void* lib = nullptr;
  Create create = nullptr;
  Compile compile = nullptr;
  Size log_size = nullptr, ptx_size = nullptr;
  Get get_log = nullptr, get_ptx = nullptr;
  Destroy destroy = nullptr;

  bool Load() {
    for (const char* name : {"libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so",
                             "/usr/local/cuda/lib64/libnvrtc.so.13"}) {
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
    }
    if (lib == nullptr) return false;
    create = reinterpret_cast<Create>(dlsym(lib, "nvrtcCreateProgram"));
    compile = reinterpret_cast<Compile>(dlsym(lib, "nvrtcCompileProgram"));
    log_size = reinterpret_cast<Size>(dlsym(lib, "nvrtcGetProgramLogSize"));
    get_log = reinterpret_cast<Get>(dlsym(lib, "nvrtcGetProgramLog"));
    ptx_size = reinterpret_cast<Size>(dlsym(lib, "nvrtcGetPTXSize"));
    get_ptx = reinterpret_cast<Get>(dlsym(lib, "nvrtcGetPTX"));
    destroy = reinterpret_cast<Destroy>(dlsym(lib, "nvrtcDestroyProgram"));
    return create && compile && log_size && get_log && ptx_size && get_ptx && destroy;
  }

  // Compiles `source` with only the embedded CUDA headers; returns the PTX,
  // or an empty string with the log in `log`.
  std::string ToPtx(const std::string& source, const std::string& arch, std::string* log) {
    std::vector<std::string> names, contents;
    for (const EmbeddedHeader& h : CudaRuntimeHeaders()) {
      names.emplace_back(h.name);
      contents.emplace_back(h.content);
    }
    std::vector<const char*> name_ptrs, content_ptrs;
    for (size_t i = 0; i < names.size(); ++i) {
      name_ptrs.push_back(names[i].c_str());
      content_ptrs.push_back(contents[i].c_str());
    }
    void* prog = nullptr;
    if (create(&prog, source.c_str(), "every_thread_op.cu", static_cast<int>(names.size()),
               content_ptrs.data(), name_ptrs.data()) != 0) {
      *log = "nvrtcCreateProgram failed";
      return "";
    }
    const std::string arch_opt = "--gpu-architecture=" + arch;
    const char* opts[] = {arch_opt.c_str(), "--std=c++17"};
    const int rc = compile(prog, 2, opts);
    size_t n = 0;
    log_size(prog, &n);
    log->assign(n, '\0');
    get_log(prog, log->data());
    *log = std::string(log->c_str());
    std::string ptx;
    if (rc == 0) {
      ptx_size(prog, &n);
      ptx.assign(n, '\0');
      get_ptx(prog, ptx.data());
      ptx = std::string(ptx.c_str()); // the size counts the terminating NUL
    }
    destroy(&prog);
    return ptx;
  }
};

TEST(CudaThreadOps, EveryOperationCompilesUnderNvrtcWithTheIntendedInstructions) {
  Nvrtc nvrtc;
  if (!nvrtc.Load()) GTEST_SKIP() << "no NVRTC library";
  const std::string source = std::string(kCudaPrelude) + kBody + kCudaKernel;
  const char* ptxas = "/usr/local/cuda/bin/ptxas";
  for (const char* arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    std::string log;
    const std::string ptx = nvrtc.ToPtx(source, arch, &log);
    ASSERT_FALSE(ptx.empty()) << log;
    for (const char* insn : {"cp.async.ca.shared.global",
                             "cp.async.cg.shared.global",
                             "cp.async.commit_group",
                             "cp.async.wait_group 1",
                             "cp.async.wait_group 0",
                             "bar.sync",
                             "ldmatrix.sync.aligned.m8n8.x1.shared.b16",
                             "ldmatrix.sync.aligned.m8n8.x4.trans",
                             "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                             "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                             "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
                             "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
                             "shfl.sync.bfly.b32",
                             "add.f32",
                             "add.f64",
                             "max.s64",
                             "min.u32",
                             "cas.b32",
                             "cas.b64",
                             "ld.global.v4.u32"}) {
      EXPECT_NE(ptx.find(insn), std::string::npos) << insn;
    }
    // cp_async_4 and cp_async_8 both use .ca.
    EXPECT_NE(ptx.find("cp.async.ca.shared.global", ptx.find("cp.async.ca.shared.global") + 1),
              std::string::npos);
    if (!fs::exists(ptxas)) continue;
    const fs::path dir = MakeTempDir();
    std::ofstream(dir / "k.ptx") << ptx;
    ASSERT_EQ(RunCommand(std::string(ptxas) + " -arch=" + arch + " -o " +
                             (dir / "k.cubin").string() + " " + (dir / "k.ptx").string(),
                         dir, &log),
              0)
        << log;
    fs::remove_all(dir);
  }
}

// Compiles `source` as host C++17 against the embedded CPU headers; returns
// the exit status and sets `log`.
int CompileAgainstCpuRuntime(const std::string& source, std::string* log) {
  const fs::path dir = MakeTempDir();
  for (const EmbeddedHeader& h : CpuRuntimeHeaders()) {
    const fs::path p = dir / "include" / std::string(h.name);
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << h.content;
  }
  std::ofstream(dir / "k.cc") << source;
  const int rc = RunCommand("c++ -std=c++17 -O1 -fPIC -Wall -Wextra -Werror -c -I " +
                                (dir / "include").string() + " -o " + (dir / "k.o").string() + " " +
                                (dir / "k.cc").string(),
                            dir, log);
  fs::remove_all(dir);
  return rc;
}

TEST(CudaThreadOps, TheSameBodyCompilesAgainstTheCpuRuntime) {
  std::string log;
  EXPECT_EQ(CompileAgainstCpuRuntime(std::string(kCpuPrelude) + kBody + kCpuKernel, &log), 0)
      << log;
}

TEST(CudaThreadOps, WgmmaFormsCompileForSm90aWithTheIntendedInstructions) {
  Nvrtc nvrtc;
  if (!nvrtc.Load()) GTEST_SKIP() << "no NVRTC library";
  std::string log;
  const std::string ptx =
      nvrtc.ToPtx(std::string(kCudaWgmmaPrelude) + kWgmmaBody + kCudaWgmmaKernel, "sm_90a", &log);
  ASSERT_FALSE(ptx.empty()) << log;
  for (const char* insn :
       {"wgmma.fence.sync.aligned", "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16",
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3",
        "wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e5m2",
        "wgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e5m2", "wgmma.commit_group.sync.aligned",
        "wgmma.wait_group.sync.aligned 0"}) {
    EXPECT_NE(ptx.find(insn), std::string::npos) << insn;
  }
  const char* ptxas = "/usr/local/cuda/bin/ptxas";
  if (!fs::exists(ptxas)) return;
  const fs::path dir = MakeTempDir();
  std::ofstream(dir / "k.ptx") << ptx;
  EXPECT_EQ(RunCommand(std::string(ptxas) + " -arch=sm_90a -o " + (dir / "k.cubin").string() + " " +
                           (dir / "k.ptx").string(),
                       dir, &log),
            0)
      << log;
  fs::remove_all(dir);
}

// fp8 wgmma has no transpose operands: asking for one is a compile error
// that says so, on both targets.
TEST(CudaThreadOps, Fp8WgmmaRejectsTransposedOperands) {
  const std::string body = R"cc(
KILN_FN void Transposed(float* acc) {
  unsigned char* smem = kiln::rt::dyn_smem();
  kiln::rt::wgmma_m64n16k32_e4m3<0, 1, 16, 1024, 1, 1024, 1024, 1>(acc, smem, smem + 8192);
}
)cc";
  const char* message = "fp8 wgmma reads K-major operands only";
  std::string log;
  EXPECT_NE(CompileAgainstCpuRuntime(std::string(kCpuPrelude) + body, &log), 0);
  EXPECT_NE(log.find(message), std::string::npos) << log;
  Nvrtc nvrtc;
  if (!nvrtc.Load()) GTEST_SKIP() << "no NVRTC library";
  EXPECT_TRUE(nvrtc.ToPtx(std::string(kCudaWgmmaPrelude) + body, "sm_90a", &log).empty());
  EXPECT_NE(log.find(message), std::string::npos) << log;
}

TEST(CudaThreadOps, TheWgmmaBodyCompilesAgainstTheCpuRuntime) {
  std::string log;
  EXPECT_EQ(CompileAgainstCpuRuntime(std::string(kCpuPrelude) + kWgmmaBody + kCpuWgmmaKernel, &log),
            0)
      << log;
}

} // namespace
} // namespace kiln::runtime
