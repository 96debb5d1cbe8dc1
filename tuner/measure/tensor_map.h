// Hopper TMA tensor maps for a kernel launch: from one
// codegen::TensorMapSpec, the tensor's device address, its actual shape and
// its element size to the arguments of the driver's cuTensorMapEncodeTiled
// (PlanTensorMap), and the 128-byte CUtensorMap a kernel takes by value
// (CuTensorMap). The plan is pure and needs no GPU; the encoding itself is
// EncodeTensorMap in cuda_driver.h. kernel_spec.h has the contract (what each
// field of the encoding is); every launcher in tuner/measure builds its maps
// through these two functions.
//
// Thread-safety: pure functions and plain data.
//
// Errors: PlanTensorMap returns InvalidArgument, "tensor map for 'NAME': ...",
// when the tensor or the spec is outside what the TMA takes: a rank outside
// 1..5, a box of another rank or with an extent outside 1..256, an element
// size that is not 1, 2, 4 or 8 bytes, a swizzle other than 0/32/64/128, a
// pointer that is not 16-byte aligned, an extent outside 1..2^32, a row
// stride that is not a multiple of 16 bytes (or reaches 2^40), an innermost
// box row that is not a multiple of 16 bytes or is wider than the swizzle.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::measure {

inline constexpr int kMaxTensorMapRank = 5;
inline constexpr int64_t kMaxTensorMapBox = 256;
// Pointers and row strides the TMA reads must be multiples of this.
inline constexpr int64_t kTensorMapAlign = 16;

// cuda.h's enum values (declared here: Kiln builds without the CUDA headers).
inline constexpr int kTensorMapUint8 = 0; // CU_TENSOR_MAP_DATA_TYPE_UINT8
inline constexpr int kTensorMapUint16 = 1;
inline constexpr int kTensorMapUint32 = 2;
inline constexpr int kTensorMapUint64 = 4;
inline constexpr int kTensorMapInterleaveNone = 0;
inline constexpr int kTensorMapSwizzleNone = 0; // then 32B = 1, 64B = 2, 128B = 3
inline constexpr int kTensorMapL2Promotion128B = 2;
inline constexpr int kTensorMapOobFillNone = 0; // out-of-bounds elements read as zero

// The arguments of one cuTensorMapEncodeTiled call, innermost dimension
// first as the driver takes them; only the first `rank` entries (rank - 1
// for the strides) are meaningful, the rest are zero.
struct TensorMapEncoding {
  int data_type = kTensorMapUint8;
  uint32_t rank = 0;
  uint64_t global_address = 0;
  std::array<uint64_t, kMaxTensorMapRank> global_dim{};
  std::array<uint64_t, kMaxTensorMapRank - 1> global_strides{}; // bytes, of dims 1..rank-1
  std::array<uint32_t, kMaxTensorMapRank> box_dim{};
  std::array<uint32_t, kMaxTensorMapRank> element_strides{};
  int interleave = kTensorMapInterleaveNone;
  int swizzle = kTensorMapSwizzleNone;
  int l2_promotion = kTensorMapL2Promotion128B;
  int oob_fill = kTensorMapOobFillNone;
};

// The encoding of the map over tensor `name` at device address `address`,
// row-major and contiguous with `shape` (outermost first, the actual
// extents of this launch) and `element_bytes` per element, loading boxes of
// `box` elements (outermost first, like shape) with `swizzle_bytes` of
// shared-memory swizzle (0, 32, 64 or 128). Errors: see the file comment.
absl::StatusOr<TensorMapEncoding> PlanTensorMap(const std::string& name, uint64_t address,
                                                const std::vector<int64_t>& shape,
                                                int64_t element_bytes,
                                                const std::vector<int64_t>& box, int swizzle_bytes);

// A CUtensorMap: opaque to the host, 64-byte aligned as the driver and the
// kernel parameter require. A launcher keeps it alive (and where it is)
// until the launch call returns; cuLaunchKernel copies it.
struct alignas(64) CuTensorMap {
  std::array<uint64_t, 16> words{};
};
static_assert(sizeof(CuTensorMap) == 128, "CUtensorMap is 128 bytes");

} // namespace kiln::measure
