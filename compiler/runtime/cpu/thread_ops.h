// Kiln CPU runtime: the per-thread operations generated code calls, with the
// names and signatures of the CUDA twin (kiln/cuda/thread_ops.h), for a body
// that kiln::rt::launch_grid (kiln/cpu/fiber.h) runs as one fiber per thread.
//
//  - tid_*/bid_*/nbid_*: threadIdx, blockIdx, gridDim of the running fiber.
//  - sync_threads(): the block barrier; dyn_smem(): the block's dynamic
//    shared memory (zeroed at block start, 1024-byte aligned).
//  - The intrinsics of compiler/ir/intrinsics.h, per lane, with the PTX
//    semantics. The warp collectives (ldmatrix*, mma*, shfl_xor) gather the
//    warp's lanes and run the warp-wide emulations of kiln/cpu/ldmatrix.h,
//    mma.h and warp.h once for all of them; partial warps: see fiber.h.
//  - cp_async_* copy at issue time (kiln/cpu/cp_async.h says why that is a
//    valid execution); commit and wait do nothing.
//  - Atomics are real atomic read-modify-writes (relaxed, like CUDA's
//    atomicAdd), safe across OS threads.
// Math and conversions: kiln/cpu/scalar_math.h, kiln/cpu/convert.h.
//
// Outside launch_grid the index functions return 0, sync_threads does
// nothing and the warp collectives abort the process. Thread-safe in the
// sense of fiber.h: each OS thread runs its own block.
#ifndef KILN_CPU_THREAD_OPS_H_
#define KILN_CPU_THREAD_OPS_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "kiln/cpu/convert.h"
#include "kiln/cpu/cp_async.h"
#include "kiln/cpu/fiber.h"
#include "kiln/cpu/helpers.h"
#include "kiln/cpu/ldmatrix.h"
#include "kiln/cpu/mma.h"
#include "kiln/cpu/scalar_math.h"
#include "kiln/cpu/types.h"
#include "kiln/cpu/warp.h"
#include "kiln/cpu/wgmma.h"

