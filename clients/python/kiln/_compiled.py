"""TileLang's host API for a compiled kernel, which TileLang's examples use in their own
main() functions, on top of @kiln.jit:

    kernel = matmul.compile(M=1024, N=1024, K=1024, block_M=128, ...)   # jit form
    kernel = matmul(1024, 1024, 1024, 128, ...)                         # factory form
    c = kernel(a, b)
    kernel.get_kernel_source()
    profiler = kernel.get_profiler(tensor_supply_type=TensorSupplyType.Normal)
    profiler.assert_allclose(ref_program, rtol=1e-2, atol=1e-2)
    latency_ms = profiler.do_bench()            # or do_bench(ref_program), do_bench(kernel)

A CompiledKernel is also the Artifact it was built from (its attributes pass through:
``key``, ``launch``, ``outcome``, ``file(kind)``, ...). Inputs the profiler makes come
from the launch metadata: every tensor parameter that is not an output, in the order
the kernel takes them, on the compiled target's device (torch tensors for CUDA, NumPy
arrays for the CPU target); outputs are allocated zero-filled by the launch and
returned. Timings are wall clock around synchronized runs (CUDA events under torch), in
milliseconds; TileLang's ``backend`` choices (event, cupti, ...) all time the same way.
"""
import enum
import time

from ._expr import evaluate
from .errors import BindingError

__all__ = ["CompiledKernel", "Profiler", "TensorSupplyType", "do_bench"]


class TensorSupplyType(enum.Enum):
    """How the profiler fills a kernel's inputs (TileLang's names): Integer (-2..2),
    Uniform ([-1, 1)), Normal and Randn (standard normal), Zero, One, and Auto (normal
    for floating types, Integer for integer types, like Integer for bool)."""
    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


class CompiledKernel:
    """A kernel compiled for fixed bindings and one target (module doc)."""

    def __init__(self, jit_kernel, bindings, compiled, target, call=((), {})):
        self.jit = jit_kernel
        self.bindings = dict(bindings)
        self._compiled = compiled
        self.artifact = compiled.artifact
        self.target = target
        self._call = call
        self._source = None
        # The parameters a use_best / autotune lookup filled (TileLang's
        # AutotuneResult.config); {} when the caller bound them all.
        self.config = {}

    def __getattr__(self, name):
        # Only reached for names the kernel does not have: the Artifact's.
        if name.startswith("__") or name in ("artifact", "jit", "config"):
            raise AttributeError(name)
        return getattr(self.artifact, name)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.bindings.items())
        return f"<kiln.CompiledKernel {self.jit.name}({args}) for {self.target}>"

    @property
    def kernel(self):
        """Itself (TileLang's AutotuneResult.kernel)."""
        return self

    @property
    def latency(self):
        """The tuned config's measured milliseconds (TileLang's AutotuneResult.latency),
        from the last kiln.autotune sweep of this kernel; None when none ran."""
        results = self.jit.autotune_results
        return results[-1].latency_us / 1000.0 if results else None

    @property
    def params(self):
        """The launch metadata's parameters (kiln.Param), in the kernel's order."""
        return self.artifact.launch.params

    def __call__(self, *args, **kwargs):
        """Runs the kernel on tensors: the jit form's tensor arguments (outputs are
        returned), or the factory form's prim_func parameters (outputs left off are
        allocated and returned). The bindings are the compiled ones; tensors must
        agree with them."""
        if self.jit.info.form == "factory":
            from .jit import Kernel
            return Kernel(self.jit, self.bindings, self._call)(*args, **kwargs)
        names = [p.name for p in self.jit.info.kernel_params]
        if len(args) > len(names):
            raise BindingError(f"{self.jit.name}: {len(args)} tensors for the kernel's "
                               f"{len(names)} tensor parameters ({', '.join(names)})")
        given = dict(self.bindings)
        given.update(zip(names, args))
        given.update(kwargs)
        return self.jit._call_jit((), given)

    def get_kernel_source(self):
        """The generated source (CUDA C++ or the CPU target's C++), compiled again with
        the source kept where the artifact has none."""
        if self._source is None:
            art = self.artifact
            if "source" not in art.kinds:
                art = self.jit.client.compile(source=self.jit.source, file_name=self.jit.file_name,
                                              entry=self.jit.name, bindings=self.bindings,
                                              target=self.target, options=self.jit.options or None,
                                              emit_source=True)
            self._source = art.file("source").decode("utf-8", "replace")
        return self._source

    def get_profiler(self, tensor_supply_type=TensorSupplyType.Auto):
        return Profiler(self, tensor_supply_type)


