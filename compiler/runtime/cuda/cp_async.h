// Kiln CUDA runtime: cp.async.{ca,cg}.shared.global with src-size zero-fill,
// cp.async.commit_group and cp.async.wait_group (sm_80+).
//
// `dst` is a generic pointer into shared memory, `src` into global memory.
// Only `src_bytes` (0..kBytes) bytes are read and the rest of the destination
// is zero-filled, which is how lowering handles ragged tile edges; lowering
// still passes an in-bounds `src` when src_bytes is 0. Data is visible to the
// issuing thread after a wait_group that covers its group, and to other
// threads after that plus a barrier. The CPU twin (kiln/cpu/cp_async.h)
// copies at issue time, which is one of the executions the GPU allows.
#ifndef KILN_CUDA_CP_ASYNC_H_
#define KILN_CUDA_CP_ASYNC_H_

#include "kiln/cuda/types.h"

namespace kiln {
namespace rt {

// kBytes is 4, 8 or 16.
template <int kBytes>
KILN_DEVICE void cp_async_ca(void* dst, const void* src, int src_bytes = kBytes) {
  static_assert(kBytes == 4 || kBytes == 8 || kBytes == 16, "cp.async.ca copies 4, 8 or 16 bytes");
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" ::"r"(smem_addr(dst)), "l"(src),
               "n"(kBytes), "r"(src_bytes)
               : "memory");
}

// Bypasses L1; 16 bytes only, as in the PTX ISA.
template <int kBytes = 16>
KILN_DEVICE void cp_async_cg(void* dst, const void* src, int src_bytes = kBytes) {
  static_assert(kBytes == 16, "cp.async.cg copies 16 bytes");
  asm volatile("cp.async.cg.shared.global [%0], [%1], %2, %3;" ::"r"(smem_addr(dst)), "l"(src),
               "n"(kBytes), "r"(src_bytes)
               : "memory");
}

KILN_DEVICE void cp_async_commit_group() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// Waits until at most kPending of this thread's committed groups are pending.
template <int kPending>
KILN_DEVICE void cp_async_wait_group() {
  static_assert(kPending >= 0, "wait_group takes a non-negative count");
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

KILN_DEVICE void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

} // namespace rt
} // namespace kiln

#endif // KILN_CUDA_CP_ASYNC_H_
