// The host compiler wrapper and the .so loader: a hand-written CPU kernel in
// the shape of compiler/codegen/kernel_spec.h (including the embedded CPU
// runtime) compiles, loads and runs; compiler errors carry the compiler's
// stderr; a kernel's own error message comes back; two kernels with the same
// entry symbol stay apart (RTLD_LOCAL); limits and bad requests are clear
// errors; no temporary file is left behind.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_replace.h"
#include "compiler/toolchain/host_cc.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::toolchain {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// c[i] = a[i] + b[i] over a 1-D grid of 64-thread blocks, threads emulated by
// a loop, as the kernel_spec.h CPU entry point. Includes the CPU runtime to
// prove the embedded headers are on the include path.
constexpr char kVectorAdd[] = R"(#include "kiln/cpu/runtime.h"
#include <cstdint>

extern "C" int kiln_kernel(void** args, const int64_t* grid3, char* error, int error_len) {
  const float* a = *static_cast<const float**>(args[0]);
  const float* b = *static_cast<const float**>(args[1]);
  float* c = *static_cast<float**>(args[2]);
  const int32_t n = *static_cast<const int32_t*>(args[3]);
  constexpr int64_t kBlock = 64;
  for (int64_t bz = 0; bz < grid3[2]; ++bz)
    for (int64_t by = 0; by < grid3[1]; ++by)
      for (int64_t bx = 0; bx < grid3[0]; ++bx)
        for (int64_t t = 0; t < kBlock; ++t) {
          const int64_t i = bx * kBlock + t;
          // Through the runtime's float16 rounding and back: exact for these sums.
          if (i < n) c[i] = kiln::rt::half_to_float(kiln::rt::float_to_half(a[i] + b[i]));
        }
  return 0;
}
)";

// Fails like an emulated barrier that only some threads reach.
constexpr char kFailing[] = R"(#include <cstdint>
#include <cstdio>
extern "C" int kiln_kernel(void** args, const int64_t* grid3, char* error, int error_len) {
  std::snprintf(error, error_len, "block (%d,0,0): sync_threads reached by 96 of 128 threads",
                static_cast<int>(grid3[0]) - 1);
  return 1;
}
)";

// Returns VALUE, so two loaded objects can be told apart.
std::string Constant(int value) {
  return absl::StrReplaceAll(R"(#include <cstdint>
extern "C" int kiln_kernel(void**, const int64_t*, char*, int) { return VALUE; }
)",
                             {{"VALUE", std::to_string(value)}});
}

HostCompileInput Input(std::string source) {
  HostCompileInput in;
  in.source = std::move(source);
  return in;
}

TEST(HostCc, CompilesLoadsAndRunsAVectorAdd) {
  absl::StatusOr<HostCompileOutput> so = HostCompile(Input(kVectorAdd));
  ASSERT_TRUE(so.ok()) << so.status();
  EXPECT_EQ(so->shared_object.substr(0, 4), "\x7f"
                                            "ELF");
  EXPECT_THAT(so->command, HasSubstr("-std=c++17"));
  EXPECT_THAT(so->command, HasSubstr("-fPIC"));
  EXPECT_THAT(so->command, HasSubstr("-shared"));
  EXPECT_GT(so->elapsed.count(), 0);

  absl::StatusOr<LoadedCpuKernel> kernel = LoadedCpuKernel::Load(so->shared_object, "kiln_kernel");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  ASSERT_NE(kernel->entry(), nullptr);
  EXPECT_EQ(kernel->FindSymbol("no_such_symbol"), nullptr);

  const int32_t n = 1000;
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.5f * static_cast<float>(i % 7);
  }
  float* pa = a.data();
  float* pb = b.data();
  float* pc = c.data();
  void* args[] = {&pa, &pb, &pc, const_cast<int32_t*>(&n)};
  const int64_t grid[3] = {(n + 63) / 64, 1, 1};
  ASSERT_TRUE(kernel->Run(args, grid).ok());
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << i;
}

TEST(HostCc, CompilerErrorsCarryTheCompilersStderr) {
  HostCompileInput in = Input("extern \"C\" int kiln_kernel() {\n  return undefined_name;\n}\n");
  in.program_name = "broken.cc";
  absl::StatusOr<HostCompileOutput> so = HostCompile(in);
  ASSERT_FALSE(so.ok());
  EXPECT_EQ(so.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(so.status().message(), HasSubstr("broken.cc:2:"));
  EXPECT_THAT(so.status().message(), HasSubstr("undefined_name"));
  EXPECT_THAT(so.status().message(), HasSubstr("failed (exit code"));
}

TEST(HostCc, LongCompilerOutputIsCutTo40Lines) {
  std::string source;
  for (int i = 0; i < 100; ++i) source += "int f" + std::to_string(i) + "() { return nope; }\n";
  absl::StatusOr<HostCompileOutput> so = HostCompile(Input(source));
  ASSERT_FALSE(so.ok());
  EXPECT_THAT(so.status().message(), HasSubstr("more lines)"));
  const std::string message(so.status().message());
  EXPECT_LE(std::count(message.begin(), message.end(), '\n'), kHostCompilerErrorLines + 3);
}

TEST(HostCc, KernelErrorMessagesComeBack) {
  absl::StatusOr<HostCompileOutput> so = HostCompile(Input(kFailing));
  ASSERT_TRUE(so.ok()) << so.status();
  absl::StatusOr<LoadedCpuKernel> kernel = LoadedCpuKernel::Load(so->shared_object, "kiln_kernel");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const int64_t grid[3] = {3, 1, 1};
  absl::Status s = kernel->Run(nullptr, grid);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("block (2,0,0): sync_threads reached by 96 of 128 threads"));
}

