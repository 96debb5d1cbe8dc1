// Generated kernel inputs (compiler/tools/kernel_inputs.h): FillRandom's
// data for an element depends only on the seed, the parameter position and
// the element's index — not on the array's size, so the parallel chunks of a
// large fill hold exactly the bytes of a one-thread fill — and values stay in
// [-1, 1) (floats) or [-8, 8) (integers).
#include <cstdint>
#include <cstring>
#include <vector>

#include "compiler/ir/dtype.h"
#include "compiler/tools/kernel_inputs.h"
#include "compiler/tools/npy.h"
#include "gtest/gtest.h"

namespace kiln::tools {
namespace {

NpyArray Filled(ir::DType dtype, int64_t n, uint64_t seed, size_t index) {
  NpyArray a;
  a.dtype = dtype;
  a.shape = {n};
  a.data.assign(static_cast<size_t>(n * DTypeBytes(dtype)), '\0');
  FillRandom(a, seed, index);
  return a;
}

TEST(KernelInputs, AnElementsValueDoesNotDependOnTheArraySize) {
  // 5 Mi elements: several chunks wherever more than one core is present.
  const int64_t n = int64_t{5} << 20;
  for (ir::DType dtype :
       {ir::DType::kFloat16, ir::DType::kFloat32, ir::DType::kBool, ir::DType::kInt8}) {
    const NpyArray big = Filled(dtype, n, 11, 2);
    const auto width = static_cast<size_t>(DTypeBytes(dtype));
    // Prefixes ending at and around every possible chunk boundary.
    for (int64_t chunks : {2, 3, 5, 7, 16}) {
      const int64_t edge = n / chunks;
      for (int64_t len : {edge, edge + 1}) {
        const NpyArray small = Filled(dtype, len, 11, 2);
        ASSERT_EQ(std::memcmp(small.data.data(), big.data.data(), small.data.size()), 0)
            << ir::DTypeName(dtype) << " prefix of " << len;
      }
      const int64_t i = edge; // the first element of a chunk, against a one-thread fill
      const NpyArray one = Filled(dtype, i + 1, 11, 2);
      ASSERT_EQ(std::memcmp(one.data.data() + i * width, big.data.data() + i * width, width), 0);
    }
  }
}

TEST(KernelInputs, SeedAndPositionChangeTheData) {
  const NpyArray a = Filled(ir::DType::kFloat32, 64, 1, 0);
  EXPECT_NE(a.data, Filled(ir::DType::kFloat32, 64, 2, 0).data);
  EXPECT_NE(a.data, Filled(ir::DType::kFloat32, 64, 1, 1).data);
  EXPECT_EQ(a.data, Filled(ir::DType::kFloat32, 64, 1, 0).data);
  for (int64_t i = 0; i < 64; ++i) {
    float v = 0;
    std::memcpy(&v, a.data.data() + i * 4, 4);
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
}

} // namespace
} // namespace kiln::tools
