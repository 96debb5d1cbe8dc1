// verify-resources' integer ranges (issue 27, item 3): tile IR that arrives
// as text or proto skips the frontend's checks, so the pass refuses extents,
// literals, iteration spaces, stage counts and sizes that later passes would
// narrow to int32 or overflow. Before it, `parallel(4294967328)` (an int32
// literal) lowered to a loop over 32 elements, and `parallel(int64(2**31))`
// to a register loop of -2147483648 iterations.
#include <string>

#include "absl/strings/str_replace.h"
#include "compiler/codegen/codegen.h"
#include "compiler/ir/text_parser.h"
#include "compiler/passes/pass_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// PARAM, GRID and BODY are replaced by the case's.
constexpr char kTemplate[] = R"(program @p {
  param A: global float16[PARAM]
  kernel grid(GRID) threads(128) as (bx) {
    BODY
  }
}
)";

struct Case {
  std::string name;
  std::string body;
  std::string want_prefix; // "t.kir:LINE:COL: "
  std::string message;
  std::string param = "8192";
  std::string grid = "4";
};

std::string Text(const Case& c) {
  return absl::StrReplaceAll(kTemplate, {{"PARAM", c.param}, {"GRID", c.grid}, {"BODY", c.body}});
}

const Case kCases[] = {
    {"int32 literal 2**32+32 (wrapped to 32 before)",
     "for i in parallel(4294967328) {\n      A[i] = A[i]\n    }",
     "t.kir:4:5: ", "integer literal 4294967328 does not fit int32"},
    {"int32 literal 2**31 in an expression the simplifier would fold",
     "for i in serial(2147483648 * 1) {\n      A[0] = A[0]\n    }",
     "t.kir:4:5: ", "integer literal 2147483648 does not fit int32"},
    {"int32 constant arithmetic that wraps (65536 * 65536 was 0: an empty loop)",
     "for i in serial(65536 * 65536) {\n      A[0] = A[0]\n    }", "t.kir:4:5: ",
     "constant arithmetic in an extent or shape leaves int32 (exact value 4294967296)"},
    {"a conversion of a constant that wraps",
     "for i in serial(cast<int32>(int64(4294967328))) {\n      A[0] = A[0]\n    }",
     "t.kir:4:5: ", "conversion in an extent or shape leaves int32 (exact value 4294967328)"},
    {"constant arithmetic beyond int64",
     "for i in serial(int64(4611686018427387904) * int64(4)) {\n      A[0] = A[0]\n    }",
     "t.kir:4:5: ", "constant arithmetic in an extent or shape leaves int64 (beyond int64)"},
    {"a shape whose constant arithmetic wraps", "A[0] = A[0]", "t.kir:2:3: ",
     "constant arithmetic in an extent or shape leaves int32 (exact value 8589934592)",
     "131072 * 65536"},
    {"int64 parallel extent 2**31",
     "for i in parallel(int64(2147483648)) {\n      A[i] = A[i]\n    }",
     "t.kir:4:5: ", "loop extent must be in [0, 2147483647], got 2147483648"},
    {"int64 serial extent 2**63-1",
     "for i in serial(int64(9223372036854775807)) {\n      A[0] = A[0]\n    }",
     "t.kir:4:5: ", "loop extent must be in [0, 2147483647], got 9223372036854775807"},
    {"parallel iteration space beyond int32",
     "for i, j in parallel(65536, 65536) {\n      A[i] = A[j]\n    }", "t.kir:4:5: ",
     "the iteration space of a parallel loop (65536 x 65536) must be at most 1073741824"},
    {"parallel extent 2**31-1 (padding runs past int32)",
     "for i in parallel(2147483647) {\n      A[i] = A[i]\n    }", "t.kir:4:5: ",
     "the iteration space of a parallel loop (2147483647) must be at most 1073741824"},
    {"pipelined trip count 2**31-1 (loads ahead past int32)",
     "for k in pipelined(2147483647) stages=3 {\n      A[0] = A[0]\n    }",
     "t.kir:4:5: ", "the trip count of a pipelined loop (2147483647) must be at most 1073741824"},
    {"region extent 2**31",
     "alloc s: shared float16[64]\n"
     "    copy A[0 +: int64(2147483648)] -> A[int64(2147483648) +: int64(2147483648)]",
     "t.kir:5:5: ",
     "extent of the region of 'A' in dimension 0 must be in [1, 2147483647], got 2147483648",
     "int64(4294967296)"},
    {"region elements beyond int32",
     "alloc s: shared float16[64]\n    copy A[0 +: 65536, 0 +: 65536] -> A[0 +: 65536, 0 +: 65536]",
     "t.kir:5:5: ",
     "the number of elements of the region of 'A' (65536 x 65536) must be at most 1073741824",
     "65536, 65536"},
    {"num_stages 1000", "for k in pipelined(4) stages=1000 {\n      A[0] = A[0]\n    }",
     "t.kir:4:5: ", "num_stages must be in [0, 64], got 1000"},
    {"num_stages 2**31-1", "for k in pipelined(4) stages=2147483647 {\n      A[0] = A[0]\n    }",
     "t.kir:4:5: ", "num_stages must be in [0, 64], got 2147483647"},
    {"grid extent 2**31", "A[0] = A[0]", "t.kir:3:3: ",
     "grid extent 0 must be in [1, 2147483647], got 2147483648", "8192", "int64(2147483648)"},
    {"grid literal 2**32+1", "A[0] = A[0]",
     "t.kir:3:3: ", "integer literal 4294967297 does not fit int32", "8192", "4294967297"},
    {"global tensor bytes overflow int64", "A[0, 0] = A[0, 0]", "t.kir:2:3: ",
     "buffer 'A' is larger than 9223372036854775807 bytes", "int64(4611686018427387904), 4"},
    {"shared buffer bytes overflow int64",
     "alloc s: shared float32[int64(1099511627776), int64(1099511627776)]",
     "t.kir:4:5: ", "buffer 's' is larger than 9223372036854775807 bytes"},
};

