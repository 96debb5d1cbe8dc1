#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>
#include <vector>

#include "compiler/toolchain/nvrtc.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/compiler/toolchain/cuda_test_util.h"

namespace kiln::toolchain {
namespace {

using ::testing::HasSubstr;
using namespace kiln::toolchain::testing;

class NvrtcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaToolkitPresent()) GTEST_SKIP() << kNoToolkit;
  }
};

TEST_F(NvrtcTest, VectorAddToCubin) {
  for (const std::string arch : {"sm_80", "sm_90", "sm_90a"}) {
    SCOPED_TRACE(arch);
    absl::StatusOr<CompileOutput> out = NvrtcCompile(VectorAdd(arch));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_TRUE(IsElf(out->cubin));
    EXPECT_TRUE(out->ptx.empty());
    EXPECT_GT(out->elapsed.count(), 0);
    const ResourceUsage* vadd = FindKernel(out->kernels, "vadd");
    ASSERT_NE(vadd, nullptr) << out->log;
    EXPECT_EQ(vadd->arch, arch);
    EXPECT_GT(vadd->registers, 0);
    EXPECT_EQ(vadd->shared_bytes, 0);
    EXPECT_EQ(vadd->spill_store_bytes, 0);
  }
}

TEST_F(NvrtcTest, SharedMemoryAndInMemoryHeader) {
  CudaCompileInput in;
  in.source = kSharedReverse;
  in.headers["tile.h"] = kTileHeader;
  in.arch = "sm_90";
  absl::StatusOr<CompileOutput> out = NvrtcCompile(in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(IsElf(out->cubin));
  const ResourceUsage* reverse = FindKernel(out->kernels, "reverse");
  ASSERT_NE(reverse, nullptr) << out->log;
  EXPECT_EQ(reverse->shared_bytes, 256 * 4);
  EXPECT_EQ(reverse->barriers, 1);
  EXPECT_GT(reverse->registers, 0);
}

TEST_F(NvrtcTest, PtxOnlySkipsPtxas) {
  CudaCompileInput in = VectorAdd("sm_80");
  in.want_cubin = false;
  in.want_ptx = true;
  absl::StatusOr<CompileOutput> out = NvrtcCompile(in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->cubin.empty());
  EXPECT_THAT(out->ptx, HasSubstr(".visible .entry vadd"));
  EXPECT_THAT(out->ptx, HasSubstr(".target sm_80"));
  EXPECT_TRUE(out->kernels.empty());
}

TEST_F(NvrtcTest, CubinAndPtxTogether) {
  CudaCompileInput in = VectorAdd("sm_90a");
  in.want_ptx = true;
  in.fast_math = true;
  in.line_info = true;
  absl::StatusOr<CompileOutput> out = NvrtcCompile(in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(IsElf(out->cubin));
  EXPECT_THAT(out->ptx, HasSubstr(".visible .entry vadd"));
  EXPECT_THAT(out->ptx, HasSubstr(".target sm_90a"));
  EXPECT_THAT(out->ptx, HasSubstr(".loc")); // line info
  EXPECT_EQ(out->kernels.size(), 1u);
}

TEST_F(NvrtcTest, SyntaxErrorIsInvalidArgumentWithLine) {
  CudaCompileInput in;
  in.source = kSyntaxError;
  in.program_name = "broken.cu";
  absl::StatusOr<CompileOutput> out = NvrtcCompile(in);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // The error is reported at line 3 or 4 (after the missing ';').
  EXPECT_THAT(std::string(out.status().message()),
              ::testing::ContainsRegex("broken\\.cu\\([34]\\)"));
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("error"));
}

TEST_F(NvrtcTest, MissingHeaderIsAnError) {
  CudaCompileInput in;
  in.source = kSharedReverse; // includes "tile.h", not supplied
  absl::StatusOr<CompileOutput> out = NvrtcCompile(in);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("tile.h"));
}

TEST_F(NvrtcTest, RejectedOptionIsInvalidArgument) {
  CudaCompileInput in = VectorAdd("sm_80");
  in.extra_options = {"--no-such-nvrtc-option"};
  absl::StatusOr<CompileOutput> out = NvrtcCompile(in);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
}

