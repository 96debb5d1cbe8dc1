// Kiln CUDA runtime: Hopper's asynchronous data movement (sm_90; the
// register reallocation needs sm_90a). The CPU twin is kiln/cpu/tma.h.
//
//  - TmaDesc: a CUtensorMap (128 bytes, 64-byte aligned). Kernels take one
//    by value per tensor they load with TMA (`const __grid_constant__`,
//    after the symbols); the launcher encodes it (codegen/kernel_spec.h).
//  - mbarrier_init(bar, count), mbarrier_arrive(bar),
//    mbarrier_arrive_expect_tx(bar, bytes), mbarrier_wait(bar, parity):
//    the shared-memory transaction barrier (8 bytes). A phase completes when
//    `count` arrivals and every expected transaction byte have arrived;
//    mbarrier_wait(bar, p) returns once the phase of parity p has completed
//    (the phase before the first, parity 1, counts as completed).
//  - fence_barrier_init(): makes the initialized barriers visible to the
//    async proxy (TMA) and to the other threads (with the barrier after it).
//  - tma_load_{1..5}d(dst, bar, map, c0, ...): one box of `map` at element
//    coordinates (c0 innermost) into shared memory at dst (128-byte
//    aligned; 1024 for the 128-byte swizzle, whose pattern follows address
//    bits), completing its bytes on `bar`. Out-of-bounds elements are zero.
//  - prefetch_tma_desc(map): prefetches the descriptor.
//  - cluster pairs (cluster=2): cluster_rank(), cluster_sync(),
//    mbarrier_arrive_peer(bar) and tma_load_mc_{1..5}d, below.
//  - named_barrier_sync(id, threads): bar.sync on barrier `id` (1..15) for
//    `threads` threads (a multiple of 32): the consumers of a
//    warp-specialized kernel synchronize without the producer warps.
//  - named_barrier_arrive(id, threads): bar.arrive: counts the caller
//    toward that barrier's `threads` without waiting (one warpgroup lets
//    another past its bar.sync).
//  - setmaxnreg_inc<N>(), setmaxnreg_dec<N>(): warpgroup register
//    reallocation (sm_90a; every thread of the warpgroup calls it).
#ifndef KILN_CUDA_TMA_H_
#define KILN_CUDA_TMA_H_

#include "kiln/cuda/types.h"

namespace kiln {
namespace rt {

struct alignas(64) TmaDesc {
  unsigned long long opaque[16];
};

KILN_DEVICE void mbarrier_init(void* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count)
               : "memory");
}

KILN_DEVICE void fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

KILN_DEVICE void mbarrier_arrive(void* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

KILN_DEVICE void mbarrier_arrive_expect_tx(void* bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

// Expects `bytes` more transaction bytes in the current phase, without an
// arrival (TileLang's T.tma_copy issues this before its loads).
KILN_DEVICE void mbarrier_expect_tx(void* bar, int bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

KILN_DEVICE void mbarrier_wait(void* bar, int parity) {
  const uint32_t addr = smem_addr(bar);
  uint32_t done = 0;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
                 "selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(addr), "r"(parity)
                 : "memory");
  } while (!done);
}

KILN_DEVICE void prefetch_tma_desc(const TmaDesc& map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(&map) : "memory");
}

KILN_DEVICE void tma_load_1d(void* dst, void* bar, const TmaDesc& map, int c0) {
  asm volatile("cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes "
               "[%0], [%1, {%3}], [%2];" ::"r"(smem_addr(dst)),
               "l"(&map), "r"(smem_addr(bar)), "r"(c0)
               : "memory");
}
KILN_DEVICE void tma_load_2d(void* dst, void* bar, const TmaDesc& map, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
               "[%0], [%1, {%3, %4}], [%2];" ::"r"(smem_addr(dst)),
               "l"(&map), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
               : "memory");
}
KILN_DEVICE void tma_load_3d(void* dst, void* bar, const TmaDesc& map, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes "
               "[%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_addr(dst)),
               "l"(&map), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
KILN_DEVICE void tma_load_4d(void* dst, void* bar, const TmaDesc& map, int c0, int c1, int c2,
                             int c3) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes "
               "[%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(smem_addr(dst)),
               "l"(&map), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
KILN_DEVICE void tma_load_5d(void* dst, void* bar, const TmaDesc& map, int c0, int c1, int c2,
                             int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes "
               "[%0], [%1, {%3, %4, %5, %6, %7}], [%2];" ::"r"(smem_addr(dst)),
               "l"(&map), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

// Thread-block cluster pairs (cluster=2, __cluster_dims__(2, 1, 1)): the
// block's rank in its pair is blockIdx.x % 2.
KILN_DEVICE uint32_t cluster_rank() {
  uint32_t r = 0;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// Every thread of the cluster; orders shared-memory writes (the barriers'
// initialization) before the other block's use of them. Not .aligned: the
// warps may arrive diverged (the producer warp's one loading thread).
KILN_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

// Arrives on the barrier at bar's offset in the pair's other block.
KILN_DEVICE void mbarrier_arrive_peer(void* bar) {
  uint32_t remote = 0;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote)
               : "r"(smem_addr(bar)), "r"(cluster_rank() ^ 1u));
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote)
               : "memory");
}

