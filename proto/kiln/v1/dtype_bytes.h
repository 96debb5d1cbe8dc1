// The size in bytes of one element of each wire dtype (program.proto's
// DType), for everything that sizes buffers from a LaunchInfo: kilnd's launch
// plans (server/launch_plan.h) and the C++ client's launch example
// (clients/cpp/examples/gemm_launch.cc). Header-only, so that a thin client
// needs nothing beyond the generated protobuf code.
#pragma once

#include <cstdint>

#include "kiln/v1/program.pb.h"

namespace kiln::v1 {

// 0 for DTYPE_UNSPECIFIED and values this build does not know.
inline int64_t DTypeBytes(DType dtype) {
  switch (dtype) {
  case DTYPE_BOOL:
  case DTYPE_INT8:
  case DTYPE_UINT8:
  case DTYPE_FLOAT8_E4M3:
  case DTYPE_FLOAT8_E5M2:
    return 1;
  case DTYPE_INT16:
  case DTYPE_UINT16:
  case DTYPE_FLOAT16:
  case DTYPE_BFLOAT16:
    return 2;
  case DTYPE_INT32:
  case DTYPE_UINT32:
  case DTYPE_FLOAT32:
    return 4;
  case DTYPE_INT64:
  case DTYPE_UINT64:
  case DTYPE_FLOAT64:
    return 8;
  default:
    return 0;
  }
}

} // namespace kiln::v1
