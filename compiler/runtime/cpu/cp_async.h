// Kiln CPU runtime: cp.async.{ca,cg}.shared.global with zero-fill, and its
// commit/wait operations.
//
// The copy happens immediately; commit_group and wait_group do nothing. This
// is semantically valid for every program that obeys the PTX rule the GPU
// needs anyway: shared memory written by cp.async is read only after a
// cp.async.wait_group that covers its group (and a barrier, for other
// threads). On the GPU the data may land any time before that wait; landing
// at issue time is one of the allowed executions, and no valid program can
// tell the difference. (A program that reads early is racy on the GPU; the
// CPU target does not detect that.)
//
// `src_bytes` is the PTX src-size: only that many bytes are read from `src`
// and the rest of the kBytes destination is zero-filled, which is how
// lowering handles ragged tile edges. With src_bytes == 0 nothing is read, so
// `src` may be any pointer. Values outside [0, kBytes] are clamped.
#ifndef KILN_CPU_CP_ASYNC_H_
#define KILN_CPU_CP_ASYNC_H_

#include <cstring>

namespace kiln {
namespace rt {

// cp.async.ca: kBytes is 4, 8 or 16.
template <int kBytes>
inline void cp_async_ca(void* dst, const void* src, int src_bytes = kBytes) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "cp.async.ca copies 4, 8 or 16 bytes");
  const int n = src_bytes < 0 ? 0 : (src_bytes > kBytes ? kBytes : src_bytes);
  if (n > 0) std::memcpy(dst, src, static_cast<std::size_t>(n));
  if (n < kBytes)
    std::memset(static_cast<unsigned char*>(dst) + n, 0, static_cast<std::size_t>(kBytes - n));
}

// cp.async.cg (bypasses L1 on the GPU): 16 bytes only, as in the PTX ISA.
template <int kBytes = 16>
inline void cp_async_cg(void* dst, const void* src, int src_bytes = kBytes) {
  static_assert(kBytes == 16, "cp.async.cg copies 16 bytes");
  cp_async_ca<16>(dst, src, src_bytes);
}

inline void cp_async_commit_group() {}

template <int kPending>
inline void cp_async_wait_group() {
  static_assert(kPending >= 0, "wait_group takes a non-negative count");
}

inline void cp_async_wait_all() {}

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_CP_ASYNC_H_
