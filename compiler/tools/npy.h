// NumPy .npy files: the array format kiln-run reads inputs from and saves
// results to, so that data moves between Kiln and NumPy without conversion.
//
// Reads format versions 1.0, 2.0 and 3.0; writes 1.0 (2.0 only if the header
// would not fit 1.0's 64 KiB). Data is little-endian and in C order; the
// element types are
//   <f2 <f4 <f8  |i1 <i2 <i4 <i8  |u1 <u2 <u4 <u8  |b1
// mapped to the IR's float16..float64, int8..int64, uint8..uint64 and bool.
// NumPy has no bfloat16 or float8 types, so Kiln stores them as their raw
// bits: bfloat16 as '<u2' and float8_e4m3 / float8_e5m2 as '|u1'. Such a file
// reads back as uint16 / uint8; DTypeCompatible() says it may feed a
// bfloat16 / float8 parameter. In NumPy, bfloat16 bits become float32 with
// `(a.astype(np.uint32) << 16).view(np.float32)`.
//
// Thread-safety: pure functions (file functions touch only their path).
//
// Errors: InvalidArgument for a malformed file (bad magic, unknown version, a
// header that is not the dict NumPy writes, fortran_order True, an
// unsupported or big-endian dtype, truncated data or bytes after the data)
// and for a shape or dtype that does not match what the caller expects;
// NotFound / Internal when a file cannot be opened, read or written. Messages
// name the file (or `what`) they are about.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"

namespace kiln::tools {

struct NpyArray {
  ir::DType dtype = ir::DType::kFloat32;
  std::vector<int64_t> shape; // empty: a 0-d array (one element)
  std::string data;           // num_elements() * element size bytes, C order

  int64_t num_elements() const;
};

// The .npy descr Kiln writes for `dtype` ("<f4", "|b1"; bfloat16 "<u2",
// float8 "|u1").
std::string NpyDescr(ir::DType dtype);

// Bytes per element of `dtype` in memory and in a .npy file.
int64_t DTypeBytes(ir::DType dtype);

// The dtype a descr reads as ("<u2" is uint16, never bfloat16).
absl::StatusOr<ir::DType> DTypeFromDescr(std::string_view descr);

// True when data of dtype `file` may stand for a parameter of dtype `param`:
// equal dtypes, or the raw-bits encodings of bfloat16 (uint16) and float8
// (uint8).
bool DTypeCompatible(ir::DType file, ir::DType param);

// Parses the bytes of a .npy file; `what` (a file name) prefixes errors.
absl::StatusOr<NpyArray> ParseNpy(std::string_view bytes, std::string_view what = "<npy>");

// The bytes of a .npy file holding `array`. InvalidArgument when data's size
// does not match the shape.
absl::StatusOr<std::string> SerializeNpy(const NpyArray& array);

absl::StatusOr<NpyArray> ReadNpyFile(const std::string& path);
// Atomically (util::WriteFileAtomically): missing folders are created, and
// errors name the path and the reason.
absl::Status WriteNpyFile(const std::string& path, const NpyArray& array);

// OK if `array` can stand for a parameter named `name` of `dtype` and
// `shape`; otherwise InvalidArgument such as
//   "input 'A': shape (3, 4) does not match the parameter's shape (4, 3)".
absl::Status CheckMatches(const NpyArray& array, std::string_view name, ir::DType dtype,
                          const std::vector<int64_t>& shape);

// "(3, 4)", "(5,)", "()": a shape as NumPy prints it.
std::string FormatShape(const std::vector<int64_t>& shape);

} // namespace kiln::tools
