# Element atomics on shared memory outside T.Parallel, the pattern of TileLang's
# split-K gemv examples: one thread per row zeroes a shared accumulator
# (`if tk == 0: acc[tn] = 0`), every thread adds its partial with T.atomic_add,
# and the row's sum is read back. The zeroing must be ordered before the
# other threads' atomics and the atomics before the read: without the
# barriers the lowering places there, a GPU loses contributions (the CPU
# emulation runs each thread to its next barrier, so only the GPU run of this
# program shows a missing one). A second round adds a constant per thread
# with two atomics in a row (no barrier needed between them) and takes the
# maximum of the partials.
# kiln: test-bind N=64 K=512
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def atomic_after_store(A, B, rows=16, lanes=32):
    N, K = T.const("N, K")

    A: T.Tensor((K,), T.float32)
    B: T.Tensor((N, K), T.float32)
    S = T.empty((N,), T.float32)
    E = T.empty((N,), T.float32)
    P = T.empty((N,), T.float32)

    with T.Kernel(T.ceildiv(N, rows), threads=(rows, lanes)) as bn:
        tn = T.get_thread_binding(0)
        tk = T.get_thread_binding(1)
        part = T.alloc_local((1,), T.float32)
        acc = T.alloc_shared((rows,), T.float32)
        extra = T.alloc_shared((rows,), T.float32)
        peak = T.alloc_shared((rows,), T.float32)
        if tk == 0:
            acc[tn] = 0
            extra[tn] = 0
            peak[tn] = -1e30
        T.clear(part)
        for c in T.serial(K // lanes):
            part[0] += A[c * lanes + tk] * B[bn * rows + tn, c * lanes + tk]
        T.atomic_add(acc[tn], part[0])
        T.atomic_add(extra[tn], 1.0)
        T.atomic_add(extra[tn], 0.5)
        T.atomic_max(peak[tn], part[0])
        S[bn * rows + tn] = acc[tn]
        E[bn * rows + tn] = extra[tn]
        P[bn * rows + tn] = peak[tn]

    return S, E, P


def ref_program(A, B):
    N, K = B.shape
    lanes = 32
    prod = B.astype(np.float64) * A.astype(np.float64)[None, :]
    parts = np.stack([prod[:, t::lanes].sum(axis=1) for t in range(lanes)], axis=1)
    return (parts.sum(axis=1).astype(np.float32), np.full(N, 1.5 * lanes, np.float32),
            parts.max(axis=1).astype(np.float32))
