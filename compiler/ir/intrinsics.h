// The thread-level intrinsics a kCall statement may name, with their
// operand kinds. The table is closed: the text parser, the verifier and the
// emitters accept only these names, so no client string ever reaches
// generated C++ (ARCHITECTURE.md, decision 3).
//
// Every intrinsic is emitted as `kiln::rt::NAME(args...)` and implemented
// with the same name and semantics by both runtimes
// (compiler/runtime/{cuda,cpu}/thread_ops.h); semantics are the PTX ISA's.
// Warp-collective intrinsics must be reached by all 32 lanes of a warp
// together. Thread-safe (immutable data).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kiln::ir {

enum class IntrinsicArg : uint8_t {
  kAddress, // an ExprKind::kAddress operand
  kValue,   // any scalar expression
  kConstInt // an integer literal
};

struct IntrinsicInfo {
  std::string_view name;
  std::vector<IntrinsicArg> args;
  bool warp_collective = false;
};

// The known intrinsics:
//   sync_threads()                                  __syncthreads
//   ldmatrix_x{1,2,4}[_trans](dst, src_row)         ldmatrix.sync.aligned.m8n8 (b16)
//   mma_m16n8k16_{f16,bf16}(d, a, b, c)             mma.sync f32 += 16-bit
//   mma_m16n8k8_tf32(d, a, b, c), mma_m16n8k32_s8(d, a, b, c)
//   cp_async_{4,8,16}(dst, src, src_bytes)          cp.async with zero fill
//   cp_async_commit(), cp_async_wait(N)             commit_group / wait_group N
//   copy_{2,4,8,16}(dst, src)                       one vector load + store
//   wgmma_fence(), wgmma_commit(), wgmma_wait(N)   wgmma.fence / commit_group / wait_group N
//                                                   (wgmma_fence: after fence_proxy_async)
//   wgmma_fence_regs(d, N)  after a wait on gemms left in flight: uses of the N accumulator
//                           registers at d cannot move above it (an empty asm; no code)
//   wgmma_fence_tma()     wgmma.fence alone, for operands only TMA wrote (the warp-specialized
//                         main loop: the full barrier's completion makes them visible)
//   fence_proxy_async()   fence.proxy.async.shared::cta: this thread's generic-proxy writes to
//                         shared memory (cp.async, stores) become visible to the async proxy
//                         (wgmma's operand reads); issued by every writer before the barrier
//   wgmma_m64n{8..256}k16_{f16,bf16}(d, a, b, tA, tB, lboA, sboA, swzA, lboB, sboB, swzB)
//                                                   wgmma.mma_async, shared-memory descriptors
//                                                   (sm_90a; warpgroup-collective)
//   wgmma_m64n{8..256}k16_rs_{f16,bf16}(d, a, b, tB, lboB, sboB, swzB)
//                                                   the register form: a is the thread's 8
//                                                   A elements of the k-step (the m16n8k16 A
//                                                   fragment of its warp's 16 rows)
//   wgmma_m64n{8..256}k32_{e4m3,e5m2}(d, a, b, tA, tB, lboA, sboA, swzA, lboB, sboB, swzB)
//                                                   fp8 operands (one format for both),
//                                                   K = 32; K-major only: tA = tB = 0
//                                                   (kiln/cuda/wgmma_fp8.h)
//   mbarrier_init(bar, count), fence_barrier_init(), mbarrier_arrive(bar),
//   mbarrier_arrive_expect_tx(bar, bytes), mbarrier_wait(bar, parity),
//   mbarrier_expect_tx(bar, bytes) (expects bytes without arriving)
//                                                   the shared-memory transaction barrier
//   tma_load_{1..5}d(dst, bar, map, c0, ...)        cp.async.bulk.tensor: a box of tensor
//                                                   map `map` (an index into the program's
//                                                   kiln.tma.<map> attrs) at element
//                                                   coordinates c0 (innermost) ..., bytes
//                                                   completed on `bar`
//   tma_load_mc_{1..5}d(dst, bar, map, c0, ...)     the same box multicast to both blocks of
//                                                   a cluster pair (the same dst and bar
//                                                   offsets in each; cluster=2)
//   mbarrier_arrive_peer(bar)                       arrives on the barrier at bar's offset
//                                                   in the pair's other block
//   cluster_sync()                                  barrier.cluster: every thread of the
//                                                   cluster (release / acquire)
//   tma_store_{1..5}d(src, map, c0, ...)            cp.async.bulk.tensor to global: a box of
//                                                   shared memory (the map's swizzle) at
//                                                   coordinates c0..., clipped to the tensor
//   tma_store_commit(), tma_store_wait(N),          bulk groups: commit; wait until N are
//   tma_store_wait_read(N)                          left (written / their sources read)
//   prefetch_tma_desc(map)                          prefetch.tensormap
//   named_barrier_sync(id, threads)                 bar.sync id, threads
//   setmaxnreg_{inc,dec}(N)                         warpgroup register reallocation (sm_90a)
//   shfl_xor(dst, value, lane_mask)                 *dst = shfl.sync.bfly(value)
//   atomic_{add,max,min}(dst, value)                global/shared atomics
//   threadfence()                                   fence.sc.gpu (__threadfence): this
//                                                   thread's writes before it are seen
//                                                   device-wide before those after it
//   splitk_ticket(flag, counter, parts)             split-K's in-kernel fixup: one thread of
//                                                   the block adds 1 to the global int32
//                                                   *counter and writes 1 to the shared int32
//                                                   *flag when it was the parts-th arrival
//                                                   (and sets *counter back to 0 for the next
//                                                   launch), else 0; a fence after
//                                                   (split_k.h). At tile level the call stands
//                                                   for the whole handshake (every thread's
//                                                   fence, a barrier, thread 0's ticket, a
//                                                   barrier): the lowering expands it
const std::vector<IntrinsicInfo>& AllIntrinsics();

// nullptr when `name` is not an intrinsic.
const IntrinsicInfo* FindIntrinsic(std::string_view name);

} // namespace kiln::ir