// One box into shared memory at dst in both blocks of the pair, completing
// its bytes on the barrier at bar's offset in each.
#define KILN_TMA_MC(DIMS, COORDS, ...)                                                             \
  asm volatile("cp.async.bulk.tensor." DIMS                                                        \
               ".shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "          \
               "[%0], [%1, {" COORDS "}], [%2], %3;" ::"r"(smem_addr(dst)),                        \
               "l"(&map), "r"(smem_addr(bar)), "h"(static_cast<uint16_t>(3)), __VA_ARGS__          \
               : "memory")
KILN_DEVICE void tma_load_mc_1d(void* dst, void* bar, const TmaDesc& map, int c0) {
  KILN_TMA_MC("1d", "%4", "r"(c0));
}
KILN_DEVICE void tma_load_mc_2d(void* dst, void* bar, const TmaDesc& map, int c0, int c1) {
  KILN_TMA_MC("2d", "%4, %5", "r"(c0), "r"(c1));
}
KILN_DEVICE void tma_load_mc_3d(void* dst, void* bar, const TmaDesc& map, int c0, int c1, int c2) {
  KILN_TMA_MC("3d", "%4, %5, %6", "r"(c0), "r"(c1), "r"(c2));
}
KILN_DEVICE void tma_load_mc_4d(void* dst, void* bar, const TmaDesc& map, int c0, int c1, int c2,
                                int c3) {
  KILN_TMA_MC("4d", "%4, %5, %6, %7", "r"(c0), "r"(c1), "r"(c2), "r"(c3));
}
KILN_DEVICE void tma_load_mc_5d(void* dst, void* bar, const TmaDesc& map, int c0, int c1, int c2,
                                int c3, int c4) {
  KILN_TMA_MC("5d", "%4, %5, %6, %7, %8", "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4));
}
#undef KILN_TMA_MC

// TMA stores (the epilogue=tma path): one box of shared memory at src (the
// map's swizzle applied) to the tensor at element coordinates c0...; the
// part of the box outside the tensor is not written. A bulk group per
// commit; tma_store_wait_read<N>() returns once all but N groups have read
// their shared memory, tma_store_wait<N>() once they have written it.
#define KILN_TMA_ST(DIMS, COORDS, ...)                                                             \
  asm volatile("cp.async.bulk.tensor." DIMS ".global.shared::cta.bulk_group [%0, {" COORDS         \
               "}], [%1];" ::"l"(&map),                                                            \
               "r"(smem_addr(src)), __VA_ARGS__                                                    \
               : "memory")
KILN_DEVICE void tma_store_1d(const void* src, const TmaDesc& map, int c0) {
  KILN_TMA_ST("1d", "%2", "r"(c0));
}
KILN_DEVICE void tma_store_2d(const void* src, const TmaDesc& map, int c0, int c1) {
  KILN_TMA_ST("2d", "%2, %3", "r"(c0), "r"(c1));
}
KILN_DEVICE void tma_store_3d(const void* src, const TmaDesc& map, int c0, int c1, int c2) {
  KILN_TMA_ST("3d", "%2, %3, %4", "r"(c0), "r"(c1), "r"(c2));
}
KILN_DEVICE void tma_store_4d(const void* src, const TmaDesc& map, int c0, int c1, int c2, int c3) {
  KILN_TMA_ST("4d", "%2, %3, %4, %5", "r"(c0), "r"(c1), "r"(c2), "r"(c3));
}
KILN_DEVICE void tma_store_5d(const void* src, const TmaDesc& map, int c0, int c1, int c2, int c3,
                              int c4) {
  KILN_TMA_ST("5d", "%2, %3, %4, %5, %6", "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4));
}
#undef KILN_TMA_ST
KILN_DEVICE void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int N>
KILN_DEVICE void tma_store_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
template <int N>
KILN_DEVICE void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

KILN_DEVICE void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
KILN_DEVICE void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

template <int N>
KILN_DEVICE void setmaxnreg_inc() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes 24..256 in steps of 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
KILN_DEVICE void setmaxnreg_dec() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes 24..256 in steps of 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

} // namespace rt
} // namespace kiln

#endif // KILN_CUDA_TMA_H_
