"""A stand-in for the `tilelang` package, so kernel files import without TileLang.

Kiln compiles a kernel from its source text on the server; the Python process only
needs the file to import: ``import tilelang``, ``import tilelang.language as T``,
dtype defaults such as ``dtype=T.float16`` and the ``@tilelang.jit`` decorator.
install_tilelang_shim() registers modules under those names (unless the real TileLang
is importable) in which ``tilelang.jit`` is kiln.jit, ``tilelang.autotune`` and
``tilelang.autotuner.autotune`` are kiln.autotune, dtypes are their names, and
everything else is a placeholder that explains itself when called: TileLang's ops run
only inside the kernel, which Kiln's server evaluates.

The host side of TileLang that kernel files' own main() functions use is there too:
``fn.compile(...)`` returns a callable kernel with ``get_kernel_source()`` and
``get_profiler()`` (kiln/_compiled.py), ``tilelang.TensorSupplyType``,
``tilelang.profiler.do_bench``, ``tilelang.testing`` (main() runs the module's test_*
functions), ``tilelang.cdiv`` / ``next_power_of_2`` (also under ``tilelang.math``), and,
when TVM is not importable, a ``tvm`` module with ``DataType`` (``DataType(dtype).bits``).
"""
import importlib.util
import sys
import types

from ._values import DTYPE_BYTES

__all__ = ["install_tilelang_shim", "language"]


class _KernelOnly:
    """T.copy, T.Kernel, ...: meaningful only in kernel code, which Kiln's server
    evaluates; calling one in Python is a mistake worth a clear message."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _KernelOnly(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._name}(...) is TileLang kernel code: Kiln compiles it on the "
                           "server from the file's source; call the kernel through @kiln.jit "
                           "(or tilelang.jit under the shim) instead of running it in Python")

    def __repr__(self):
        return f"<tilelang shim: {self._name}>"


def _placeholder_getattr(prefix):
    """A module __getattr__ (PEP 562) answering TileLang names with a _KernelOnly and
    dunder names (``__file__``, ``__wrapped__``: what inspect and torch probe for) with
    AttributeError, as for any module that lacks them."""
    def getattr_(name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _KernelOnly(f"{prefix}.{name}")
    return getattr_


class _Annotation:
    """What T.Tensor(shape, dtype) evaluates to in Python (never used by Kiln)."""

    def __init__(self, kind, *args, **kwargs):
        self.kind, self.args, self.kwargs = kind, args, kwargs

    def __repr__(self):
        return f"T.{self.kind}{self.args!r}"


def _prim_func(fn=None, **_):
    if fn is None:
        return _prim_func
    fn.__kiln_prim_func__ = True
    return fn


def _make_language():
    T = types.ModuleType("tilelang.language")
    T.__doc__ = "Kiln's stand-in for tilelang.language (kiln/shim.py)."
    for name in DTYPE_BYTES:
        setattr(T, name, name)
    T.float8_e4m3fn = "float8_e4m3"
    T.prim_func = _prim_func
    T.Tensor = lambda *a, **k: _Annotation("Tensor", *a, **k)
    T.Buffer = lambda *a, **k: _Annotation("Buffer", *a, **k)
    T.__getattr__ = _placeholder_getattr("T")  # PEP 562
    return T


language = _make_language()


def _make_autotuner(autotune):
    at = types.ModuleType("tilelang.autotuner")
    at.__doc__ = "Kiln's stand-in for tilelang.autotuner: autotune is kiln.autotune."
    at.autotune = autotune
    at.__all__ = ["autotune"]  # `from tilelang.autotuner import *`
    at.__getattr__ = _placeholder_getattr("tilelang.autotuner")
    return at


def _cdiv(a, b):
    return -(-a // b)


def _next_power_of_2(n):
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _stand_in(name, doc, **attrs):
    """A module `name` holding `attrs`; other names are placeholders (_KernelOnly)."""
    m = types.ModuleType(name)
    m.__doc__ = doc
    for k, v in attrs.items():
        setattr(m, k, v)
    m.__getattr__ = _placeholder_getattr(name)
    return m


def _make_profiler():
    from ._compiled import TensorSupplyType, do_bench
    return _stand_in("tilelang.profiler",
                     "Kiln's stand-in for tilelang.profiler: do_bench times a callable.",
                     do_bench=do_bench, TensorSupplyType=TensorSupplyType)


def _make_testing():
    testing = types.ModuleType("tilelang.testing")
    testing.__doc__ = ("Kiln's stand-in for tilelang.testing: main() runs the calling "
                       "module's test_* functions; the rest as TileLang's.")

    def main():
        import inspect
        caller = inspect.stack()[1].frame.f_globals
        for name, fn in list(caller.items()):
            if name.startswith("test") and callable(fn) and inspect.isfunction(fn):
                fn()

    def set_random_seed(seed=42):
        import random
        random.seed(seed)
        try:
            import numpy as np
            np.random.seed(seed)
        except ImportError:
            pass
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.manual_seed(seed)

    def torch_assert_close(a, b, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, **_):
        from ._compiled import _compare
        _compare("tensor", a, b, atol, rtol, max_mismatched_ratio)

    def _identity_decorator(*args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda fn: fn

    testing.main = main
    testing.set_random_seed = set_random_seed
    testing.torch_assert_close = torch_assert_close
    for name in ("requires_cuda", "requires_cuda_compute_version", "requires_cuda_compute_version_ge",
                 "requires_cuda_compute_version_eq", "requires_cuda_compute_version_le",
                 "requires_cuda_compute_version_gt", "requires_cuda_compute_version_lt",
                 "requires_rocm", "requires_package"):
        setattr(testing, name, _identity_decorator)
    testing.__getattr__ = _placeholder_getattr("tilelang.testing")
    return testing


class DataType:
    """TVM's DataType for the host code of kernel files (``DataType(dtype).bits``)."""

    def __init__(self, dtype):
        text = str(dtype)
        self.lanes = 1
        if "x" in text and text.rsplit("x", 1)[1].isdigit():
            text, lanes = text.rsplit("x", 1)
            self.lanes = int(lanes)
        self.dtype = _DTYPE_ALIASES.get(text, text)
        if self.dtype not in DTYPE_BYTES:
            raise ValueError(f"DataType: unknown dtype {dtype!r}")
        self.bits = DTYPE_BYTES[self.dtype] * 8 if self.dtype != "bool" else 1

    def __str__(self):
        return self.dtype if self.lanes == 1 else f"{self.dtype}x{self.lanes}"

    def __repr__(self):
        return f"DataType({str(self)!r})"

    def __eq__(self, other):
        return str(self) == str(DataType(other) if not isinstance(other, DataType) else other)

    def __hash__(self):
        return hash(str(self))


