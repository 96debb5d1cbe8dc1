"""A stand-in for the `tilelang` package, so kernel files import without TileLang.

Kiln compiles a kernel from its source text on the server; the Python process only
needs the file to import: ``import tilelang``, ``import tilelang.language as T``,
dtype defaults such as ``dtype=T.float16`` and the ``@tilelang.jit`` decorator.
install_tilelang_shim() registers modules under those names (unless the real TileLang
is importable) in which ``tilelang.jit`` is kiln.jit, ``tilelang.autotune`` and
``tilelang.autotuner.autotune`` are kiln.autotune, dtypes are their names, and
everything else is a placeholder that explains itself when called: TileLang's ops run
only inside the kernel, which Kiln's server evaluates.
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
    T.__getattr__ = lambda name: _KernelOnly(f"T.{name}")  # PEP 562
    return T


language = _make_language()


def _make_autotuner(autotune):
    at = types.ModuleType("tilelang.autotuner")
    at.__doc__ = "Kiln's stand-in for tilelang.autotuner: autotune is kiln.autotune."
    at.autotune = autotune
    at.__getattr__ = lambda name: _KernelOnly(f"tilelang.autotuner.{name}")
    return at


def _make_tilelang(jit, autotuner):
    tl = types.ModuleType("tilelang")
    tl.__doc__ = ("Kiln's stand-in for tilelang (kiln/shim.py): tilelang.jit is kiln.jit, "
                  "tilelang.autotune is kiln.autotune.")
    tl.__path__ = []  # a package, so `import tilelang.language` works
    tl.jit = jit
    tl.autotune = autotuner.autotune
    tl.autotuner = autotuner
    tl.language = language
    tl.__kiln_shim__ = True
    tl.__getattr__ = lambda name: _KernelOnly(f"tilelang.{name}")
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
    sys.modules["tilelang"] = _make_tilelang(jit, autotuner)
    sys.modules["tilelang.language"] = language
    sys.modules["tilelang.autotuner"] = autotuner
    return True
