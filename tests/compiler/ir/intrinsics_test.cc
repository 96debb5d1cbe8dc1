// The intrinsic table (compiler/ir/intrinsics.h): the generated wgmma names
// of every shape and operand format, with their operand kinds, and nothing
// beside them.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/intrinsics.h"
#include "gtest/gtest.h"

namespace kiln::ir {
namespace {

using A = IntrinsicArg;

std::vector<A> Args(int addresses, int constants) {
  std::vector<A> v(static_cast<size_t>(addresses), A::kAddress);
  v.insert(v.end(), static_cast<size_t>(constants), A::kConstInt);
  return v;
}

TEST(Intrinsics, EveryWgmmaShapeAndFormatIsInTheTable) {
  struct Form {
    const char* suffix; // after wgmma_m64n<N>
    std::vector<A> args;
  };
  const std::vector<Form> forms = {
      {"k16_f16", Args(3, 8)},     {"k16_bf16", Args(3, 8)}, {"k16_rs_f16", Args(3, 4)},
      {"k16_rs_bf16", Args(3, 4)}, {"k32_e4m3", Args(3, 8)}, {"k32_e5m2", Args(3, 8)},
  };
  for (const Form& f : forms) {
    for (int n = 8; n <= 256; n += 8) {
      const std::string name = absl::StrCat("wgmma_m64n", n, f.suffix);
      SCOPED_TRACE(name);
      const IntrinsicInfo* info = FindIntrinsic(name);
      ASSERT_NE(info, nullptr);
      EXPECT_EQ(info->name, name);
      EXPECT_EQ(info->args, f.args);
      EXPECT_TRUE(info->warp_collective);
    }
  }
}

TEST(Intrinsics, ShapesAndFormatsThePtxIsaLacksAreNotIntrinsics) {
  for (const char* name : {"wgmma_m64n264k32_e4m3", "wgmma_m64n12k32_e5m2", "wgmma_m64n0k32_e4m3",
                           "wgmma_m64n64k16_e4m3", "wgmma_m64n64k32_f16", "wgmma_m64n64k32_rs_e4m3",
                           "wgmma_m64n64k32_e4m3_e5m2"}) {
    EXPECT_EQ(FindIntrinsic(name), nullptr) << name;
  }
}

// Each entry's name is distinct and finds that entry: the generated names'
// storage is intact (the table holds views of it).
TEST(Intrinsics, EveryNameFindsItsOwnEntry) {
  std::set<std::string> seen;
  for (const IntrinsicInfo& info : AllIntrinsics()) {
    EXPECT_TRUE(seen.insert(std::string(info.name)).second) << info.name;
    EXPECT_EQ(FindIntrinsic(info.name), &info) << info.name;
  }
  // 32 shapes x (f16, bf16 x shared, register A + e4m3, e5m2).
  int wgmma_shapes = 0;
  for (const std::string& name : seen) wgmma_shapes += name.rfind("wgmma_m64n", 0) == 0;
  EXPECT_EQ(wgmma_shapes, 32 * 6);
}

} // namespace
} // namespace kiln::ir
