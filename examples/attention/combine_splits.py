# Merges the partial outputs of a split-KV (flash-decoding) attention pass: split s produced
# O_partial[b, h, s, :] normalized over its own keys and lse[b, h, s] = log(sum of its exp scores).
# The exact result weights each split by exp(lse_s) / sum_t exp(lse_t).
# kiln: bind batch=64 heads=32 num_splits=16 dim=128
# kiln: test-bind batch=3 heads=5 num_splits=7 dim=32
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def combine_splits(O_partial, lse, threads=128, dtype=T.float16, accum_dtype=T.float32):
    batch, heads, num_splits, dim = T.const("batch, heads, num_splits, dim")

    O_partial: T.Tensor((batch, heads, num_splits, dim), accum_dtype)
    lse: T.Tensor((batch, heads, num_splits), accum_dtype)
    O = T.empty((batch, heads, dim), dtype)

    with T.Kernel(heads, batch, threads=threads) as (h, b):
        o = T.alloc_fragment((dim,), accum_dtype)
        lse_max = T.alloc_var(accum_dtype)
        denom = T.alloc_var(accum_dtype)
        weight = T.alloc_var(accum_dtype)

        # Subtracting the largest lse keeps every exp() in (0, 1].
        lse_max = -T.infinity(accum_dtype)
        for s in T.serial(num_splits):
            lse_max = T.max(lse_max, lse[b, h, s])
        denom = 0.0
        for s in T.serial(num_splits):
            denom += T.exp(lse[b, h, s] - lse_max)

        T.clear(o)
        for s in T.serial(num_splits):
            weight = T.exp(lse[b, h, s] - lse_max) / denom
            # dim is the tensor's full extent, so this direct global read needs no guard.
            for d in T.Parallel(dim):
                o[d] += weight * O_partial[b, h, s, d]
        T.copy(o, O[b, h, :])

    return O


def ref_program(O_partial, lse):
    w = np.exp(lse.astype(np.float64) - lse.max(axis=-1, keepdims=True))
    w /= w.sum(axis=-1, keepdims=True)
    return np.einsum("bhs,bhsd->bhd", w, O_partial.astype(np.float64)).astype(np.float16)
