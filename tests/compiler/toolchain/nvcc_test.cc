#include <cstdlib>
#include <filesystem>

#include "compiler/toolchain/nvcc.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/compiler/toolchain/cuda_test_util.h"

namespace kiln::toolchain {
namespace {

using ::testing::HasSubstr;
using namespace kiln::toolchain::testing;
using namespace std::chrono_literals;

class NvccTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaToolkitPresent()) GTEST_SKIP() << kNoToolkit;
    absl::StatusOr<std::string> nvcc = FindNvcc();
    ASSERT_TRUE(nvcc.ok()) << nvcc.status();
  }
};

TEST_F(NvccTest, VectorAddToCubin) {
  for (const std::string arch : {"sm_80", "sm_90a"}) {
    SCOPED_TRACE(arch);
    absl::StatusOr<CompileOutput> out = NvccCompile(VectorAdd(arch));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(IsElf(out->cubin));
    EXPECT_TRUE(out->ptx.empty());
    const ResourceUsage* vadd = FindKernel(out->kernels, "vadd");
    ASSERT_NE(vadd, nullptr) << out->log;
    EXPECT_EQ(vadd->arch, arch);
    EXPECT_GT(vadd->registers, 0);
  }
}

TEST_F(NvccTest, SharedMemoryHeaderAndBothOutputs) {
  CudaCompileInput in;
  in.source = kSharedReverse;
  in.headers["tile.h"] = kTileHeader;
  in.arch = "sm_90";
  in.want_ptx = true;
  absl::StatusOr<CompileOutput> out = NvccCompile(in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(IsElf(out->cubin));
  EXPECT_THAT(out->ptx, HasSubstr(".visible .entry reverse"));
  EXPECT_THAT(out->ptx, HasSubstr(".target sm_90"));
  const ResourceUsage* reverse = FindKernel(out->kernels, "reverse");
  ASSERT_NE(reverse, nullptr) << out->log;
  EXPECT_EQ(reverse->shared_bytes, 256 * 4);
}

TEST_F(NvccTest, PtxOnly) {
  CudaCompileInput in = VectorAdd("sm_80");
  in.want_cubin = false;
  in.want_ptx = true;
  absl::StatusOr<CompileOutput> out = NvccCompile(in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->cubin.empty());
  EXPECT_THAT(out->ptx, HasSubstr(".visible .entry vadd"));
  EXPECT_THAT(out->ptx, HasSubstr(".target sm_80"));
}

TEST_F(NvccTest, SyntaxErrorIsInvalidArgumentWithLine) {
  CudaCompileInput in;
  in.source = kSyntaxError;
  in.program_name = "broken.cu";
  absl::StatusOr<CompileOutput> out = NvccCompile(in);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              ::testing::ContainsRegex("broken\\.cu\\([34]\\)"));
}

TEST_F(NvccTest, MissingHeaderIsAnError) {
  CudaCompileInput in;
  in.source = kSharedReverse;
  absl::StatusOr<CompileOutput> out = NvccCompile(in);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("tile.h"));
}

TEST_F(NvccTest, TimeoutIsDeadlineExceeded) {
  NvccOptions options;
  options.timeout = 5ms;
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<CompileOutput> out = NvccCompile(VectorAdd("sm_80"), options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kDeadlineExceeded) << out.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(NvccTest, MemoryLimitIsResourceExhausted) {
  NvccOptions options;
  options.memory_limit_bytes = int64_t{32} << 20; // too small to even load nvcc
  absl::StatusOr<CompileOutput> out = NvccCompile(VectorAdd("sm_80"), options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
}

TEST_F(NvccTest, TemporaryDirectoryIsRemoved) {
  std::filesystem::path tmp = std::filesystem::path(::testing::TempDir()) / "kiln_nvcc_tmp_test";
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(tmp);
  const char* old = getenv("TMPDIR");
  std::string saved = old != nullptr ? old : "";
  setenv("TMPDIR", tmp.c_str(), 1);
  absl::StatusOr<CompileOutput> ok = NvccCompile(VectorAdd("sm_80"));
  CudaCompileInput broken;
  broken.source = kSyntaxError;
  absl::StatusOr<CompileOutput> failed = NvccCompile(broken);
  if (old != nullptr) {
    setenv("TMPDIR", saved.c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  EXPECT_TRUE(ok.ok()) << ok.status();
  EXPECT_FALSE(failed.ok());
  EXPECT_TRUE(std::filesystem::is_empty(tmp));
  std::filesystem::remove_all(tmp);
}

TEST(Nvcc, MissingBinaryIsNotFound) {
  NvccOptions options;
  options.nvcc_path = "/nonexistent/bin/nvcc";
  absl::StatusOr<CompileOutput> out = NvccCompile(VectorAdd("sm_80"), options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("/nonexistent/bin/nvcc"));
}

TEST(Nvcc, ParseVersion) {
  struct Case {
    const char* output;
    const char* want;
  };
  const Case cases[] = {
      {"nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
       "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\n"
       "Cuda compilation tools, release 13.0, V13.0.88\n"
       "Build cuda_13.0.r13.0/compiler.36424714_0\n",
       "13.0.88"},
      {"Cuda compilation tools, release 12.4, V12.4.131\n", "12.4.131"},
      {"no version here\n", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.output);
    EXPECT_EQ(ParseNvccVersion(c.output), c.want);
  }
}

TEST_F(NvccTest, VersionFromBinary) {
  absl::StatusOr<std::string> version = NvccVersion();
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_THAT(*version, ::testing::MatchesRegex("[0-9]+\\.[0-9]+\\.[0-9]+"));
}

} // namespace
} // namespace kiln::toolchain