class Profiler:
    """TileLang's profiler for one compiled kernel (module doc)."""

    def __init__(self, kernel, tensor_supply_type=TensorSupplyType.Auto):
        self.kernel = kernel
        self.supply = _supply(tensor_supply_type)

    def _shape_symbols(self):
        sym = {}
        for k, v in self.kernel.bindings.items():
            if isinstance(v, int) and not isinstance(v, bool):
                sym[k] = v
        return sym

    def _input_params(self):
        return [p for p in self.kernel.params if not p.is_output and not p.is_scalar]

    def _make_inputs(self):
        sym = self._shape_symbols()
        out = []
        for p in self._input_params():
            try:
                shape = tuple(evaluate(d, sym) for d in p.shape)
            except (KeyError, ValueError) as e:
                raise BindingError(f"{self.kernel.jit.name}: the profiler cannot size input "
                                   f"{p.name} ({', '.join(p.shape)}): {e}") from None
            out.append((p.name, _random(shape, p.dtype, self.supply, self.kernel.target)))
        return out

    def _run(self, inputs):
        return self.kernel(**dict(inputs))

    def run_once(self, func=None):
        inputs = self._make_inputs()
        if func is None:
            return self._run(inputs)
        return func(*[t for _, t in inputs])

    def assert_allclose(self, reference_program, atol=1e-2, rtol=1e-2, max_mismatched_ratio=0.01):
        """Runs the kernel and ``reference_program`` on the same generated inputs and
        checks every output: at most ``max_mismatched_ratio`` of the elements outside
        atol + rtol * |reference| (NaN matches NaN). Raises AssertionError naming the
        output, the count and the first element that differs."""
        inputs = self._make_inputs()
        got = _as_list(self._run(inputs))
        ref = _as_list(reference_program(*[t for _, t in inputs]))
        if len(got) != len(ref):
            raise AssertionError(f"{self.kernel.jit.name}: the kernel returned {len(got)} "
                                 f"outputs, the reference {len(ref)}")
        for i, (g, r) in enumerate(zip(got, ref)):
            _compare(f"{self.kernel.jit.name} output {i}", g, r, atol, rtol, max_mismatched_ratio)

    def do_bench(self, func=None, warmup=25, rep=100, n_warmup=None, n_repeat=None,
                 input_tensors=None, backend="event", quantiles=None, return_mode="mean", **_):
        """Milliseconds per run of the kernel (``func`` None or the kernel itself), or of
        ``func`` called with the generated inputs; ``warmup`` and ``rep`` are time budgets
        in milliseconds (``n_warmup`` / ``n_repeat`` counts, where given)."""
        inputs = input_tensors if input_tensors is not None else self._make_inputs()
        if isinstance(inputs, (list, tuple)) and inputs and not isinstance(inputs[0], tuple):
            names = [p.name for p in self._input_params()]
            inputs = list(zip(names, inputs))
        if func is None or func is self.kernel:
            run = lambda: self._run(inputs)  # noqa: E731
        else:
            tensors = [t for _, t in inputs]
            run = lambda: func(*tensors)  # noqa: E731
        return _bench(run, self.kernel.target, warmup, rep, n_warmup, n_repeat, return_mode)


def do_bench(fn, warmup=25, rep=100, n_warmup=None, n_repeat=None, backend="event",
             quantiles=None, return_mode="mean", **_):
    """TileLang's tilelang.profiler.do_bench: milliseconds per call of ``fn()`` (CUDA work
    synchronized when torch is loaded with CUDA)."""
    return _bench(fn, None, warmup, rep, n_warmup, n_repeat, return_mode)