TEST(HostCc, KernelsWithTheSameSymbolStayApart) {
  absl::StatusOr<HostCompileOutput> one = HostCompile(Input(Constant(11)));
  absl::StatusOr<HostCompileOutput> two = HostCompile(Input(Constant(22)));
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(two.ok()) << two.status();
  absl::StatusOr<LoadedCpuKernel> k1 = LoadedCpuKernel::Load(one->shared_object, "kiln_kernel");
  absl::StatusOr<LoadedCpuKernel> k2 = LoadedCpuKernel::Load(two->shared_object, "kiln_kernel");
  ASSERT_TRUE(k1.ok() && k2.ok());
  EXPECT_EQ(k1->entry()(nullptr, nullptr, nullptr, 0), 11);
  EXPECT_EQ(k2->entry()(nullptr, nullptr, nullptr, 0), 22);
  // Moving keeps the object loaded.
  LoadedCpuKernel moved = *std::move(k1);
  EXPECT_EQ(moved.entry()(nullptr, nullptr, nullptr, 0), 11);
}

TEST(HostCc, LoadErrors) {
  absl::StatusOr<HostCompileOutput> so = HostCompile(Input(Constant(1)));
  ASSERT_TRUE(so.ok()) << so.status();
  absl::StatusOr<LoadedCpuKernel> missing = LoadedCpuKernel::Load(so->shared_object, "other");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("no symbol 'other'"));
  absl::StatusOr<LoadedCpuKernel> garbage = LoadedCpuKernel::Load("not an ELF file", "k");
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(garbage.status().message(), HasSubstr("cannot load the kernel's shared object"));
}

TEST(HostCc, BadRequests) {
  HostCompileInput header = Input(Constant(1));
  header.headers["../escape.h"] = "";
  EXPECT_THAT(HostCompile(header).status().message(), HasSubstr("unsafe header name"));
  HostCompileInput name = Input(Constant(1));
  name.program_name = "/tmp/x.cc";
  EXPECT_THAT(HostCompile(name).status().message(), HasSubstr("unsafe program name"));
  HostCompileInput opt = Input(Constant(1));
  opt.opt_level = 4;
  EXPECT_EQ(HostCompile(opt).status().code(), absl::StatusCode::kInvalidArgument);
  HostCompileInput flag = Input(Constant(1));
  flag.extra_flags = {"evil"};
  EXPECT_THAT(HostCompile(flag).status().message(), HasSubstr("does not start with '-'"));
}

TEST(HostCc, ExtraHeadersAndFlags) {
  HostCompileInput in = Input("#include \"my/value.h\"\nextern \"C\" int kiln_kernel(void**, "
                              "const long*, char*, int) { return VALUE + EXTRA; }\n");
  in.headers["my/value.h"] = "#define VALUE 40\n";
  in.extra_flags = {"-DEXTRA=2"};
  in.include_cpu_runtime = false;
  absl::StatusOr<HostCompileOutput> so = HostCompile(in);
  ASSERT_TRUE(so.ok()) << so.status();
  absl::StatusOr<LoadedCpuKernel> kernel = LoadedCpuKernel::Load(so->shared_object, "kiln_kernel");
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_EQ(kernel->entry()(nullptr, nullptr, nullptr, 0), 42);
}

class HostCcTempTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kiln-hostcc-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(HostCcTempTest, MissingCompilerIsNotFound) {
  HostCompileOptions options;
  options.compiler = (dir_ / "no-such-c++").string();
  absl::StatusOr<HostCompileOutput> so = HostCompile(Input(Constant(1)), options);
  EXPECT_EQ(so.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(so.status().message(), HasSubstr("KILN_HOST_CXX"));
}

TEST_F(HostCcTempTest, SlowCompilerTimesOut) {
  const fs::path fake = dir_ / "slow-c++";
  {
    std::ofstream script(fake);
    script << "#!/bin/sh\nsleep 30\n";
  }
  chmod(fake.c_str(), 0755);
  HostCompileOptions options;
  options.compiler = fake.string();
  options.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<HostCompileOutput> so = HostCompile(Input(Constant(1)), options);
  EXPECT_EQ(so.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(so.status().message(), HasSubstr("timed out"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST_F(HostCcTempTest, MemoryLimitIsResourceExhausted) {
  HostCompileOptions options;
  options.memory_limit_bytes = int64_t{64} << 20; // too little for cc1plus
  absl::StatusOr<HostCompileOutput> so = HostCompile(Input(kVectorAdd), options);
  ASSERT_FALSE(so.ok());
  EXPECT_EQ(so.status().code(), absl::StatusCode::kResourceExhausted) << so.status();
}

TEST_F(HostCcTempTest, LeavesNoTemporaryFiles) {
  const char* old = getenv("TMPDIR");
  const std::string saved = old != nullptr ? old : "";
  setenv("TMPDIR", dir_.c_str(), 1);
  {
    absl::StatusOr<HostCompileOutput> so = HostCompile(Input(Constant(5)));
    ASSERT_TRUE(so.ok()) << so.status();
    absl::StatusOr<LoadedCpuKernel> kernel =
        LoadedCpuKernel::Load(so->shared_object, "kiln_kernel");
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_EQ(kernel->entry()(nullptr, nullptr, nullptr, 0), 5);
    EXPECT_TRUE(fs::is_empty(dir_)) << "left behind while loaded";
    EXPECT_FALSE(HostCompile(Input("syntax error")).ok());
  }
  if (old != nullptr) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

} // namespace
} // namespace kiln::toolchain