namespace kiln {
namespace rt {
namespace detail {

// Makes a parameter non-deduced, so T comes from the pointer operand alone
// and the value converts to it.
template <class T>
struct Identity {
  using type = T;
};

inline const fiber::Fiber* CurrentFiber() {
  fiber::BlockState* b = fiber::CurrentBlock();
  return b == nullptr ? nullptr : &b->self();
}

} // namespace detail

// ---- Thread and block indices.

inline int tid_x() { return detail::CurrentFiber() ? detail::CurrentFiber()->x : 0; }
inline int tid_y() { return detail::CurrentFiber() ? detail::CurrentFiber()->y : 0; }
inline int tid_z() { return detail::CurrentFiber() ? detail::CurrentFiber()->z : 0; }
inline int bid_x() { return fiber::CurrentBlock() ? fiber::CurrentBlock()->block_x : 0; }
inline int bid_y() { return fiber::CurrentBlock() ? fiber::CurrentBlock()->block_y : 0; }
inline int bid_z() { return fiber::CurrentBlock() ? fiber::CurrentBlock()->block_z : 0; }
inline int nbid_x() { return fiber::CurrentBlock() ? fiber::CurrentBlock()->grid_x : 1; }
inline int nbid_y() { return fiber::CurrentBlock() ? fiber::CurrentBlock()->grid_y : 1; }
inline int nbid_z() { return fiber::CurrentBlock() ? fiber::CurrentBlock()->grid_z : 1; }
// %laneid: the linear thread index modulo 32.
inline uint32_t lane_id() {
  return detail::CurrentFiber() ? static_cast<uint32_t>(detail::CurrentFiber()->lane) : 0u;
}

// ---- Barrier and shared memory.

inline void sync_threads() { fiber::BlockBarrier(); }

// A run-time check that failed (IR kAssert): the block fails with `message`
// (the launch reports it); outside launch_grid the process aborts.
[[noreturn]] inline void assert_fail(const char* message) {
  fiber::BlockState* b = fiber::CurrentBlock();
  if (b == nullptr) {
    std::fprintf(stderr, "kiln::rt: kernel check failed: %s\n", message);
    std::abort();
  }
  fiber::FailBlock(b, "thread %d: kernel check failed: %s", b->self().tid, message);
}

// The block's dynamic shared memory; nullptr outside launch_grid.
inline unsigned char* dyn_smem() {
  return fiber::CurrentBlock() ? fiber::CurrentBlock()->smem : nullptr;
}

// ---- ldmatrix: dst is this lane's registers (u32[1|2|4]), src_row the
// 16-byte row this lane supplies (lane 8*j + r: row r of matrix j).

namespace detail {
template <int kNum, bool kTrans>
inline void LdMatrixLane(const char* name, void* dst, const void* src_row) {
  fiber::WarpSlot mine;
  mine.dst = dst;
  mine.src[0] = src_row;
  fiber::WarpCollective(name, mine, [name](fiber::BlockState* b, fiber::WarpExchange& ex) {
    if (ex.lanes < 8 * kNum)
      fiber::FailBlock(b, "warp %d: %s reads the rows of lanes 0-%d, but this partial warp has %d",
                       b->self().warp, name, 8 * kNum - 1, ex.lanes);
    const void* rows[32] = {};
    for (int l = 0; l < ex.lanes; ++l) rows[l] = ex.slot[l].src[0];
    uint32_t regs[32][kNum];
    LdMatrix<kNum, kTrans>(WarpRegs<uint32_t>(&regs[0][0], kNum), rows);
    for (int l = 0; l < ex.lanes; ++l) std::memcpy(ex.slot[l].dst, regs[l], sizeof regs[l]);
  });
}
} // namespace detail

inline void ldmatrix_x1(void* dst, const void* src_row) {
  detail::LdMatrixLane<1, false>("ldmatrix_x1", dst, src_row);
}
inline void ldmatrix_x2(void* dst, const void* src_row) {
  detail::LdMatrixLane<2, false>("ldmatrix_x2", dst, src_row);
}
inline void ldmatrix_x4(void* dst, const void* src_row) {
  detail::LdMatrixLane<4, false>("ldmatrix_x4", dst, src_row);
}
inline void ldmatrix_x1_trans(void* dst, const void* src_row) {
  detail::LdMatrixLane<1, true>("ldmatrix_x1_trans", dst, src_row);
}
inline void ldmatrix_x2_trans(void* dst, const void* src_row) {
  detail::LdMatrixLane<2, true>("ldmatrix_x2_trans", dst, src_row);
}
inline void ldmatrix_x4_trans(void* dst, const void* src_row) {
  detail::LdMatrixLane<4, true>("ldmatrix_x4_trans", dst, src_row);
}

// ---- mma: this lane's fragments; d may alias c.

namespace detail {
template <class Acc, class WarpMma>
inline void MmaLane(const char* name, void* d, const void* a, const void* b, const void* c,
                    WarpMma warp_mma) {
  fiber::WarpSlot mine;
  mine.dst = d;
  mine.src[0] = a;
  mine.src[1] = b;
  mine.src[2] = c;
  fiber::WarpCollective(
      name, mine, [name, warp_mma](fiber::BlockState* blk, fiber::WarpExchange& ex) {
        if (ex.lanes < 32)
          fiber::FailBlock(blk, "warp %d: %s needs 32 lanes, but this partial warp has %d",
                           blk->self().warp, name, ex.lanes);
        uint32_t ra[32][4], rb[32][2];
        Acc rc[32][4], rd[32][4];
        for (int l = 0; l < 32; ++l) {
          std::memcpy(ra[l], ex.slot[l].src[0], sizeof ra[l]);
          std::memcpy(rb[l], ex.slot[l].src[1], sizeof rb[l]);
          std::memcpy(rc[l], ex.slot[l].src[2], sizeof rc[l]);
        }
        warp_mma(WarpRegs<Acc>(&rd[0][0], 4), WarpRegs<const uint32_t>(&ra[0][0], 4),
                 WarpRegs<const uint32_t>(&rb[0][0], 2), WarpRegs<const Acc>(&rc[0][0], 4));
        for (int l = 0; l < 32; ++l) std::memcpy(ex.slot[l].dst, rd[l], sizeof rd[l]);
      });
}
} // namespace detail

// d, c: float[4]; a: u32[4]; b: u32[2] (f16x2 / bf16x2 / tf32 registers).
inline void mma_m16n8k16_f16(void* d, const void* a, const void* b, const void* c) {
  detail::MmaLane<float>("mma_m16n8k16_f16", d, a, b, c,
                         [](WarpRegs<float> wd, WarpRegs<const uint32_t> wa,
                            WarpRegs<const uint32_t> wb,
                            WarpRegs<const float> wc) { mma_m16n8k16_f16(wd, wa, wb, wc); });
}
inline void mma_m16n8k16_bf16(void* d, const void* a, const void* b, const void* c) {
  detail::MmaLane<float>("mma_m16n8k16_bf16", d, a, b, c,
                         [](WarpRegs<float> wd, WarpRegs<const uint32_t> wa,
                            WarpRegs<const uint32_t> wb,
                            WarpRegs<const float> wc) { mma_m16n8k16_bf16(wd, wa, wb, wc); });
}
inline void mma_m16n8k8_tf32(void* d, const void* a, const void* b, const void* c) {
  detail::MmaLane<float>("mma_m16n8k8_tf32", d, a, b, c,
                         [](WarpRegs<float> wd, WarpRegs<const uint32_t> wa,
                            WarpRegs<const uint32_t> wb,
                            WarpRegs<const float> wc) { mma_m16n8k8_tf32(wd, wa, wb, wc); });
}
// d, c: int32[4]; a: u32[4], b: u32[2] with four s8 each.
inline void mma_m16n8k32_s8(void* d, const void* a, const void* b, const void* c) {
  detail::MmaLane<int32_t>("mma_m16n8k32_s8", d, a, b, c,
                           [](WarpRegs<int32_t> wd, WarpRegs<const uint32_t> wa,
                              WarpRegs<const uint32_t> wb,
                              WarpRegs<const int32_t> wc) { mma_m16n8k32_s8(wd, wa, wb, wc); });
}

// ---- Warpgroup MMA (sm_90a's wgmma; kiln/cpu/wgmma.h). The product is
// complete when the call returns, so fence, commit and wait do nothing.
// d: this thread's N/2 float accumulators; a, b: the operands' first
// elements in shared memory, described with the template's offsets and
// swizzle modes (kiln/cuda/wgmma.h). Every lane of a warp must pass the same
// a and b; the block's threads must be a whole number of warpgroups.
// wgmma_m64n<N>k16_rs_{f16,bf16}<kTransB, ...>(d, a, b), the register form:
// a is this thread's 8 A elements of the k-step (kiln/cuda/wgmma_rs.h).
// wgmma_m64n<N>k32_{e4m3,e5m2}<0, 0, ...>(d, a, b): fp8 operands, K = 32,
// both K-major (kiln/cuda/wgmma_fp8.h).

inline void fence_proxy_async() {}
inline void wgmma_fence() {}
inline void wgmma_fence_tma() {}
inline void wgmma_commit() {}
template <int N>
inline void wgmma_wait() {
  static_assert(N >= 0 && N <= 7, "wgmma_wait takes 0..7");
}
template <int N>
inline void wgmma_fence_regs(void*) {}

// The descriptor of a shared-memory operand at `p` (offset in the block's
// window); the GPU twin's smem_desc().
inline uint64_t smem_desc(const void* p, int lbo, int sbo, int swizzle) {
  const unsigned char* base = dyn_smem();
  const std::ptrdiff_t off = base ? static_cast<const unsigned char*>(p) - base : 0;
  return make_smem_desc(static_cast<uint32_t>(off), lbo, sbo, swizzle);
}

namespace detail {
// The warp collective of both forms: whole warpgroups, every lane with the
// same descriptors (`value`, and `src[0]` too where `src0_is_descriptor`),
// the lanes' accumulators gathered, `product(blk, ex, regs)` run on them
// (false: a descriptor has no swizzle mode or reads outside shared memory),
// and the results handed back to the lanes.
template <int N, typename Product>
inline void WgmmaWarp(const char* name, const fiber::WarpSlot& mine, bool src0_is_descriptor,
                      Product product) {
  fiber::WarpCollective(
      name, mine,
      [name, src0_is_descriptor, &product](fiber::BlockState* blk, fiber::WarpExchange& ex) {
        if (ex.lanes < 32 || blk->threads % 128 != 0)
          fiber::FailBlock(blk,
                           "warp %d: %s needs whole warpgroups of 128 threads; the block has %d",
                           blk->self().warp, name, blk->threads);
        for (int l = 1; l < 32; ++l) {
          if (ex.slot[l].value != ex.slot[0].value ||
              (src0_is_descriptor && ex.slot[l].src[0] != ex.slot[0].src[0]))
            fiber::FailBlock(blk, "warp %d: %s: lanes 0 and %d pass different descriptors",
                             blk->self().warp, name, l);
        }
        static thread_local float regs[32][N / 2];
        for (int l = 0; l < 32; ++l) std::memcpy(regs[l], ex.slot[l].dst, sizeof regs[l]);
        if (!product(blk, ex, WarpRegs<float>(&regs[0][0], N / 2)))
          fiber::FailBlock(blk,
                           "warp %d: %s: a descriptor has no swizzle mode or reads outside the %d "
                           "bytes of shared memory",
                           blk->self().warp, name, static_cast<int>(blk->smem_bytes));
        for (int l = 0; l < 32; ++l) std::memcpy(ex.slot[l].dst, regs[l], sizeof regs[l]);
      });
}

// T: the operands' element type (kiln/cpu/wgmma.h).
template <int N, typename T, int kTransA, int kTransB>
inline void WgmmaLane(const char* name, void* d, uint64_t desc_a, uint64_t desc_b) {
  fiber::WarpSlot mine;
  mine.dst = d;
  mine.value = desc_a;
  mine.arg = 0;
  mine.src[0] = reinterpret_cast<const void*>(static_cast<uintptr_t>(desc_b));
  WgmmaWarp<N>(name, mine, /*src0_is_descriptor=*/true,
               [](fiber::BlockState* blk, fiber::WarpExchange& ex, WarpRegs<float> regs) {
                 const uint64_t db =
                     static_cast<uint64_t>(reinterpret_cast<uintptr_t>(ex.slot[0].src[0]));
                 return wgmma_m64_warp<N, T>(regs, blk->self().warp % 4, blk->smem,
                                             static_cast<uint32_t>(blk->smem_bytes),
                                             ex.slot[0].value, db, kTransA != 0, kTransB != 0);
               });
}

// The register form (16-bit T): a is this lane's 8 A elements
// (kiln/cpu/wgmma.h's wgmma_register_a_tile order); only B has a descriptor.
template <int N, typename T, int kTransB>
inline void WgmmaLaneRs(const char* name, void* d, const void* a, uint64_t desc_b) {
  fiber::WarpSlot mine;
  mine.dst = d;
  mine.value = desc_b;
  mine.src[0] = a;
  WgmmaWarp<N>(name, mine, /*src0_is_descriptor=*/false,
               [](fiber::BlockState* blk, fiber::WarpExchange& ex, WarpRegs<float> regs) {
                 static thread_local uint16_t lanes_a[32][8];
                 static thread_local float ta[16][16];
                 for (int l = 0; l < 32; ++l) {
                   std::memcpy(lanes_a[l], ex.slot[l].src[0], sizeof lanes_a[l]);
                 }
                 wgmma_register_a_tile<T>(lanes_a, ta);
                 return wgmma_m64_warp_a<N, T>(regs, ta, blk->smem,
                                               static_cast<uint32_t>(blk->smem_bytes),
                                               ex.slot[0].value, kTransB != 0);
               });
}
} // namespace detail

#define KILN_CPU_WGMMA(N)                                                                          \
  template <int kTransA, int kTransB, int kLboA, int kSboA, int kSwzA, int kLboB, int kSboB,       \
            int kSwzB>                                                                             \
  inline void wgmma_m64n##N##k16_f16(void* d, const void* a, const void* b) {                      \
    detail::WgmmaLane<N, half_t, kTransA, kTransB>("wgmma_m64n" #N "k16_f16", d,                   \
                                                   smem_desc(a, kLboA, kSboA, kSwzA),              \
                                                   smem_desc(b, kLboB, kSboB, kSwzB));             \
  }                                                                                                \
  template <int kTransA, int kTransB, int kLboA, int kSboA, int kSwzA, int kLboB, int kSboB,       \
            int kSwzB>                                                                             \
  inline void wgmma_m64n##N##k16_bf16(void* d, const void* a, const void* b) {                     \
    detail::WgmmaLane<N, bfloat16_t, kTransA, kTransB>("wgmma_m64n" #N "k16_bf16", d,              \
                                                       smem_desc(a, kLboA, kSboA, kSwzA),          \
                                                       smem_desc(b, kLboB, kSboB, kSwzB));         \
  }                                                                                                \
  template <int kTransB, int kLboB, int kSboB, int kSwzB>                                          \
  inline void wgmma_m64n##N##k16_rs_f16(void* d, const void* a, const void* b) {                   \
    detail::WgmmaLaneRs<N, half_t, kTransB>("wgmma_m64n" #N "k16_rs_f16", d, a,                    \
                                            smem_desc(b, kLboB, kSboB, kSwzB));                    \
  }                                                                                                \
  template <int kTransB, int kLboB, int kSboB, int kSwzB>                                          \
  inline void wgmma_m64n##N##k16_rs_bf16(void* d, const void* a, const void* b) {                  \
    detail::WgmmaLaneRs<N, bfloat16_t, kTransB>("wgmma_m64n" #N "k16_rs_bf16", d, a,               \
                                                smem_desc(b, kLboB, kSboB, kSwzB));                \
  }                                                                                                \
  template <int kTransA, int kTransB, int kLboA, int kSboA, int kSwzA, int kLboB, int kSboB,       \
            int kSwzB>                                                                             \
  inline void wgmma_m64n##N##k32_e4m3(void* d, const void* a, const void* b) {                     \
    static_assert(kTransA == 0 && kTransB == 0,                                                    \
                  "fp8 wgmma reads K-major operands only: kTransA and kTransB must be 0");         \
    detail::WgmmaLane<N, fp8_e4m3_t, 0, 0>("wgmma_m64n" #N "k32_e4m3", d,                          \
                                           smem_desc(a, kLboA, kSboA, kSwzA),                      \
                                           smem_desc(b, kLboB, kSboB, kSwzB));                     \
  }                                                                                                \
  template <int kTransA, int kTransB, int kLboA, int kSboA, int kSwzA, int kLboB, int kSboB,       \
            int kSwzB>                                                                             \
  inline void wgmma_m64n##N##k32_e5m2(void* d, const void* a, const void* b) {                     \
    static_assert(kTransA == 0 && kTransB == 0,                                                    \
                  "fp8 wgmma reads K-major operands only: kTransA and kTransB must be 0");         \
    detail::WgmmaLane<N, fp8_e5m2_t, 0, 0>("wgmma_m64n" #N "k32_e5m2", d,                          \
                                           smem_desc(a, kLboA, kSboA, kSwzA),                      \
                                           smem_desc(b, kLboB, kSboB, kSwzB));                     \
  }
