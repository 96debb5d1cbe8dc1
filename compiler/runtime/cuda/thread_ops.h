// Kiln CUDA runtime: the per-thread operations generated code calls, with the
// names and signatures of the CPU twin (kiln/cpu/thread_ops.h, which states
// the semantics): thread/block indices, the block barrier, dynamic shared
// memory, and the intrinsics of compiler/ir/intrinsics.h with `void*`
// address operands. Each is one PTX instruction or a short sequence; the warp
// collectives (ldmatrix*, mma*, shfl_xor) need all 32 lanes convergent.
// Math and conversions: kiln/cuda/scalar_math.h, kiln/cuda/convert.h.
// No toolkit headers: compiles under NVRTC alone (sm_80+).
#ifndef KILN_CUDA_THREAD_OPS_H_
#define KILN_CUDA_THREAD_OPS_H_

#include "kiln/cuda/convert.h"
#include "kiln/cuda/cp_async.h"
#include "kiln/cuda/helpers.h"
#include "kiln/cuda/ldmatrix.h"
#include "kiln/cuda/mma.h"
#include "kiln/cuda/scalar_math.h"
#include "kiln/cuda/types.h"
#include "kiln/cuda/warp.h"

namespace kiln {
namespace rt {
namespace detail {

// Makes a parameter non-deduced, so T comes from the pointer operand alone
// and the value converts to it.
template <class T>
struct Identity {
  typedef T type;
};

} // namespace detail

// ---- Run-time checks (IR kAssert).

// Set by the first failing check of the module's launches: one report, not
// one per thread. A trap leaves the context unusable, so one is enough.
__device__ unsigned int kiln_rt_assert_reported = 0u;

// A failed check: the first failing thread prints `message`, and every
// failing thread stops the kernel (the launch fails with an illegal
// instruction error; the message is flushed when the host synchronizes).
KILN_DEVICE void assert_fail(const char* message) {
  // Device printf: declared by NVRTC itself and by nvcc's runtime headers.
  if (atomicExch(&kiln_rt_assert_reported, 1u) == 0u) {
    printf("kiln: kernel check failed: %s\n", message);
  }
  __trap();
}

// ---- Thread and block indices. (sync_threads is in kiln/cuda/helpers.h.)

KILN_DEVICE int tid_x() { return static_cast<int>(threadIdx.x); }
KILN_DEVICE int tid_y() { return static_cast<int>(threadIdx.y); }
KILN_DEVICE int tid_z() { return static_cast<int>(threadIdx.z); }
KILN_DEVICE int bid_x() { return static_cast<int>(blockIdx.x); }
KILN_DEVICE int bid_y() { return static_cast<int>(blockIdx.y); }
KILN_DEVICE int bid_z() { return static_cast<int>(blockIdx.z); }
KILN_DEVICE int nbid_x() { return static_cast<int>(gridDim.x); }
KILN_DEVICE int nbid_y() { return static_cast<int>(gridDim.y); }
KILN_DEVICE int nbid_z() { return static_cast<int>(gridDim.z); }

// The block's dynamic shared memory (the launch's sharedMemBytes).
KILN_DEVICE unsigned char* dyn_smem() {
  // 1024-byte aligned: wgmma operands with the 128-byte swizzle need tiles
  // aligned to the swizzle period (the window starts at offset 0).
  extern __shared__ __align__(1024) unsigned char kiln_rt_dyn_smem[];
  return kiln_rt_dyn_smem;
}

// ---- ldmatrix and mma with untyped operands (the typed wrappers are in
// kiln/cuda/ldmatrix.h and kiln/cuda/mma.h).

KILN_DEVICE void ldmatrix_x1(void* dst, const void* src_row) {
  ldmatrix_x1(static_cast<uint32_t*>(dst), src_row);
}
KILN_DEVICE void ldmatrix_x2(void* dst, const void* src_row) {
  ldmatrix_x2(static_cast<uint32_t*>(dst), src_row);
}
KILN_DEVICE void ldmatrix_x4(void* dst, const void* src_row) {
  ldmatrix_x4(static_cast<uint32_t*>(dst), src_row);
}
KILN_DEVICE void ldmatrix_x1_trans(void* dst, const void* src_row) {
  ldmatrix_x1_trans(static_cast<uint32_t*>(dst), src_row);
}
KILN_DEVICE void ldmatrix_x2_trans(void* dst, const void* src_row) {
  ldmatrix_x2_trans(static_cast<uint32_t*>(dst), src_row);
}
KILN_DEVICE void ldmatrix_x4_trans(void* dst, const void* src_row) {
  ldmatrix_x4_trans(static_cast<uint32_t*>(dst), src_row);
}

KILN_DEVICE void mma_m16n8k16_f16(void* d, const void* a, const void* b, const void* c) {
  mma_m16n8k16_f16(static_cast<float*>(d), static_cast<const uint32_t*>(a),
                   static_cast<const uint32_t*>(b), static_cast<const float*>(c));
}
KILN_DEVICE void mma_m16n8k16_bf16(void* d, const void* a, const void* b, const void* c) {
  mma_m16n8k16_bf16(static_cast<float*>(d), static_cast<const uint32_t*>(a),
                    static_cast<const uint32_t*>(b), static_cast<const float*>(c));
}
KILN_DEVICE void mma_m16n8k8_tf32(void* d, const void* a, const void* b, const void* c) {
  mma_m16n8k8_tf32(static_cast<float*>(d), static_cast<const uint32_t*>(a),
                   static_cast<const uint32_t*>(b), static_cast<const float*>(c));
}
KILN_DEVICE void mma_m16n8k32_s8(void* d, const void* a, const void* b, const void* c) {
  mma_m16n8k32_s8(static_cast<int32_t*>(d), static_cast<const uint32_t*>(a),
                  static_cast<const uint32_t*>(b), static_cast<const int32_t*>(c));
}

// ---- shfl_xor: *dst = the `value` of lane (lane ^ (lane_mask & 31)); the
// hardware reads bits 4:0 of the mask. Values wider than 32 bits travel as
// two shuffles.

namespace detail {
KILN_DEVICE uint32_t ShflXorValue(uint32_t v, uint32_t m) { return shfl_xor(v, m); }
KILN_DEVICE int32_t ShflXorValue(int32_t v, uint32_t m) { return shfl_xor(v, m); }
KILN_DEVICE float ShflXorValue(float v, uint32_t m) { return shfl_xor(v, m); }
#define KILN_RT_SHFL_NARROW(T, WIDE)                                                               \
  KILN_DEVICE T ShflXorValue(T v, uint32_t m) {                                                    \
    return static_cast<T>(shfl_xor(static_cast<WIDE>(v), m));                                      \
  }
KILN_RT_SHFL_NARROW(char, int32_t)
KILN_RT_SHFL_NARROW(signed char, int32_t)
KILN_RT_SHFL_NARROW(unsigned char, uint32_t)
KILN_RT_SHFL_NARROW(short, int32_t)
KILN_RT_SHFL_NARROW(unsigned short, uint32_t)
#undef KILN_RT_SHFL_NARROW
KILN_DEVICE unsigned long long ShflXorValue(unsigned long long v, uint32_t m) {
  const uint32_t lo = shfl_xor(static_cast<uint32_t>(v), m);
  const uint32_t hi = shfl_xor(static_cast<uint32_t>(v >> 32), m);
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}
KILN_DEVICE long long ShflXorValue(long long v, uint32_t m) {
  return static_cast<long long>(ShflXorValue(static_cast<unsigned long long>(v), m));
}
KILN_DEVICE unsigned long ShflXorValue(unsigned long v, uint32_t m) {
  return static_cast<unsigned long>(ShflXorValue(static_cast<unsigned long long>(v), m));
}
KILN_DEVICE long ShflXorValue(long v, uint32_t m) {
  return static_cast<long>(ShflXorValue(static_cast<unsigned long long>(v), m));
}
KILN_DEVICE double ShflXorValue(double v, uint32_t m) {
  uint32_t lo, hi;
  asm("mov.b64 {%0,%1}, %2;" : "=r"(lo), "=r"(hi) : "d"(v));
  lo = shfl_xor(lo, m);
  hi = shfl_xor(hi, m);
  double r;
  asm("mov.b64 %0, {%1,%2};" : "=d"(r) : "r"(lo), "r"(hi));
  return r;
}
KILN_DEVICE half_t ShflXorValue(half_t v, uint32_t m) {
  half_t r = {static_cast<uint16_t>(shfl_xor(static_cast<uint32_t>(v.bits), m))};
  return r;
}
KILN_DEVICE bfloat16_t ShflXorValue(bfloat16_t v, uint32_t m) {
  bfloat16_t r = {static_cast<uint16_t>(shfl_xor(static_cast<uint32_t>(v.bits), m))};
  return r;
}
} // namespace detail

template <class T>
KILN_DEVICE void shfl_xor(T* dst, typename detail::Identity<T>::type value, int lane_mask) {
  *dst = detail::ShflXorValue(value, static_cast<uint32_t>(lane_mask));
}

// ---- cp.async (.ca for 4 and 8 bytes, .cg for 16) and vector copies.

KILN_DEVICE void cp_async_4(void* dst, const void* src, int src_bytes) {
  cp_async_ca<4>(dst, src, src_bytes);
}
KILN_DEVICE void cp_async_8(void* dst, const void* src, int src_bytes) {
  cp_async_ca<8>(dst, src, src_bytes);
}
KILN_DEVICE void cp_async_16(void* dst, const void* src, int src_bytes) {
  cp_async_cg<16>(dst, src, src_bytes);
}
KILN_DEVICE void cp_async_commit() { cp_async_commit_group(); }
template <int N>
KILN_DEVICE void cp_async_wait() {
  cp_async_wait_group<N>();
}

// One naturally aligned load and store of 2, 4, 8 or 16 bytes.
KILN_DEVICE void copy_2(void* dst, const void* src) {
  *static_cast<unsigned short*>(dst) = *static_cast<const unsigned short*>(src);
}
KILN_DEVICE void copy_4(void* dst, const void* src) {
  *static_cast<unsigned*>(dst) = *static_cast<const unsigned*>(src);
}
KILN_DEVICE void copy_8(void* dst, const void* src) {
  *static_cast<uint2*>(dst) = *static_cast<const uint2*>(src);
}
KILN_DEVICE void copy_16(void* dst, const void* src) {
  *static_cast<uint4*>(dst) = *static_cast<const uint4*>(src);
}

// ---- Atomics (relaxed, no return value): native atom where PTX has it,
// else a CAS loop. 16-bit types update their aligned 32-bit word. Float
// max/min are fmaxf/fminf, like the CPU twin.

namespace detail {

// Replaces the 32-bit word *p with f(*p) by atomicCAS.
template <class F>
KILN_DEVICE void AtomicUpdate32(unsigned* p, F f) {
  unsigned old = *static_cast<volatile unsigned*>(p), assumed;
  do {
    assumed = old;
    const unsigned desired = f(assumed);
    if (desired == assumed) return;
    old = atomicCAS(p, assumed, desired);
  } while (old != assumed);
}
template <class F>
KILN_DEVICE void AtomicUpdate64(unsigned long long* p, F f) {
  unsigned long long old = *static_cast<volatile unsigned long long*>(p), assumed;
  do {
    assumed = old;
    const unsigned long long desired = f(assumed);
    if (desired == assumed) return;
    old = atomicCAS(p, assumed, desired);
  } while (old != assumed);
}

template <class Op>
KILN_DEVICE void AtomicFloat(float* p, float v, Op op) {
  AtomicUpdate32(reinterpret_cast<unsigned*>(p),
                 [=](unsigned old) { return float_bits(op(bits_float(old), v)); });
}
KILN_DEVICE double BitsDouble(unsigned long long u) {
  double d;
  asm("mov.b64 %0, %1;" : "=d"(d) : "l"(u));
  return d;
}
KILN_DEVICE unsigned long long DoubleBits(double d) {
  unsigned long long u;
  asm("mov.b64 %0, %1;" : "=l"(u) : "d"(d));
  return u;
}
template <class Op>
KILN_DEVICE void AtomicDouble(double* p, double v, Op op) {
  AtomicUpdate64(reinterpret_cast<unsigned long long*>(p),
                 [=](unsigned long long old) { return DoubleBits(op(BitsDouble(old), v)); });
}
// A 16-bit storage element, computed in float and rounded back.
template <class T, class Op>
KILN_DEVICE void AtomicStorage(T* p, float v, Op op) {
  const unsigned long long addr = reinterpret_cast<unsigned long long>(p);
  unsigned* word = reinterpret_cast<unsigned*>(addr & ~3ull);
  const unsigned shift = (addr & 2ull) ? 16u : 0u;
  AtomicUpdate32(word, [=](unsigned old) {
    T cur = {static_cast<uint16_t>(old >> shift)};
    const T next = StorageFromFloat<T>::Run(op(StorageToFloat(cur), v));
    return (old & ~(0xffffu << shift)) | (static_cast<unsigned>(next.bits) << shift);
  });
}

struct AddOp {
  template <class T>
  KILN_DEVICE T operator()(T a, T b) const {
    return a + b;
  }
};
struct MaxOp {
  KILN_DEVICE float operator()(float a, float b) const { return ::fmaxf(a, b); }
  KILN_DEVICE double operator()(double a, double b) const { return ::fmax(a, b); }
};
struct MinOp {
  KILN_DEVICE float operator()(float a, float b) const { return ::fminf(a, b); }
  KILN_DEVICE double operator()(double a, double b) const { return ::fmin(a, b); }
};

KILN_DEVICE unsigned long long* AsU64(long* p) { return reinterpret_cast<unsigned long long*>(p); }
KILN_DEVICE unsigned long long* AsU64(unsigned long* p) {
  return reinterpret_cast<unsigned long long*>(p);
}
KILN_DEVICE long long* AsS64(long* p) { return reinterpret_cast<long long*>(p); }

KILN_DEVICE void AtomicAdd(int* p, int v) { atomicAdd(p, v); }
KILN_DEVICE void AtomicAdd(unsigned* p, unsigned v) { atomicAdd(p, v); }
KILN_DEVICE void AtomicAdd(unsigned long long* p, unsigned long long v) { atomicAdd(p, v); }
KILN_DEVICE void AtomicAdd(long long* p, long long v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
KILN_DEVICE void AtomicAdd(long* p, long v) {
  atomicAdd(AsU64(p), static_cast<unsigned long long>(v));
}
KILN_DEVICE void AtomicAdd(unsigned long* p, unsigned long v) {
  atomicAdd(AsU64(p), static_cast<unsigned long long>(v));
}
KILN_DEVICE void AtomicAdd(float* p, float v) { atomicAdd(p, v); }
KILN_DEVICE void AtomicAdd(double* p, double v) { atomicAdd(p, v); }
KILN_DEVICE void AtomicAdd(half_t* p, half_t v) { AtomicStorage(p, half_to_float(v), AddOp()); }
KILN_DEVICE void AtomicAdd(bfloat16_t* p, bfloat16_t v) {
  AtomicStorage(p, bfloat16_to_float(v), AddOp());
}

#define KILN_RT_ATOMIC_MINMAX(NAME, NATIVE, OP)                                                    \
  KILN_DEVICE void NAME(int* p, int v) { NATIVE(p, v); }                                           \
  KILN_DEVICE void NAME(unsigned* p, unsigned v) { NATIVE(p, v); }                                 \
  KILN_DEVICE void NAME(long long* p, long long v) { NATIVE(p, v); }                               \
  KILN_DEVICE void NAME(unsigned long long* p, unsigned long long v) { NATIVE(p, v); }             \
  KILN_DEVICE void NAME(long* p, long v) { NATIVE(AsS64(p), static_cast<long long>(v)); }          \
  KILN_DEVICE void NAME(unsigned long* p, unsigned long v) {                                       \
    NATIVE(AsU64(p), static_cast<unsigned long long>(v));                                          \
  }                                                                                                \
  KILN_DEVICE void NAME(float* p, float v) { AtomicFloat(p, v, OP()); }                            \
  KILN_DEVICE void NAME(double* p, double v) { AtomicDouble(p, v, OP()); }                         \
  KILN_DEVICE void NAME(half_t* p, half_t v) { AtomicStorage(p, half_to_float(v), OP()); }         \
  KILN_DEVICE void NAME(bfloat16_t* p, bfloat16_t v) {                                             \
    AtomicStorage(p, bfloat16_to_float(v), OP());                                                  \
  }
KILN_RT_ATOMIC_MINMAX(AtomicMax, atomicMax, MaxOp)
KILN_RT_ATOMIC_MINMAX(AtomicMin, atomicMin, MinOp)
#undef KILN_RT_ATOMIC_MINMAX

} // namespace detail

template <class T>
KILN_DEVICE void atomic_add(T* dst, typename detail::Identity<T>::type value) {
  detail::AtomicAdd(dst, value);
}
template <class T>
KILN_DEVICE void atomic_max(T* dst, typename detail::Identity<T>::type value) {
  detail::AtomicMax(dst, value);
}
template <class T>
KILN_DEVICE void atomic_min(T* dst, typename detail::Identity<T>::type value) {
  detail::AtomicMin(dst, value);
}

KILN_DEVICE void threadfence() { __threadfence(); }

// Split-K's in-kernel fixup (compiler/passes/split_k.h): called by one
// thread of each block after every thread's partials were fenced and the
// block synchronized. The parts-th arrival of a tile learns it is the last,
// so every other part's partials are visible to it (the fences before the
// counter, this one after), and leaves the counter at 0 for the next launch.
KILN_DEVICE void splitk_ticket(int* flag, int* counter, int parts) {
  const int last = atomicAdd(counter, 1) == parts - 1 ? 1 : 0;
  if (last) atomicExch(counter, 0);
  *flag = last;
  __threadfence();
}

} // namespace rt
} // namespace kiln

#endif // KILN_CUDA_THREAD_OPS_H_