# -- helpers --

def _supply(t):
    if isinstance(t, TensorSupplyType):
        return t
    name = getattr(t, "name", str(t)).rsplit(".", 1)[-1]
    try:
        return TensorSupplyType[name]
    except KeyError:
        raise ValueError(f"unknown tensor_supply_type {t!r}") from None


def _cuda_target(target):
    return target is not None and str(target).startswith("cuda")


_RNG = []


def _rng():
    import numpy as np
    if not _RNG:
        _RNG.append(np.random.default_rng(0))
    return _RNG[0]


def _random(shape, dtype, supply, target):
    import numpy as np
    rng = _rng()
    integer = dtype.startswith(("int", "uint")) or dtype == "bool"
    kind = supply
    if kind == TensorSupplyType.Auto:
        kind = TensorSupplyType.Integer if integer else TensorSupplyType.Normal
    if kind == TensorSupplyType.Zero:
        data = np.zeros(shape, np.float32)
    elif kind == TensorSupplyType.One:
        data = np.ones(shape, np.float32)
    elif kind == TensorSupplyType.Integer:
        data = rng.integers(-2, 3, size=shape).astype(np.float32)
        if dtype == "bool":
            data = data > 0
        elif dtype.startswith("uint"):
            data = np.abs(data)
    elif kind == TensorSupplyType.Uniform:
        data = rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
    else:
        data = rng.standard_normal(size=shape).astype(np.float32)
    if _cuda_target(target):
        import torch
        from ._tensors import _TORCH_NAMES
        tdt = getattr(torch, _TORCH_NAMES.get(dtype, dtype))
        return torch.from_numpy(np.ascontiguousarray(data)).to(device="cuda", dtype=tdt)
    from ._tensors import aligned_zeros
    out = aligned_zeros(shape, dtype)
    out[...] = data.astype(out.dtype) if dtype != "bool" else data
    return out


def _as_list(x):
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _numpy(x):
    import numpy as np
    if type(x).__module__.split(".", 1)[0] == "torch":
        return x.detach().float().cpu().numpy().astype(np.float64)
    if hasattr(x, "get") and type(x).__module__.split(".", 1)[0] == "cupy":
        x = x.get()
    return np.asarray(x, dtype=np.float64)


def _compare(what, got, ref, atol, rtol, max_ratio):
    import numpy as np
    g, r = _numpy(got), _numpy(ref)
    if g.shape != r.shape:
        raise AssertionError(f"{what}: shape {g.shape}, the reference's is {r.shape}")
    with np.errstate(invalid="ignore"):
        bad = ~((np.abs(g - r) <= atol + rtol * np.abs(r)) | (np.isnan(g) & np.isnan(r)))
    count = int(bad.sum())
    if count > max_ratio * max(g.size, 1):
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {count} of {g.size} elements differ beyond atol {atol} "
                             f"+ rtol {rtol}; first at {first}: {g[first]!r}, expected "
                             f"{r[first]!r}")


def _sync(cuda):
    if cuda:
        import torch
        torch.cuda.synchronize()


def _bench(run, target, warmup, rep, n_warmup, n_repeat, return_mode):
    import sys
    torch = sys.modules.get("torch")
    cuda = _cuda_target(target) or (target is None and torch is not None
                                    and torch.cuda.is_available())
    _sync(cuda)
    start = time.perf_counter()
    run()
    _sync(cuda)
    once_ms = max((time.perf_counter() - start) * 1e3, 1e-3)
    warm = n_warmup if n_warmup is not None else max(1, int(warmup / once_ms))
    reps = n_repeat if n_repeat is not None else max(1, int(rep / once_ms))
    warm, reps = min(warm, 1000), min(reps, 1000)
    for _ in range(warm):
        run()
    _sync(cuda)
    times = []
    for _ in range(reps):
        if cuda:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            run()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            run()
            times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    if return_mode == "min":
        return times[0]
    if return_mode == "max":
        return times[-1]
    if return_mode == "median":
        return times[len(times) // 2]
    return sum(times) / len(times)