KILN_CPU_WGMMA(8)
KILN_CPU_WGMMA(16)
KILN_CPU_WGMMA(24)
KILN_CPU_WGMMA(32)
KILN_CPU_WGMMA(40)
KILN_CPU_WGMMA(48)
KILN_CPU_WGMMA(56)
KILN_CPU_WGMMA(64)
KILN_CPU_WGMMA(72)
KILN_CPU_WGMMA(80)
KILN_CPU_WGMMA(88)
KILN_CPU_WGMMA(96)
KILN_CPU_WGMMA(104)
KILN_CPU_WGMMA(112)
KILN_CPU_WGMMA(120)
KILN_CPU_WGMMA(128)
KILN_CPU_WGMMA(136)
KILN_CPU_WGMMA(144)
KILN_CPU_WGMMA(152)
KILN_CPU_WGMMA(160)
KILN_CPU_WGMMA(168)
KILN_CPU_WGMMA(176)
KILN_CPU_WGMMA(184)
KILN_CPU_WGMMA(192)
KILN_CPU_WGMMA(200)
KILN_CPU_WGMMA(208)
KILN_CPU_WGMMA(216)
KILN_CPU_WGMMA(224)
KILN_CPU_WGMMA(232)
KILN_CPU_WGMMA(240)
KILN_CPU_WGMMA(248)
KILN_CPU_WGMMA(256)
#undef KILN_CPU_WGMMA

