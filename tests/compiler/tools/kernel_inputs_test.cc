// Generated kernel inputs (compiler/tools/kernel_inputs.h): FillRandom's
// data for an element depends only on the seed, the parameter position and
// the element's index — not on the array's size, so the parallel chunks of a
// large fill hold exactly the bytes of a one-thread fill — and values stay in
// [-1, 1) (floats) or [-8, 8) (integers).
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/dtype.h"
#include "compiler/tools/kernel_inputs.h"
#include "compiler/tools/npy.h"
#include "gtest/gtest.h"
#include "util/sha256.h"

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

TEST(KernelInputs, TheBytesOfEveryDtypeAreFixed) {
  // The data is a contract (kiln-run --seed, the worker's inputs, saved
  // references): SHA-256 of a fill of 1 Mi + 3 elements, seed 5, position 2,
  // per dtype, as recorded before the fill chose its dtype once per range instead of once
  // per element (signed and unsigned integers of a width share their bytes).
  const std::vector<std::pair<ir::DType, std::string>> want = {
      {ir::DType::kBool, "5ae605e0066cfe6a5e42e87d221553a31760fe0262bfd68f9fe0c97d62365b12"},
      {ir::DType::kInt8, "ccec51d97f1dc80f2e9221bebbc1498794115829888d728eb3bf553b888c4b30"},
      {ir::DType::kInt16, "bf1e97731d6454bc2dbbf49de40c67305af9027f61472775f51b5f3a5586bf18"},
      {ir::DType::kInt32, "ffaa363ecf544b0c284bf4589305cbc5fc638467acae59d40e98f5e4fcc0a67d"},
      {ir::DType::kInt64, "bd4c3c72757310399890ed1455e500730d6946efb520f8ce2ebbea18695a480b"},
      {ir::DType::kUInt8, "ccec51d97f1dc80f2e9221bebbc1498794115829888d728eb3bf553b888c4b30"},
      {ir::DType::kUInt16, "bf1e97731d6454bc2dbbf49de40c67305af9027f61472775f51b5f3a5586bf18"},
      {ir::DType::kUInt32, "ffaa363ecf544b0c284bf4589305cbc5fc638467acae59d40e98f5e4fcc0a67d"},
      {ir::DType::kUInt64, "bd4c3c72757310399890ed1455e500730d6946efb520f8ce2ebbea18695a480b"},
      {ir::DType::kFloat16, "83cf1948d83f6f66a688e4b00739fca6a867b6ac6537268cfe80334e2a08bd87"},
      {ir::DType::kBFloat16, "5ccffceb9f98895b1242781d751889913c119c56bd658fc8ad75277a079437f4"},
      {ir::DType::kFloat32, "33ab747ef07890baeb5adbef7541407309fb4ff9671ebee52fe0160c66a6f261"},
      {ir::DType::kFloat64, "ec8bc1fd0edcab5e45be0d69d5d20cccb54992324677cd7273466b2988bb0f34"},
      {ir::DType::kFloat8E4M3, "040b5e0fcb2ce6fc14133ce66b59fd9abdba8264f3b53b79202f7c723963ed28"},
      {ir::DType::kFloat8E5M2, "29d3ad8c8d07d30192c13f70d6cbc4671dedaf35f021a9a4490a0b6b28211d24"},
  };
  for (const auto& [dtype, digest] : want) {
    EXPECT_EQ(util::Sha256Hex(Filled(dtype, (int64_t{1} << 20) + 3, 5, 2).data), digest)
        << ir::DTypeName(dtype);
  }
}

} // namespace
} // namespace kiln::tools
