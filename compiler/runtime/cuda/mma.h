// Kiln CUDA runtime: per-lane wrappers of mma.sync.aligned (sm_80+).
//
// Each wrapper is one instruction; every lane of the warp calls it with its
// own registers, laid out as the PTX ISA's fragment tables say (summarized
// in kiln/cpu/mma.h, whose warp-wide emulation is the CPU twin). `d` may alias
// `c`. All 32 lanes must execute the call convergently.
#ifndef KILN_CUDA_MMA_H_
#define KILN_CUDA_MMA_H_

#include "kiln/cuda/types.h"

namespace kiln {
namespace rt {

// m16n8k16 f32 += f16 * f16: a[4], b[2] f16x2 registers; c, d float[4].
KILN_DEVICE void mma_m16n8k16_f16(float* d, const uint32_t* a, const uint32_t* b, const float* c) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
                 "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// m16n8k16 f32 += bf16 * bf16: a[4], b[2] bf16x2 registers; c, d float[4].
KILN_DEVICE void mma_m16n8k16_bf16(float* d, const uint32_t* a, const uint32_t* b, const float* c) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
                 "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// m16n8k8 f32 += tf32 * tf32: a[4], b[2] tf32 in float bits; c, d float[4].
KILN_DEVICE void mma_m16n8k8_tf32(float* d, const uint32_t* a, const uint32_t* b, const float* c) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
                 "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// m16n8k32 s32 += s8 * s8 (wrapping): a[4], b[2] with four s8 each; c, d int32[4].
KILN_DEVICE void mma_m16n8k32_s8(int32_t* d, const uint32_t* a, const uint32_t* b,
                                 const int32_t* c) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%10,%11,%12,%13};"
               : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]),
                 "r"(c[1]), "r"(c[2]), "r"(c[3]));
}

} // namespace rt
} // namespace kiln

#endif // KILN_CUDA_MMA_H_