// ---- shfl_xor: *dst = the `value` of lane (lane ^ lane_mask). As shfl.sync
// reads only bits 4:0 of the mask (bval[4:0] = b[4:0] in the PTX ISA), a
// mask of 32 reads the own lane and 33 reads lane ^ 1. A lane missing from a
// partial warp reads as the reader's own value. Full member mask, width 32.
// T: float, double, 8/16/32/64-bit integers, half_t, bfloat16_t.

namespace detail {
template <class T>
struct IsShflType
    : std::integral_constant<bool, std::is_integral<T>::value || std::is_floating_point<T>::value> {
};
template <>
struct IsShflType<bool> : std::false_type {};
template <>
struct IsShflType<long double> : std::false_type {};
template <>
struct IsShflType<half_t> : std::true_type {};
template <>
struct IsShflType<bfloat16_t> : std::true_type {};
} // namespace detail

template <class T>
inline void shfl_xor(T* dst, typename detail::Identity<T>::type value, int lane_mask) {
  static_assert(detail::IsShflType<T>::value, "shfl_xor: unsupported type");
  static_assert(sizeof(T) <= sizeof(uint64_t), "shfl_xor: at most 64 bits");
  fiber::WarpSlot mine;
  mine.dst = dst;
  std::memcpy(&mine.value, &value, sizeof value);
  mine.arg = lane_mask;
  // One name per size: lanes must agree on the width they exchange.
  static constexpr const char* kNames[] = {
      "", "shfl_xor(8-bit)", "shfl_xor(16-bit)", "", "shfl_xor(32-bit)", "", "",
      "", "shfl_xor(64-bit)"};
  fiber::WarpCollective(kNames[sizeof(T)], mine, [](fiber::BlockState*, fiber::WarpExchange& ex) {
    for (int l = 0; l < ex.lanes; ++l) {
      const unsigned src = (static_cast<unsigned>(l) ^ static_cast<unsigned>(ex.slot[l].arg)) & 31u;
      const fiber::WarpSlot& from =
          src < static_cast<unsigned>(ex.lanes) ? ex.slot[src] : ex.slot[l];
      std::memcpy(ex.slot[l].dst, &from.value, sizeof(T));
    }
  });
}