TEST_F(NvrtcTest, ConcurrentCompilesAreIndependent) {
  constexpr int kThreads = 4;
  std::vector<absl::StatusOr<CompileOutput>> results(kThreads, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&results, i] {
      CudaCompileInput in;
      in.source = i % 2 == 0 ? kVectorAdd : kSharedReverse;
      in.headers["tile.h"] = kTileHeader;
      in.arch = i < 2 ? "sm_80" : "sm_90";
      results[static_cast<size_t>(i)] = NvrtcCompile(in);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kThreads; ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(results[static_cast<size_t>(i)].ok()) << results[static_cast<size_t>(i)].status();
    EXPECT_NE(FindKernel(results[static_cast<size_t>(i)]->kernels, i % 2 == 0 ? "vadd" : "reverse"),
              nullptr);
  }
}

// Prints the median wall time of a small compile (for docs and reports).
TEST_F(NvrtcTest, SmallKernelCompileTime) {
  std::vector<double> ms;
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<CompileOutput> out = NvrtcCompile(VectorAdd("sm_80"));
    ASSERT_TRUE(out.ok()) << out.status();
    ms.push_back(std::chrono::duration<double, std::milli>(out->elapsed).count());
  }
  std::sort(ms.begin(), ms.end());
  std::cout << "NVRTC vadd sm_80 compile: median " << ms[2] << " ms (min " << ms[0] << ", max "
            << ms[4] << ")\n";
  RecordProperty("median_ms", static_cast<int>(ms[2]));
}

TEST(NvrtcRequest, InvalidRequestsAreRejectedBeforeNvrtc) {
  struct Case {
    const char* name;
    void (*mutate)(CudaCompileInput&);
  };
  const Case cases[] = {
      {"unsupported arch", [](CudaCompileInput& in) { in.arch = "sm_75"; }},
      {"arch injection", [](CudaCompileInput& in) { in.arch = "sm_80 -o /tmp/x"; }},
      {"no outputs", [](CudaCompileInput& in) { in.want_cubin = in.want_ptx = false; }},
      {"header escapes", [](CudaCompileInput& in) { in.headers["../evil.h"] = ""; }},
      {"absolute header", [](CudaCompileInput& in) { in.headers["/etc/passwd"] = ""; }},
      {"program name", [](CudaCompileInput& in) { in.program_name = "a b.cu"; }},
      {"opt level", [](CudaCompileInput& in) { in.opt_level = 7; }},
      {"option not an option", [](CudaCompileInput& in) { in.extra_options = {"file.cu"}; }},
      {"NUL in source", [](CudaCompileInput& in) { in.source.push_back('\0'); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CudaCompileInput in = VectorAdd("sm_80");
    c.mutate(in);
    EXPECT_EQ(ValidateCudaCompileInput(in).code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(ValidateCudaCompileInput(VectorAdd("sm_89")).ok());
}

TEST(NvrtcLoader, BogusPathIsFailedPrecondition) {
  absl::StatusOr<std::unique_ptr<NvrtcLibrary>> lib =
      NvrtcLibrary::Load({"/nonexistent/libnvrtc.so.13"});
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(lib.status().message()), HasSubstr("NVRTC not found"));
  EXPECT_THAT(std::string(lib.status().message()), HasSubstr("/nonexistent/libnvrtc.so.13"));
}

TEST(NvrtcLoader, ExplicitLibraryVariableIsTheOnlyCandidate) {
  // In a fresh process (threadsafe death tests re-execute the binary), so the
  // process-wide library of the other tests is untouched.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("KILN_NVRTC_LIBRARY", "/bogus/libnvrtc.so", 1);
        if (DefaultNvrtcCandidates() != std::vector<std::string>{"/bogus/libnvrtc.so"}) _exit(2);
        absl::StatusOr<CompileOutput> out = NvrtcCompile(VectorAdd("sm_80"));
        bool ok = out.status().code() == absl::StatusCode::kFailedPrecondition &&
                  out.status().message().find("/bogus/libnvrtc.so") != std::string::npos;
        _exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(NvrtcLoader, DefaultCandidatesSearchCudaHome) {
  if (getenv("KILN_NVRTC_LIBRARY") != nullptr) GTEST_SKIP() << "KILN_NVRTC_LIBRARY is set";
  std::vector<std::string> candidates = DefaultNvrtcCandidates();
  ASSERT_GE(candidates.size(), 3u);
  EXPECT_EQ(candidates[0], "libnvrtc.so.13");
  EXPECT_NE(std::find(candidates.begin(), candidates.end(), "/usr/local/cuda/lib64/libnvrtc.so.13"),
            candidates.end());
}

} // namespace
} // namespace kiln::toolchain
