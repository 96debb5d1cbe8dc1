// Kiln CPU runtime: emulation of Hopper's asynchronous data movement — the
// mbarrier transaction barrier, TMA tensor loads (cp.async.bulk.tensor),
// named barriers and setmaxnreg — with the semantics of the PTX ISA. The
// CUDA twin is kiln/cuda/tma.h; names and arguments match.
//
// TmaDesc is not a CUtensorMap here: the generated CPU kernel builds it
// from the tensor's pointer and shape with make_tma_desc (the CUDA kernel
// receives an encoded map instead). Its fields are what the launcher
// passes to cuTensorMapEncodeTiled (codegen/kernel_spec.h): dims and box
// innermost first, row-major strides, swizzle 0/32/64/128 bytes.
//
// mbarrier (8 bytes of shared memory, zero until initialized): bits 0-10
// the arrival count, 11-21 the arrivals pending in the current phase, 22
// the current phase's parity, 23 set once initialized; bits 32-63 the
// transaction bytes still expected (signed). A phase completes when no
// arrival and no byte is pending: its parity flips, the pending arrivals
// reset to the count, and the threads waiting for it run again.
// mbarrier_wait(bar, p) returns once the phase of parity p completed: at
// once while the current phase has the other parity.
//
// TMA: a load copies its whole box at issue (one execution the GPU allows:
// the data are visible to a thread only after its wait on the barrier)
// and then completes the box's bytes on the barrier, out-of-bounds
// elements included (as zeros), as the hardware counts them. The
// destination's swizzle acts on its shared-memory address bits, as on the
// GPU: with S = 32/64/128 bytes, the 16-byte chunk bits (4..) are XORed
// with the bits from 7 up (1, 2 or 3 bits), so a box lands in the layout
// wgmma's descriptors read only from a destination aligned to the pattern
// (1024 bytes for S = 128) — exactly what the CPU tests check against the
// compiler's own layout code.
//
// Misuse fails the block with a message: an uninitialized barrier, more
// arrivals than the count, a box wider than the swizzle, a destination
// outside shared memory or not 128-byte aligned.
#ifndef KILN_CPU_TMA_H_
#define KILN_CPU_TMA_H_

#include <cstdint>
#include <cstring>

#include "kiln/cpu/fiber.h"