// ---- cp.async (copies now) and plain vector copies.

inline void cp_async_4(void* dst, const void* src, int src_bytes) {
  cp_async_ca<4>(dst, src, src_bytes);
}
inline void cp_async_8(void* dst, const void* src, int src_bytes) {
  cp_async_ca<8>(dst, src, src_bytes);
}
inline void cp_async_16(void* dst, const void* src, int src_bytes) {
  cp_async_cg<16>(dst, src, src_bytes);
}
inline void cp_async_commit() {}
template <int N>
inline void cp_async_wait() {
  static_assert(N >= 0, "cp_async_wait takes a non-negative count");
}

inline void copy_2(void* dst, const void* src) { std::memcpy(dst, src, 2); }
inline void copy_4(void* dst, const void* src) { std::memcpy(dst, src, 4); }
inline void copy_8(void* dst, const void* src) { std::memcpy(dst, src, 8); }
inline void copy_16(void* dst, const void* src) { std::memcpy(dst, src, 16); }

// ---- Atomics: *dst = op(*dst, value) atomically; no value is returned.
// T: float, double, 32/64-bit integers, half_t, bfloat16_t (these compute in
// float and round back, like the CUDA side's CAS loops). Float max/min are
// fmax/fmin. Integer adds wrap.

namespace detail {

template <class T>
struct IsAtomicInt
    : std::integral_constant<bool, std::is_integral<T>::value && !std::is_same<T, bool>::value &&
                                       (sizeof(T) == 4 || sizeof(T) == 8)> {};

// Replaces *dst with f(*dst) by compare-and-swap; T is a 2/4/8-byte
// trivially copyable type (GCC/Clang's generic __atomic builtins).
template <class T, class F>
inline void AtomicUpdate(T* dst, F f) {
  T expected;
  __atomic_load(dst, &expected, __ATOMIC_RELAXED);
  for (;;) {
    T desired = f(expected);
    if (std::memcmp(&desired, &expected, sizeof(T)) == 0) return;
    if (__atomic_compare_exchange(dst, &expected, &desired, /*weak=*/true, __ATOMIC_RELAXED,
                                  __ATOMIC_RELAXED))
      return;
  }
}

template <class T, class Op>
inline void AtomicStorage(T* dst, float value, Op op) {
  AtomicUpdate(&dst->bits, [&](uint16_t old) {
    return StorageFromFloat<T>::Run(op(StorageToFloat(T{old}), value)).bits;
  });
}

template <class T>
inline void AtomicAdd(T* dst, T value) {
  static_assert(IsAtomicInt<T>::value, "atomic_add: unsupported type");
  __atomic_fetch_add(dst, value, __ATOMIC_RELAXED);
}
inline void AtomicAdd(float* dst, float value) {
  AtomicUpdate(dst, [value](float old) { return old + value; });
}
inline void AtomicAdd(double* dst, double value) {
  AtomicUpdate(dst, [value](double old) { return old + value; });
}
inline void AtomicAdd(half_t* dst, half_t value) {
  AtomicStorage(dst, half_to_float(value), [](float a, float b) { return a + b; });
}
inline void AtomicAdd(bfloat16_t* dst, bfloat16_t value) {
  AtomicStorage(dst, bfloat16_to_float(value), [](float a, float b) { return a + b; });
}

template <class T>
inline void AtomicMax(T* dst, T value) {
  static_assert(IsAtomicInt<T>::value, "atomic_max: unsupported type");
  AtomicUpdate(dst, [value](T old) { return old < value ? value : old; });
}
template <class T>
inline void AtomicMin(T* dst, T value) {
  static_assert(IsAtomicInt<T>::value, "atomic_min: unsupported type");
  AtomicUpdate(dst, [value](T old) { return value < old ? value : old; });
}
inline void AtomicMax(float* dst, float value) {
  AtomicUpdate(dst, [value](float old) { return std::fmax(old, value); });
}
inline void AtomicMax(double* dst, double value) {
  AtomicUpdate(dst, [value](double old) { return std::fmax(old, value); });
}
inline void AtomicMin(float* dst, float value) {
  AtomicUpdate(dst, [value](float old) { return std::fmin(old, value); });
}
inline void AtomicMin(double* dst, double value) {
  AtomicUpdate(dst, [value](double old) { return std::fmin(old, value); });
}
inline void AtomicMax(half_t* dst, half_t value) {
  AtomicStorage(dst, half_to_float(value), [](float a, float b) { return std::fmax(a, b); });
}
inline void AtomicMax(bfloat16_t* dst, bfloat16_t value) {
  AtomicStorage(dst, bfloat16_to_float(value), [](float a, float b) { return std::fmax(a, b); });
}
inline void AtomicMin(half_t* dst, half_t value) {
  AtomicStorage(dst, half_to_float(value), [](float a, float b) { return std::fmin(a, b); });
}
inline void AtomicMin(bfloat16_t* dst, bfloat16_t value) {
  AtomicStorage(dst, bfloat16_to_float(value), [](float a, float b) { return std::fmin(a, b); });
}

} // namespace detail

template <class T>
inline void atomic_add(T* dst, typename detail::Identity<T>::type value) {
  detail::AtomicAdd(dst, value);
}
template <class T>
inline void atomic_max(T* dst, typename detail::Identity<T>::type value) {
  detail::AtomicMax(dst, value);
}
template <class T>
inline void atomic_min(T* dst, typename detail::Identity<T>::type value) {
  detail::AtomicMin(dst, value);
}

inline void threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// Split-K's in-kernel fixup, as the CUDA runtime's: the parts-th arrival
// at *counter gets *flag = 1 and sets the counter back to 0.
inline void splitk_ticket(int* flag, int* counter, int parts) {
  const int last = __atomic_fetch_add(counter, 1, __ATOMIC_ACQ_REL) == parts - 1 ? 1 : 0;
  if (last) __atomic_store_n(counter, 0, __ATOMIC_RELEASE);
  *flag = last;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_THREAD_OPS_H_
