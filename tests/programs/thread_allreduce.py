# TVM's explicit cross-thread reduction inside a TileLang kernel (the form
# TileLang's gemv examples use): T.attr's reduce scope around one
# T.tvm_thread_allreduce. Each row's partial sums are held by the threads
# along threadIdx.y; one all-reduce sums them, another takes the largest
# partial of the threads whose partial is positive (the condition), each with
# its reducer's own function and identity.
# kiln: test-bind M=24 N=200
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def thread_allreduce(X, rows=4, lanes=8):
    M, N = T.const("M, N")

    X: T.Tensor((M, N), T.float32)
    S = T.empty((M,), T.float32)
    P = T.empty((M,), T.float32)

    with T.Kernel(T.ceildiv(M, rows), threads=(rows, lanes)) as bm:
        tr = T.get_thread_binding(0)
        tl = T.get_thread_binding(1)
        part = T.alloc_local((1,), T.float32)
        total = T.alloc_local((1,), T.float32)
        peak = T.alloc_local((1,), T.float32)
        T.clear(part)
        for c in T.serial(T.ceildiv(N, lanes)):
            if bm * rows + tr < M and c * lanes + tl < N:
                part[0] += X[bm * rows + tr, c * lanes + tl]
        with T.attr(
            T.comm_reducer(lambda x, y: x + y, [T.cast(0, T.float32)]),
            "reduce_scope",
            T.reinterpret(T.uint64(0), dtype="handle"),
        ):
            T.evaluate(T.tvm_thread_allreduce(T.uint32(1), part[0], True, total[0], tl, dtype="handle"))
        with T.attr(
            T.comm_reducer(lambda x, y: T.max(x, y), [T.cast(-1, T.float32)]),
            "reduce_scope",
            T.reinterpret(T.uint64(0), dtype="handle"),
        ):
            T.evaluate(T.tvm_thread_allreduce(T.uint32(1), part[0], part[0] > 0, peak[0], tl, dtype="handle"))
        if bm * rows + tr < M:
            S[bm * rows + tr] = total[0]
            P[bm * rows + tr] = peak[0]

    return S, P


def ref_program(X):
    M, N = X.shape
    lanes = 8
    parts = np.zeros((M, lanes), np.float64)
    for t in range(lanes):
        parts[:, t] = X[:, t::lanes].astype(np.float64).sum(axis=1)
    peak = np.where(parts > 0, parts, -1.0).max(axis=1)
    return parts.sum(axis=1).astype(np.float32), peak.astype(np.float32)