TEST(VerifyResourcesTest, RefusesIntegersLaterPassesWouldNarrow) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const std::string text = Text(c);
    absl::StatusOr<ir::Program> p = ir::ParseProgramText(text, "t.kir");
    ASSERT_TRUE(p.ok()) << p.status() << "\n" << text;
    absl::Status s = RunPasses(*p, {"verify-resources"});
    ASSERT_FALSE(s.ok()) << "passed, but an error was expected:\n" << text;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.message()), StartsWith(c.want_prefix));
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
}

// The whole lowering pipeline refuses every case with a located error (the
// verifier, which runs first, reports some of them its own way). The int32
// literal 2**32 + 32 passes the verifier, whose constants wrap: it is caught
// because verify-resources runs before simplify, which would fold it to 32.
TEST(VerifyResourcesTest, LoweringPipelineRefusesEveryCase) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<ir::Program> p = ir::ParseProgramText(Text(c), "t.kir");
    ASSERT_TRUE(p.ok()) << p.status();
    codegen::LoweringOptions mma;
    mma.gemm_wgmma = false;
    absl::StatusOr<codegen::EmittedKernel> k = codegen::LowerAndEmit(*p, "cpu", mma);
    ASSERT_FALSE(k.ok()) << "lowered, but an error was expected";
    EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(k.status().message()), StartsWith("t.kir:"));
    if (&c == &kCases[0]) {
      EXPECT_THAT(std::string(k.status().message()), HasSubstr(c.message));
    }
  }
}

TEST(VerifyResourcesTest, AcceptsValuesAtTheLimits) {
  const Case ok[] = {
      {"serial extent 2**31-1", "for i in serial(2147483647) {\n      A[0] = A[0]\n    }", "", ""},
      {"int64 serial extent 2**31-1",
       "for i in serial(int64(2147483647)) {\n      A[0] = A[0]\n    }", "", ""},
      {"parallel space 2**30", "for i in parallel(1073741824) {\n      A[0] = A[0]\n    }", "", ""},
      {"pipelined trip count 2**30",
       "for k in pipelined(1073741824) stages=3 {\n      A[0] = A[0]\n    }", "", ""},
      {"num_stages 64", "for k in pipelined(4) stages=64 {\n      A[0] = A[0]\n    }", "", ""},
      {"global tensor of 2**62 bytes", "A[0] = A[0]", "", "", "int64(2305843009213693952)"},
  };
  for (const Case& c : ok) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<ir::Program> p = ir::ParseProgramText(Text(c), "t.kir");
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE(RunPasses(*p, {"verify-resources"}).ok());
  }
}

} // namespace
} // namespace kiln::passes