_DTYPE_ALIASES = {"float": "float32", "half": "float16", "float8_e4m3fn": "float8_e4m3",
                  "int": "int32", "double": "float64"}


def _make_tvm():
    return _stand_in("tvm", "Kiln's stand-in for tvm: DataType only (the host code of kernel "
                     "files).", DataType=DataType, __kiln_shim__=True)


def _make_tilelang(jit, autotuner, tvm):
    from ._compiled import TensorSupplyType
    tl = types.ModuleType("tilelang")
    tl.__doc__ = ("Kiln's stand-in for tilelang (kiln/shim.py): tilelang.jit is kiln.jit, "
                  "tilelang.autotune is kiln.autotune.")
    tl.__file__ = __file__
    tl.__path__ = []  # a package, so `import tilelang.language` works
    tl.jit = jit
    tl.autotune = autotuner.autotune
    tl.autotuner = autotuner
    tl.language = language
    tl.TensorSupplyType = TensorSupplyType
    tl.profiler = _make_profiler()
    tl.testing = _make_testing()
    tl.tvm = tvm
    tl.cdiv = _cdiv
    tl.next_power_of_2 = _next_power_of_2
    tl.math = _stand_in("tilelang.math", "Kiln's stand-in for tilelang.math: host helpers.",
                        cdiv=_cdiv, next_power_of_2=_next_power_of_2)
    for name in ("disable_cache", "enable_cache", "clear_cache", "set_log_level"):
        setattr(tl, name, lambda *a, **k: None)
    tl.__kiln_shim__ = True
    tl.__getattr__ = _placeholder_getattr("tilelang")
    return tl


def install_tilelang_shim(force=False):
    """Makes ``import tilelang`` and ``import tilelang.language as T`` work without
    TileLang. Returns True when the shim is (now) installed, False when the real
    TileLang is importable and ``force`` is false (then nothing changes)."""
    current = sys.modules.get("tilelang")
    if current is not None and getattr(current, "__kiln_shim__", False):
        return True
    if not force and (current is not None or importlib.util.find_spec("tilelang") is not None):
        return False
    from .autotune import autotune  # late: these import this module's helpers
    from .jit import jit
    autotuner = _make_autotuner(autotune)
    tvm = sys.modules.get("tvm")
    if tvm is None and importlib.util.find_spec("tvm") is None:
        tvm = sys.modules["tvm"] = _make_tvm()  # `from tvm import DataType` in kernel files
    tl = _make_tilelang(jit, autotuner, tvm)
    sys.modules["tilelang"] = tl
    sys.modules["tilelang.language"] = language
    sys.modules["tilelang.autotuner"] = autotuner
    for sub in ("profiler", "testing", "math"):
        sys.modules[f"tilelang.{sub}"] = getattr(tl, sub)
    return True
