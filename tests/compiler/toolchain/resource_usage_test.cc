#include <string>
#include <vector>

#include "compiler/toolchain/resource_usage.h"
#include "gtest/gtest.h"

namespace kiln::toolchain {
namespace {

// Captured from CUDA 13.0's ptxas (nvcc -Xptxas -v), unless noted.
constexpr char kSm80[] = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'smem' for 'sm_80'
ptxas info    : Function properties for smem
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 1 barriers, 4096 bytes smem, 368 bytes cmem[0]
ptxas info    : Compile time = 1.398 ms
ptxas info    : Compiling entry function 'vadd' for 'sm_80'
ptxas info    : Function properties for vadd
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers, 380 bytes cmem[0]
ptxas info    : Compile time = 0.866 ms
)";

// sm_90a prints no cmem[0] figure.
constexpr char kSm90a[] = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'st' for 'sm_90a'
ptxas info    : Function properties for st
    1024 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 21 registers, used 0 barriers, 1024 bytes cumulative stack size
ptxas info    : Compile time = 10.598 ms
)";

// -maxrregcount=24 forces spills; a non-inlined device function has a
// properties block of its own that must not be taken for the kernel's (its
// figures, zero in the capture, are edited to tell them apart).
constexpr char kSpills[] =
    R"(ptxas info    : Overriding maximum register limit 256 for 'heavy' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'calls' for 'sm_80'
ptxas info    : Function properties for calls
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 2.587 ms
ptxas info    : Function properties for _Z6helperf
    16 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function 'heavy' for 'sm_80'
ptxas info    : Function properties for heavy
    12464 bytes stack frame, 12460 bytes spill stores, 27192 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 12464 bytes cumulative stack size, 368 bytes cmem[0]
ptxas info    : Compile time = 2222.169 ms
)";

// The same kernels through NVRTC (--maxrregcount=24): its program log
// prefixes the stack-frame line with "ptxas         .".
constexpr char kNvrtcSpills[] =
    R"(ptxas info    : Overriding maximum register limit 256 for 'heavy' with  24 of maxrregcount option
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'calls' for 'sm_80'
ptxas info    : Function properties for calls
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
ptxas info    : Compile time = 1.754 ms
ptxas info    : Function properties for _Z6helperf
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'heavy' for 'sm_80'
ptxas info    : Function properties for heavy
ptxas         .     12464 bytes stack frame, 12460 bytes spill stores, 27192 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 12464 bytes cumulative stack size, 368 bytes cmem[0]
ptxas info    : Compile time = 2495.362 ms
)";

// Older ptxas (CUDA 10/11) style, with lmem and no barrier count.
constexpr char kOldStyle[] = R"(ptxas info    : Compiling entry function '_Z4testPf' for 'sm_70'
ptxas info    : Function properties for _Z4testPf
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, 8 bytes lmem, 2048 bytes smem, 352 bytes cmem[0], 4 bytes cmem[2]
)";

ResourceUsage Usage(std::string kernel, std::string arch, int registers, int barriers, int64_t smem,
                    int64_t stack, int64_t cumulative, int64_t spill_st, int64_t spill_ld,
                    int64_t cmem) {
  ResourceUsage u;
  u.kernel = std::move(kernel);
  u.arch = std::move(arch);
  u.registers = registers;
  u.barriers = barriers;
  u.shared_bytes = smem;
  u.stack_frame_bytes = stack;
  u.cumulative_stack_bytes = cumulative;
  u.spill_store_bytes = spill_st;
  u.spill_load_bytes = spill_ld;
  u.constant_bytes = cmem;
  return u;
}

TEST(ParsePtxasVerbose, CapturedOutputs) {
  struct Case {
    const char* name;
    const char* log;
    std::vector<ResourceUsage> want;
  };
  const std::vector<Case> cases = {
      {"sm_80",
       kSm80,
       {Usage("smem", "sm_80", 12, 1, 4096, 0, 0, 0, 0, 368),
        Usage("vadd", "sm_80", 12, 0, 0, 0, 0, 0, 0, 380)}},
      {"sm_90a", kSm90a, {Usage("st", "sm_90a", 21, 0, 0, 1024, 1024, 0, 0, 0)}},
      {"spills",
       kSpills,
       {Usage("calls", "sm_80", 8, 0, 0, 0, 0, 0, 0, 360),
        Usage("heavy", "sm_80", 24, 0, 0, 12464, 12464, 12460, 27192, 368)}},
      {"nvrtc spills",
       kNvrtcSpills,
       {Usage("calls", "sm_80", 8, 0, 0, 0, 0, 0, 0, 360),
        Usage("heavy", "sm_80", 24, 0, 0, 12464, 12464, 12460, 27192, 368)}},
      {"old style", kOldStyle, {Usage("_Z4testPf", "sm_70", 10, 0, 2048, 8, 0, 0, 0, 352)}},
      {"empty", "", {}},
      {"no ptxas lines", "kernel.cu(3): warning: unused variable\n", {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<ResourceUsage> got = ParsePtxasVerbose(c.log);
    ASSERT_EQ(got.size(), c.want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(c.want[i].kernel);
      EXPECT_EQ(got[i].kernel, c.want[i].kernel);
      EXPECT_EQ(got[i].arch, c.want[i].arch);
      EXPECT_EQ(got[i].registers, c.want[i].registers);
      EXPECT_EQ(got[i].barriers, c.want[i].barriers);
      EXPECT_EQ(got[i].shared_bytes, c.want[i].shared_bytes);
      EXPECT_EQ(got[i].stack_frame_bytes, c.want[i].stack_frame_bytes);
      EXPECT_EQ(got[i].cumulative_stack_bytes, c.want[i].cumulative_stack_bytes);
      EXPECT_EQ(got[i].spill_store_bytes, c.want[i].spill_store_bytes);
      EXPECT_EQ(got[i].spill_load_bytes, c.want[i].spill_load_bytes);
      EXPECT_EQ(got[i].constant_bytes, c.want[i].constant_bytes);
      EXPECT_EQ(got[i], c.want[i]);
    }
  }
}

TEST(ParsePtxasVerbose, MalformedLinesAreSkipped) {
  constexpr char kGarbage[] = R"(ptxas info    : Compiling entry function 'k' for 'sm_80'
ptxas info    : Used many registers, used -- barriers, x bytes smem
ptxas info    : Used 7 registers
    bytes stack frame
ptxas info    : Compiling entry function 'unterminated
ptxas info
)";
  std::vector<ResourceUsage> got = ParsePtxasVerbose(kGarbage);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kernel, "k");
  EXPECT_EQ(got[0].registers, 7);
  EXPECT_EQ(got[0].shared_bytes, 0);
}

TEST(FindKernel, ByName) {
  std::vector<ResourceUsage> usage = ParsePtxasVerbose(kSm80);
  ASSERT_NE(FindKernel(usage, "vadd"), nullptr);
  EXPECT_EQ(FindKernel(usage, "vadd")->constant_bytes, 380);
  EXPECT_EQ(FindKernel(usage, "nope"), nullptr);
}

} // namespace
} // namespace kiln::toolchain
