# EXPECT: 17:80: T.tvm_thread_allreduce: the reduced axes must be thread indices (T.get_thread_binding(d))
# BIND: N=64
import tilelang
import tilelang.language as T

@tilelang.jit
def kern(A):
    N = T.const("N")
    A: T.Tensor((N,), T.float32)
    with T.Kernel(1, threads=(4, 8)) as bx:
        tl = T.get_thread_binding(1)
        v = T.alloc_local((1,), T.float32)
        out = T.alloc_local((1,), T.float32)
        v[0] = A[tl]
        with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, T.float32)]), "reduce_scope",
                    T.reinterpret(T.uint64(0), dtype="handle")):
            T.evaluate(T.tvm_thread_allreduce(T.uint32(1), v[0], True, out[0], bx, dtype="handle"))
        A[tl] = out[0]
