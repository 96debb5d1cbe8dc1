// The runtime's embedding and the CUDA headers' compilability: the embedded
// headers are byte-identical to the files; the CUDA headers, given only
// through the embedding, compile under NVRTC (no toolkit headers) and nvcc
// for sm_80 and sm_90 with every wrapper instantiated; the CPU headers
// compile as plain C++17. Steps that need the CUDA toolkit skip without it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
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

constexpr char kNvcc[] = "/usr/local/cuda/bin/nvcc";

// Instantiates every CUDA wrapper; stores keep them from being dropped.
constexpr char kAllWrappers[] = R"cu(
#include "kiln/cuda/runtime.h"
using namespace kiln::rt;
extern "C" __global__ void instantiate_all(float* f, uint32_t* u, int32_t* s, const float* gin) {
  __shared__ __align__(128) uint16_t smem[32 * 64];
  __shared__ __align__(16) uint32_t sbuf[32 * 4];
  const uint32_t lane = lane_id();
  uint32_t a[4] = {u[0], u[1], u[2], u[3]}, b[2] = {u[4], u[5]};
  float c[4] = {f[0], f[1], f[2], f[3]}, d[4];
  mma_m16n8k16_f16(d, a, b, c);
  mma_m16n8k16_bf16(d, a, b, d);
  mma_m16n8k8_tf32(d, a, b, d);
  int32_t ci[4] = {s[0], s[1], s[2], s[3]}, di[4];
  mma_m16n8k32_s8(di, a, b, ci);
  uint32_t r[4];
  const void* row = &smem[swizzle_offset(lane, 0, 64, 2, 128)];
  ldmatrix_x1(r, row); ldmatrix_x2(r, row); ldmatrix_x4(r, row);
  ldmatrix_x1_trans(r, row); ldmatrix_x2_trans(r, row); ldmatrix_x4_trans(r, row);
  cp_async_ca<4>(&sbuf[lane * 4], gin + lane, 4);
  cp_async_ca<8>(&sbuf[lane * 4], gin + lane, 0);
  cp_async_ca<16>(&sbuf[lane * 4], gin + lane);
  cp_async_cg(&sbuf[lane * 4], gin + lane, 8);
  cp_async_commit_group();
  cp_async_wait_group<1>();
  cp_async_wait_group<0>();
  cp_async_wait_all();
  sync_threads();
  float x = shfl_xor(d[0], 1u) + shfl_down(d[1], 2u) + shfl_idx(d[2], 3u);
  int32_t y = shfl_xor(di[0], 1u) + shfl_down(di[1], 2u) + shfl_idx(di[2], 3u);
  uint32_t z = shfl_xor(r[0], 1u) + shfl_down(r[1], 2u) + shfl_idx(r[2], 3u);
  x += warp_reduce_sum(x) + warp_reduce_max(x) + warp_reduce_min(x);
  y += warp_reduce_sum(y) + warp_reduce_max(y) + warp_reduce_min(y);
  z += warp_reduce_sum(z) + warp_reduce_max(z) + warp_reduce_min(z);
  x += half_to_float(float_to_half(x)) + bfloat16_to_float(float_to_bfloat16(x));
  x += e4m3_to_float(float_to_e4m3(x)) + e5m2_to_float(float_to_e5m2(x)) + tf32_round(x);
  x += fast_exp2(x) + fast_rsqrt(x) + static_cast<float>(ceildiv(y, 7));
  z += pack_half2(float_to_half(x), float_to_half(x)) + pack_bfloat162(float_to_bfloat16(x), float_to_bfloat16(x));
  z += pack_b8x4(1, 2, 3, 4) + b16_lo(z) + b16_hi(z) + sbuf[lane];
  if (x > 1e30f) assert_fail("\153\151\154\156");
  f[lane] = x; s[lane] = y; u[lane] = z;
}
)cu";

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh temporary directory holding `headers` under their names.
fs::path WriteHeaders(const std::vector<EmbeddedHeader>& headers) {
  std::string templ = (fs::temp_directory_path() / "kiln_runtime_XXXXXX").string();
  const char* dir = mkdtemp(templ.data());
  EXPECT_NE(dir, nullptr);
  for (const EmbeddedHeader& h : headers) {
    const fs::path p = fs::path(templ) / std::string(h.name);
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << h.content;
  }
  return templ;
}

// Runs `cmd` with a time limit; returns its exit status and sets `log`.
int RunCommand(const std::string& cmd, const fs::path& dir, std::string* log) {
  const fs::path log_path = dir / "cmd.log";
  const int rc = std::system(("timeout 300 " + cmd + " > " + log_path.string() + " 2>&1").c_str());
  *log = ReadFile(log_path);
  return rc;
}

