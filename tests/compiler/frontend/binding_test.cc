// Bindings (compiler/frontend/frontend.h): the --bind text of scalars and of
// lists/tuples of ints, the bound on a list's length, and a list binding
// reaching the kernel function as a Python list (TileLang's grouped GEMM
// takes its group sizes so).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::frontend {
namespace {

using ::testing::HasSubstr;
using Kind = BindingValue::Kind;

TEST(ParseBindingText, ScalarsAsBefore) {
  EXPECT_EQ(ParseBindingText("128").kind, Kind::kInt);
  EXPECT_EQ(ParseBindingText("1e-5").kind, Kind::kFloat);
  EXPECT_EQ(ParseBindingText("True").kind, Kind::kBool);
  EXPECT_EQ(ParseBindingText("float16").kind, Kind::kString);
}

TEST(ParseBindingText, ListsAndTuplesOfInts) {
  struct Case {
    std::string text;
    std::vector<int64_t> items;
    bool tuple;
  };
  for (const Case& c : std::vector<Case>{{"[64, 128]", {64, 128}, false},
                                         {"[ 1,2 ,-3 ]", {1, 2, -3}, false},
                                         {"[]", {}, false},
                                         {"[7,]", {7}, false},
                                         {"(3,)", {3}, true},
                                         {"(1, 2)", {1, 2}, true},
                                         {"()", {}, true}}) {
    SCOPED_TRACE(c.text);
    BindingValue v = ParseBindingText(c.text);
    ASSERT_EQ(v.kind, Kind::kIntList);
    EXPECT_EQ(v.ivals, c.items);
    EXPECT_EQ(v.tuple, c.tuple);
  }
}

TEST(ParseBindingText, OtherBracketsStayStrings) {
  // "(3)" is Python's 3 in parentheses, not a tuple; floats, nesting and
  // unbalanced brackets are not int lists.
  for (std::string text : {"(3)", "[1.5, 2]", "[[1], 2]", "[1, 2", "[1,,2]", "[a]", "[,]"}) {
    SCOPED_TRACE(text);
    BindingValue v = ParseBindingText(text);
    EXPECT_EQ(v.kind, Kind::kString);
    EXPECT_EQ(v.sval, text);
  }
}

TEST(BindingValueText, WritesPython) {
  EXPECT_EQ(BindingValueText(ParseBindingText("[64,128]")), "[64, 128]");
  EXPECT_EQ(BindingValueText(ParseBindingText("(3,)")), "(3,)");
  EXPECT_EQ(BindingValueText(ParseBindingText("(1,2)")), "(1, 2)");
  EXPECT_EQ(BindingValueText(ParseBindingText("False")), "False");
}

TEST(CheckBinding, BoundsTheListLength) {
  BindingValue v;
  v.kind = Kind::kIntList;
  v.ivals.assign(kMaxBindingListItems, 1);
  EXPECT_TRUE(CheckBinding("sizes", v).ok());
  v.ivals.push_back(1);
  absl::Status s = CheckBinding("sizes", v);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("binding 'sizes': a list of ", kMaxBindingListItems + 1,
                                     " items; at most ", kMaxBindingListItems)));
}

constexpr char kGrouped[] = R"(import tilelang
import tilelang.language as T

@tilelang.jit
def grouped(A, sizes, block):
    total = sum(sizes)
    A: T.Tensor((total, len(sizes)), T.float32)
    with T.Kernel(sum((s + block - 1) // block for s in sizes), threads=32) as bx:
        A[bx, 0] = sizes[-1]
)";

absl::StatusOr<ir::Program> CompileGrouped(const std::string& sizes) {
  FrontendOptions o;
  o.file_name = "grouped.py";
  o.bindings.emplace_back("sizes", ParseBindingText(sizes));
  o.bindings.emplace_back("block", ParseBindingText("16"));
  return CompileSource(kGrouped, o);
}

TEST(ListBinding, ReachesTheKernelFunctionAsAList) {
  absl::StatusOr<ir::Program> p = CompileGrouped("[37, 64, 5]");
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string text = ir::PrintProgram(*p);
  EXPECT_THAT(text, HasSubstr("param A: global float32[106, 3]"));
  EXPECT_THAT(text, HasSubstr("grid(8)")); // 3 + 4 + 1 tiles of 16 rows
  // A tuple works the same way.
  absl::StatusOr<ir::Program> t = CompileGrouped("(37, 64, 5)");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(ir::PrintProgram(*t), text);
}

TEST(ListBinding, PastTheBoundIsAnError) {
  std::string items = "[1";
  for (size_t i = 1; i <= kMaxBindingListItems; ++i) items += ",1";
  items += "]";
  absl::StatusOr<ir::Program> p = CompileGrouped(items);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("binding 'sizes': a list of 4097"));
}

} // namespace
} // namespace kiln::frontend