namespace kiln {
namespace rt {

struct TmaDesc {
  const unsigned char* base = nullptr;
  int rank = 0;
  int elem_bytes = 0;
  int swizzle = 0;     // bytes: 0, 32, 64, 128
  int64_t dim[5] = {}; // innermost first
  int64_t stride[5] = {};
  int box[5] = {};
};

// dims and box innermost first; unused trailing entries are 1.
inline TmaDesc make_tma_desc(const void* base, int elem_bytes, int swizzle, int rank, int64_t d0,
                             int64_t d1, int64_t d2, int64_t d3, int64_t d4, int b0, int b1, int b2,
                             int b3, int b4) {
  TmaDesc t;
  t.base = static_cast<const unsigned char*>(base);
  t.rank = rank;
  t.elem_bytes = elem_bytes;
  t.swizzle = swizzle;
  const int64_t dims[5] = {d0, d1, d2, d3, d4};
  const int boxes[5] = {b0, b1, b2, b3, b4};
  int64_t stride = elem_bytes;
  for (int d = 0; d < 5; ++d) {
    t.dim[d] = d < rank ? dims[d] : 1;
    t.box[d] = d < rank ? boxes[d] : 1;
    t.stride[d] = stride;
    stride *= t.dim[d];
  }
  return t;
}

namespace detail {

struct MbarWord {
  uint32_t count = 0, pending = 0, parity = 0;
  bool init = false;
  int32_t tx = 0;
};

inline MbarWord LoadMbar(const void* bar) {
  uint64_t v;
  std::memcpy(&v, bar, sizeof v);
  MbarWord w;
  const uint32_t lo = static_cast<uint32_t>(v);
  w.count = lo & 0x7ffu;
  w.pending = (lo >> 11) & 0x7ffu;
  w.parity = (lo >> 22) & 1u;
  w.init = ((lo >> 23) & 1u) != 0;
  w.tx = static_cast<int32_t>(static_cast<uint32_t>(v >> 32));
  return w;
}

inline void StoreMbar(void* bar, const MbarWord& w) {
  const uint32_t lo = (w.count & 0x7ffu) | ((w.pending & 0x7ffu) << 11) | ((w.parity & 1u) << 22) |
                      (w.init ? 1u << 23 : 0u);
  const uint64_t v = lo | (static_cast<uint64_t>(static_cast<uint32_t>(w.tx)) << 32);
  std::memcpy(bar, &v, sizeof v);
}

[[noreturn]] inline void MbarFail(const char* what, const void* bar) {
  fiber::BlockState* b = fiber::CurrentBlock();
  if (b == nullptr) {
    std::fprintf(stderr, "kiln::rt: %s (mbarrier %p) outside launch_grid\n", what, bar);
    std::abort();
  }
  fiber::FailBlock(b, "thread %d: %s (mbarrier at shared offset %ld)", b->self().tid, what,
                   static_cast<long>(static_cast<const unsigned char*>(bar) - b->smem));
}

inline MbarWord CheckedMbar(const void* bar, const char* op) {
  fiber::BlockState* b = fiber::CurrentBlock();
  if (b != nullptr) {
    const unsigned char* p = static_cast<const unsigned char*>(bar);
    if (p < b->smem || p + 8 > b->smem + b->smem_bytes ||
        (reinterpret_cast<uintptr_t>(p) & 7u) != 0)
      MbarFail("an mbarrier outside shared memory or not 8-byte aligned", bar);
  }
  MbarWord w = LoadMbar(bar);
  if (!w.init) MbarFail(op, bar);
  return w;
}

// Completes the phase when nothing is pending.
inline void MbarSettle(void* bar, MbarWord w) {
  if (w.pending == 0 && w.tx == 0) {
    w.parity ^= 1u;
    w.pending = w.count;
    StoreMbar(bar, w);
    if (fiber::BlockState* b = fiber::CurrentBlock()) fiber::WakeMbarrier(b, bar);
    return;
  }
  StoreMbar(bar, w);
}

inline void MbarArrive(void* bar, int32_t tx_bytes, const char* op) {
  MbarWord w = CheckedMbar(bar, op);
  if (w.pending == 0) MbarFail("more arrivals than the mbarrier's count", bar);
  w.tx += tx_bytes;
  --w.pending;
  MbarSettle(bar, w);
}

inline void MbarCompleteTx(void* bar, int32_t bytes) {
  MbarWord w = CheckedMbar(bar, "a TMA load completes on an uninitialized mbarrier");
  w.tx -= bytes;
  MbarSettle(bar, w);
}

} // namespace detail

inline void mbarrier_init(void* bar, int count) {
  if (count < 1 || count > 1024)
    detail::MbarFail("mbarrier_init with a count outside 1..1024", bar);
  detail::MbarWord w;
  w.count = static_cast<uint32_t>(count);
  w.pending = w.count;
  w.init = true;
  detail::StoreMbar(bar, w);
}

inline void fence_barrier_init() {}

inline void mbarrier_arrive(void* bar) {
  detail::MbarArrive(bar, 0, "mbarrier_arrive on an uninitialized mbarrier");
}

inline void mbarrier_arrive_expect_tx(void* bar, int bytes) {
  detail::MbarArrive(bar, bytes, "mbarrier_arrive_expect_tx on an uninitialized mbarrier");
}

// Expects `bytes` more transaction bytes without arriving; the phase
// completes here only if bytes already completed early brought the count to
// zero with no arrival pending (as on the GPU, the count may be negative
// meanwhile).
inline void mbarrier_expect_tx(void* bar, int bytes) {
  detail::MbarWord w = detail::CheckedMbar(bar, "mbarrier_expect_tx on an uninitialized mbarrier");
  w.tx += bytes;
  detail::MbarSettle(bar, w);
}

inline void mbarrier_wait(void* bar, int parity) {
  for (;;) {
    const detail::MbarWord w =
        detail::CheckedMbar(bar, "mbarrier_wait on an uninitialized mbarrier");
    if (w.parity != (static_cast<uint32_t>(parity) & 1u)) return;
    fiber::BlockState* b = fiber::CurrentBlock();
    if (b == nullptr) detail::MbarFail("mbarrier_wait for a phase nothing can complete", bar);
    fiber::WaitMbarrier(b, bar);
  }
}

inline void prefetch_tma_desc(const TmaDesc&) {}

namespace detail {

// Checks a TMA box at shared address `smem` against its map (nullptr) or
// says what is wrong with it; `total` gets the box's bytes.
inline const char* TmaBoxError(const unsigned char* smem, const TmaDesc& m, int rank,
                               int64_t* total) {
  fiber::BlockState* b = fiber::CurrentBlock();
  const int64_t inner_bytes = static_cast<int64_t>(m.box[0]) * m.elem_bytes;
  *total = inner_bytes;
  for (int d = 1; d < 5; ++d) *total *= m.box[d];
  if (rank != m.rank) return "a TMA copy whose rank differs from its tensor map's";
  if (b != nullptr && (smem < b->smem || ((smem - b->smem) & 127) != 0))
    return "a TMA box in shared memory not 128-byte aligned";
  if (m.swizzle != 0 && inner_bytes > m.swizzle)
    return "a TMA box whose inner dimension is wider than its swizzle";
  if (inner_bytes % 16 != 0) return "a TMA box whose inner dimension is not a multiple of 16 bytes";
  if (b != nullptr && smem + *total > b->smem + b->smem_bytes)
    return "a TMA box that does not fit in shared memory";
  return nullptr;
}

// Visits the elements of the box at element coordinates c (innermost first)
// whose shared copy is at `smem`: fn(shared element, global byte offset,
// whether the element lies inside the tensor). The swizzle follows the
// address bits within shared memory, as on the GPU.
template <typename Fn>
void TmaWalk(unsigned char* smem, const TmaDesc& m, const int* c, Fn&& fn) {
  fiber::BlockState* b = fiber::CurrentBlock();
  const uintptr_t origin = b != nullptr ? reinterpret_cast<uintptr_t>(b->smem) : 0;
  const int key_bits = m.swizzle == 128 ? 7 : m.swizzle == 64 ? 3 : m.swizzle == 32 ? 1 : 0;
  int64_t linear = 0; // byte offset of the element in the unswizzled box
  for (int i4 = 0; i4 < m.box[4]; ++i4) {
    for (int i3 = 0; i3 < m.box[3]; ++i3) {
      for (int i2 = 0; i2 < m.box[2]; ++i2) {
        for (int i1 = 0; i1 < m.box[1]; ++i1) {
          for (int i0 = 0; i0 < m.box[0]; ++i0, linear += m.elem_bytes) {
            const int64_t g[5] = {static_cast<int64_t>(c[0]) + i0, static_cast<int64_t>(c[1]) + i1,
                                  static_cast<int64_t>(c[2]) + i2, static_cast<int64_t>(c[3]) + i3,
                                  static_cast<int64_t>(c[4]) + i4};
            bool inside = true;
            int64_t global = 0;
            for (int d = 0; d < 5; ++d) {
              inside = inside && g[d] >= 0 && g[d] < m.dim[d];
              global += g[d] * m.stride[d];
            }
            uintptr_t addr =
                reinterpret_cast<uintptr_t>(smem) - origin + static_cast<uintptr_t>(linear);
            addr ^= ((addr >> 7) & static_cast<uintptr_t>(key_bits)) << 4;
            fn(reinterpret_cast<unsigned char*>(origin + addr), global, inside);
          }
        }
      }
    }
  }
}

inline void TmaLoad(void* dst, void* bar, const TmaDesc& m, const int* c, int rank) {
  unsigned char* out = static_cast<unsigned char*>(dst);
  int64_t total = 0;
  if (const char* why = TmaBoxError(out, m, rank, &total)) MbarFail(why, bar);
  TmaWalk(out, m, c, [&](unsigned char* to, int64_t src, bool inside) {
    if (inside) {
      std::memcpy(to, m.base + src, static_cast<size_t>(m.elem_bytes));
    } else {
      std::memset(to, 0, static_cast<size_t>(m.elem_bytes));
    }
  });
  MbarCompleteTx(bar, static_cast<int32_t>(total));
}

// A TMA store completes at issue here: the elements inside the tensor are
// written, the rest of the box is dropped, as on the GPU.
inline void TmaStore(const void* src, const TmaDesc& m, const int* c, int rank) {
  unsigned char* in = static_cast<unsigned char*>(const_cast<void*>(src));
  int64_t total = 0;
  if (const char* why = TmaBoxError(in, m, rank, &total)) {
    fiber::BlockState* b = fiber::CurrentBlock();
    if (b == nullptr) {
      std::fprintf(stderr, "kiln::rt: %s outside launch_grid\n", why);
      std::abort();
    }
    fiber::FailBlock(b, "thread %d: %s", b->self().tid, why);
  }
  unsigned char* base = const_cast<unsigned char*>(m.base);
  TmaWalk(in, m, c, [&](unsigned char* from, int64_t dst, bool inside) {
    if (inside) std::memcpy(base + dst, from, static_cast<size_t>(m.elem_bytes));
  });
}

} // namespace detail

inline void tma_load_1d(void* dst, void* bar, const TmaDesc& m, int c0) {
  const int c[5] = {c0, 0, 0, 0, 0};
  detail::TmaLoad(dst, bar, m, c, 1);
}
inline void tma_load_2d(void* dst, void* bar, const TmaDesc& m, int c0, int c1) {
  const int c[5] = {c0, c1, 0, 0, 0};
  detail::TmaLoad(dst, bar, m, c, 2);
}
inline void tma_load_3d(void* dst, void* bar, const TmaDesc& m, int c0, int c1, int c2) {
  const int c[5] = {c0, c1, c2, 0, 0};
  detail::TmaLoad(dst, bar, m, c, 3);
}
inline void tma_load_4d(void* dst, void* bar, const TmaDesc& m, int c0, int c1, int c2, int c3) {
  const int c[5] = {c0, c1, c2, c3, 0};
  detail::TmaLoad(dst, bar, m, c, 4);
}
inline void tma_load_5d(void* dst, void* bar, const TmaDesc& m, int c0, int c1, int c2, int c3,
                        int c4) {
  const int c[5] = {c0, c1, c2, c3, c4};
  detail::TmaLoad(dst, bar, m, c, 5);
}

inline void tma_store_1d(const void* src, const TmaDesc& m, int c0) {
  const int c[5] = {c0, 0, 0, 0, 0};
  detail::TmaStore(src, m, c, 1);
}
inline void tma_store_2d(const void* src, const TmaDesc& m, int c0, int c1) {
  const int c[5] = {c0, c1, 0, 0, 0};
  detail::TmaStore(src, m, c, 2);
}
inline void tma_store_3d(const void* src, const TmaDesc& m, int c0, int c1, int c2) {
  const int c[5] = {c0, c1, c2, 0, 0};
  detail::TmaStore(src, m, c, 3);
}
inline void tma_store_4d(const void* src, const TmaDesc& m, int c0, int c1, int c2, int c3) {
  const int c[5] = {c0, c1, c2, c3, 0};
  detail::TmaStore(src, m, c, 4);
}
inline void tma_store_5d(const void* src, const TmaDesc& m, int c0, int c1, int c2, int c3,
                         int c4) {
  const int c[5] = {c0, c1, c2, c3, c4};
  detail::TmaStore(src, m, c, 5);
}
// The stores completed at issue: nothing is left to wait for.
inline void tma_store_commit() {}
template <int N>
inline void tma_store_wait() {}
template <int N>
inline void tma_store_wait_read() {}

inline void named_barrier_sync(int id, int threads) { fiber::NamedBarrier(id, threads); }
inline void named_barrier_arrive(int id, int threads) {
  fiber::NamedBarrier(id, threads, /*wait=*/false);
}

// Register reallocation changes nothing the CPU can observe.
template <int N>
inline void setmaxnreg_inc() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes 24..256 in steps of 8");
}
template <int N>
inline void setmaxnreg_dec() {
  static_assert(N >= 24 && N <= 256 && N % 8 == 0, "setmaxnreg takes 24..256 in steps of 8");
}

} // namespace rt
} // namespace kiln

#endif // KILN_CPU_TMA_H_