TEST(RuntimeHeaders, EmbeddedContentsAreTheFilesByteForByte) {
  const fs::path root = fs::path(KILN_SOURCE_DIR) / "compiler" / "runtime";
  struct Set {
    const char* dir;
    const std::vector<EmbeddedHeader>* headers;
  };
  for (const Set& s : {Set{"cuda", &CudaRuntimeHeaders()}, Set{"cpu", &CpuRuntimeHeaders()}}) {
    SCOPED_TRACE(s.dir);
    std::set<std::string> on_disk, embedded;
    for (const auto& e : fs::directory_iterator(root / s.dir))
      if (e.path().extension() == ".h") on_disk.insert(e.path().filename().string());
    for (const EmbeddedHeader& h : *s.headers) {
      const std::string name(h.name);
      const std::string prefix = std::string("kiln/") + s.dir + "/";
      ASSERT_EQ(name.rfind(prefix, 0), 0u) << name;
      embedded.insert(name.substr(prefix.size()));
      EXPECT_EQ(std::string(h.content), ReadFile(root / s.dir / name.substr(prefix.size())))
          << name;
    }
    EXPECT_EQ(embedded, on_disk);
    EXPECT_TRUE(embedded.count("runtime.h"));
  }
  ASSERT_NE(FindRuntimeHeader("kiln/cuda/mma.h"), nullptr);
  EXPECT_EQ(FindRuntimeHeader("kiln/cuda/mma.h")->name, "kiln/cuda/mma.h");
  EXPECT_EQ(FindRuntimeHeader("kiln/cpu/nope.h"), nullptr);
}

TEST(RuntimeHeaders, CpuHeadersCompileAsPlainCpp17) {
  const fs::path dir = WriteHeaders(CpuRuntimeHeaders());
  std::ofstream(dir / "use.cc") << "#include \"kiln/cpu/runtime.h\"\nint main() { return 0; }\n";
  std::string log;
  EXPECT_EQ(RunCommand("c++ -std=c++17 -Wall -Wextra -Werror -pedantic -fsyntax-only -I " +
                           dir.string() + " " + (dir / "use.cc").string(),
                       dir, &log),
            0)
      << log;
  fs::remove_all(dir);
}

TEST(RuntimeHeaders, NvccCompilesEveryCudaWrapperFromTheEmbeddedHeaders) {
  if (!fs::exists(kNvcc)) GTEST_SKIP() << "no CUDA toolkit at /usr/local/cuda";
  const fs::path dir = WriteHeaders(CudaRuntimeHeaders());
  std::ofstream(dir / "all.cu") << kAllWrappers;
  for (const char* arch : {"sm_80", "sm_90"}) {
    SCOPED_TRACE(arch);
    const fs::path cubin = dir / (std::string(arch) + ".cubin");
    std::string log;
    ASSERT_EQ(RunCommand(std::string(kNvcc) + " -cubin -arch=" + arch + " -I " + dir.string() +
                             " -o " + cubin.string() + " " + (dir / "all.cu").string(),
                         dir, &log),
              0)
        << log;
    EXPECT_GT(fs::file_size(cubin), 0u);
  }
  fs::remove_all(dir);
}

// NVRTC, as the toolchain uses it: the headers come only from memory.
TEST(RuntimeHeaders, NvrtcCompilesWithOnlyTheEmbeddedHeaders) {
  void* lib = nullptr;
  for (const char* name : {"libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so",
                           "/usr/local/cuda/lib64/libnvrtc.so.13"}) {
    if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)) != nullptr) break;
  }
  if (lib == nullptr) GTEST_SKIP() << "no NVRTC library";
  using Create =
      int (*)(void**, const char*, const char*, int, const char* const*, const char* const*);
  using Compile = int (*)(void*, int, const char* const*);
  using LogSize = int (*)(void*, size_t*);
  using GetLog = int (*)(void*, char*);
  using Destroy = int (*)(void**);
  auto create = reinterpret_cast<Create>(dlsym(lib, "nvrtcCreateProgram"));
  auto compile = reinterpret_cast<Compile>(dlsym(lib, "nvrtcCompileProgram"));
  auto log_size = reinterpret_cast<LogSize>(dlsym(lib, "nvrtcGetProgramLogSize"));
  auto get_log = reinterpret_cast<GetLog>(dlsym(lib, "nvrtcGetProgramLog"));
  auto destroy = reinterpret_cast<Destroy>(dlsym(lib, "nvrtcDestroyProgram"));
  ASSERT_TRUE(create && compile && log_size && get_log && destroy);
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
  for (const char* arch : {"--gpu-architecture=sm_80", "--gpu-architecture=sm_90"}) {
    SCOPED_TRACE(arch);
    void* prog = nullptr;
    ASSERT_EQ(create(&prog, kAllWrappers, "all.cu", static_cast<int>(names.size()),
                     content_ptrs.data(), name_ptrs.data()),
              0);
    const char* opts[] = {arch, "--std=c++17"};
    const int rc = compile(prog, 2, opts);
    size_t n = 0;
    log_size(prog, &n);
    std::string log(n, '\0');
    get_log(prog, log.data());
    EXPECT_EQ(rc, 0) << log;
    destroy(&prog);
  }
}

} // namespace
} // namespace kiln::runtime
