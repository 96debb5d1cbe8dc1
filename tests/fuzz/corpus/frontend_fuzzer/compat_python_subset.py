# Seed: the Python subset of TileLang's examples (issue 30): f-strings, str
# and int methods, isinstance, math.gcd, while, tilelang.math, T.clamp.
import math

import tilelang
import tilelang.language as T
from tilelang.math import next_power_of_2


def a(): return f"{"
def b(): return f"{a!}"
def c(): return f"{a:"
def d(): return f"{x['a']}{{}}}}"
def e(): return f"\{6}\n{x}\\"
def g(): return f"""{
x
+ y}"""
def i(): return rf"\d{x}\q"
def j(): return f"{x:{y}}"
def l(): return f"{x!r:>{w}}"
def m(): return f"{(1,2)[0]=}" f"{1 if x else 2}" "plain" f"{'}'}"


@tilelang.jit
def kern(A, N, mode="x", block_N=None):
    M = T.const("M")
    s = [f"{N}", rf"\d{N}", f"{N!r:>6}", f"{'}'}", f"{ {1: 2}[1] }", f"""{N
}""", f"{N:}", f"{'abc':.2}", f"{3.5:%}", f"{-0.0}", f"{2**62:b}", f"{N=}", f"{mode = }"]
    name = "_".join(str(x) for x in s) + "".join(c for c in T.float16 if c.isdigit())
    block = 1
    while block < N and block < 64:
        block *= 2
    else:
        block += 0
    g = math.gcd(N, 96) if isinstance(N, int) else 1
    assert N.bit_length() > 0 and next_power_of_2(N) >= N and tilelang.cdiv(N, 2) > 0
    A: T.Tensor((M, N), T.float32)
    with T.Kernel(M, threads=block) as bx:
        for i, j in T.parallel(1, N):
            A[bx, j] = T.clamp(A[bx, j] * g, -1.0, 1.0)
