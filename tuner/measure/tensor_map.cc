#include "tuner/measure/tensor_map.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::measure {
namespace {

// Limits of cuTensorMapEncodeTiled (cuda.h's documentation of it).
constexpr uint64_t kMaxGlobalDim = uint64_t{1} << 32;
constexpr uint64_t kMaxGlobalStride = uint64_t{1} << 40; // exclusive

int DataTypeFor(int64_t element_bytes) {
  switch (element_bytes) {
  case 1:
    return kTensorMapUint8;
  case 2:
    return kTensorMapUint16;
  case 4:
    return kTensorMapUint32;
  case 8:
    return kTensorMapUint64;
  default:
    return -1;
  }
}

} // namespace

absl::StatusOr<TensorMapEncoding>
PlanTensorMap(const std::string& name, uint64_t address, const std::vector<int64_t>& shape,
              int64_t element_bytes, const std::vector<int64_t>& box, int swizzle_bytes) {
  auto fail = [&](const std::string& detail) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor map for '", name, "' (shape [", absl::StrJoin(shape, ", "), "], box [",
                     absl::StrJoin(box, ", "), "], ", element_bytes, "-byte elements): ", detail));
  };
  const size_t rank = shape.size();
  if (rank < 1 || rank > static_cast<size_t>(kMaxTensorMapRank)) {
    return fail(
        absl::StrCat("rank ", rank, " is outside 1..", kMaxTensorMapRank, ", what the TMA takes"));
  }
  if (box.size() != rank) {
    return fail(
        absl::StrCat("the box has ", box.size(), " dimensions for a tensor of rank ", rank));
  }
  TensorMapEncoding e;
  e.data_type = DataTypeFor(element_bytes);
  if (e.data_type < 0) return fail("the element size is not 1, 2, 4 or 8 bytes");
  switch (swizzle_bytes) {
  case 0:
  case 32:
  case 64:
  case 128:
    break;
  default:
    return fail(absl::StrCat("swizzle of ", swizzle_bytes, " bytes is not 0, 32, 64 or 128"));
  }
  if (address % kTensorMapAlign != 0) {
    return fail(absl::StrCat("the pointer 0x", absl::Hex(address), " is not ", kTensorMapAlign,
                             "-byte aligned"));
  }
  e.rank = static_cast<uint32_t>(rank);
  e.global_address = address;
  // Innermost first: dimension i of the encoding is shape[rank - 1 - i].
  uint64_t stride = static_cast<uint64_t>(element_bytes);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t extent = shape[rank - 1 - i];
    const int64_t b = box[rank - 1 - i];
    if (extent < 1 || static_cast<uint64_t>(extent) > kMaxGlobalDim) {
      return fail(
          absl::StrCat("extent ", extent, " of dimension ", rank - 1 - i, " is outside 1..2^32"));
    }
    if (b < 1 || b > kMaxTensorMapBox) {
      return fail(absl::StrCat("box extent ", b, " of dimension ", rank - 1 - i, " is outside 1..",
                               kMaxTensorMapBox));
    }
    if (i > 0) {
      // The byte stride of this dimension: the product of the inner extents.
      if (stride >= kMaxGlobalStride) {
        return fail(absl::StrCat("the stride of dimension ", rank - 1 - i,
                                 " is 2^40 bytes or more, over the TMA's limit"));
      }
      if (stride % kTensorMapAlign != 0) {
        return fail(absl::StrCat("the stride of dimension ", rank - 1 - i, " is ", stride,
                                 " bytes, not a multiple of ", kTensorMapAlign));
      }
      e.global_strides[i - 1] = stride;
    }
    e.global_dim[i] = static_cast<uint64_t>(extent);
    e.box_dim[i] = static_cast<uint32_t>(b);
    e.element_strides[i] = 1;
    // Saturates at the limit (the product of five extents of up to 2^32
    // would overflow); the next dimension reports it.
    const auto ext = static_cast<uint64_t>(extent);
    stride = stride >= kMaxGlobalStride / ext + 1 ? kMaxGlobalStride : stride * ext;
  }
  const int64_t inner_box_bytes = box[rank - 1] * element_bytes;
  if (inner_box_bytes % kTensorMapAlign != 0) {
    return fail(absl::StrCat("the innermost box row is ", inner_box_bytes,
                             " bytes, not a multiple of ", kTensorMapAlign));
  }
  if (swizzle_bytes != 0 && inner_box_bytes > swizzle_bytes) {
    return fail(absl::StrCat("the innermost box row is ", inner_box_bytes,
                             " bytes, wider than the ", swizzle_bytes, "-byte swizzle"));
  }
  e.swizzle = swizzle_bytes == 0    ? kTensorMapSwizzleNone
              : swizzle_bytes == 32 ? 1
              : swizzle_bytes == 64 ? 2
                                    : 3;
  return e;
}

} // namespace kiln::measure
