// Kiln CUDA runtime: per-lane wrappers of
// ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16 (sm_75+).
//
// Each lane passes the generic address of the shared-memory row it supplies
// (lane 8*j + r: row r of matrix j; 16-byte aligned) and receives its
// registers, as documented in kiln/cpu/ldmatrix.h. Lanes whose address is not
// used (8-31 for .x1, 16-31 for .x2) may pass any shared address. All 32
// lanes must execute the call convergently. The "memory" clobber keeps the
// compiler from moving the load above this thread's own shared stores.
#ifndef KILN_CUDA_LDMATRIX_H_
#define KILN_CUDA_LDMATRIX_H_

#include "kiln/cuda/types.h"

namespace kiln {
namespace rt {

KILN_DEVICE void ldmatrix_x1(uint32_t* dst, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];"
               : "=r"(dst[0])
               : "r"(smem_addr(smem_row))
               : "memory");
}
KILN_DEVICE void ldmatrix_x2(uint32_t* dst, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
               : "=r"(dst[0]), "=r"(dst[1])
               : "r"(smem_addr(smem_row))
               : "memory");
}
KILN_DEVICE void ldmatrix_x4(uint32_t* dst, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(dst[0]), "=r"(dst[1]), "=r"(dst[2]), "=r"(dst[3])
               : "r"(smem_addr(smem_row))
               : "memory");
}
KILN_DEVICE void ldmatrix_x1_trans(uint32_t* dst, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];"
               : "=r"(dst[0])
               : "r"(smem_addr(smem_row))
               : "memory");
}
KILN_DEVICE void ldmatrix_x2_trans(uint32_t* dst, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
               : "=r"(dst[0]), "=r"(dst[1])
               : "r"(smem_addr(smem_row))
               : "memory");
}
KILN_DEVICE void ldmatrix_x4_trans(uint32_t* dst, const void* smem_row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(dst[0]), "=r"(dst[1]), "=r"(dst[2]), "=r"(dst[3])
               : "r"(smem_addr(smem_row))
               : "memory");
}

} // namespace rt
} // namespace kiln

#endif // KILN_CUDA_LDMATRIX_H_
