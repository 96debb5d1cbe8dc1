"""@kiln.jit: compile a TileLang kernel through kilnd from its source, and launch it.

Both forms of TileLang kernel are accepted (docs/examples.md):

* the jit form, ``@tilelang.jit def gemm(A, B, block_M, ...)`` with ``M, N, K =
  T.const(...)``, ``A: T.Tensor((M, K), dtype)`` and ``C = T.empty(...)`` returned:
  ``C = gemm(A, B, block_M=128, ...)``;
* the factory form, ``def add(M, N, block_M, ...)`` returning a ``@T.prim_func``:
  ``add(A, B, C, block_M=16, block_N=64)`` (shapes bound from the tensors; outputs
  left off the end are allocated, zero-filled, and returned), or TileLang's own
  ``kernel = add(77, 130, 16, 64); kernel(A, B, C)``.

The kernel's whole module source goes to the server (it parses the file, picks the
function by name, and reports problems as ``file:line:col`` of the real file).
Shapes and dtypes are bound from the call's tensors by matching the ``T.Tensor``
shape expressions; ``bind={...}`` on the decorator and keyword arguments bind the
rest. Compiled kernels are cached per process by (source, bindings, target); loaded
modules per process (and CUDA context). Launches go to the current CUDA stream.
"""
import copy
import functools
import hashlib
import inspect
import linecache
import textwrap
import threading

from . import _analysis, _tensors
from ._compiled import CompiledKernel, TensorSupplyType
from ._expr import evaluate
from ._launch import pack_scalar
from ._tensor_map import launch_encodings
from ._values import dtype_name
from .client import Client
from .errors import BindingError, LaunchError

__all__ = ["jit", "JitKernel", "Kernel", "set_default_client"]

# TileLang's jit options that mean nothing to Kiln (outputs are found from the
# launch metadata; code generation options go in `options`).
_TILELANG_OPTIONS = {"out_idx", "execution_backend", "verbose", "pass_configs", "debug_root_path",
                     "compile_flags"}

_default_client = None
_default_lock = threading.Lock()


def set_default_client(client):
    """The Client @kiln.jit kernels use when they were given none."""
    global _default_client
    _default_client = client


def _client():
    global _default_client
    with _default_lock:
        if _default_client is None:
            _default_client = Client()
        return _default_client


def _unwrap(obj):
    """The plain function under decorators (a real @tilelang.jit object, functools.wraps)."""
    for _ in range(8):
        if isinstance(obj, JitKernel):
            obj = obj.fn
        if inspect.isfunction(obj):
            return obj
        for attr in ("__wrapped__", "func", "fn", "_func", "function", "__func__"):
            inner = getattr(obj, attr, None)
            if inner is not None and inner is not obj:
                obj = inner
                break
        else:
            break
    if not inspect.isfunction(obj):
        raise TypeError(f"@kiln.jit needs a function, not {type(obj).__name__}")
    return obj


def _module_source(fn):
    """(source text, file name, line offset) of the module that defines ``fn``."""
    path = inspect.getsourcefile(fn) or fn.__code__.co_filename
    text = ""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        text = "".join(linecache.getlines(path))
    if text:
        return text, path, 0
    # Only the function is known (an interactive session): send it under the
    # imports every kernel file has.
    body = textwrap.dedent(inspect.getsource(fn))
    prelude = "import tilelang\nimport tilelang.language as T\n"
    return prelude + body, path, 2


class _Compiled:
    """One compiled kernel: the artifact, and its binary loaded in this process."""

    def __init__(self, artifact):
        self.artifact = artifact
        self.launch = artifact.launch
        self._cpu = None
        self._lock = threading.Lock()

    def cpu_module(self):
        with self._lock:
            if self._cpu is None:
                from ._launch_cpu import CpuModule
                self._cpu = CpuModule(self.artifact.file("so"),
                                      [k.kernel_symbol for k in self.launch.sequence()])
            return self._cpu


_cache = {}  # (source digest, entry, target, bindings, options) -> _Compiled
_cache_locks = {}
_cache_lock = threading.Lock()


def _freeze(bindings):
    return tuple(sorted((k, type(v).__name__, repr(v)) for k, v in bindings.items()))


class JitKernel:
    """A TileLang kernel function compiled through kilnd on call (see the module doc)."""

    def __init__(self, fn, *, target=None, bind=None, dynamic=(), client=None, server=None,
                 options=None, entry=None, use_best=False, tune_on_miss=False, tune=None,
                 device_model=None, **tilelang_options):
        unknown = set(tilelang_options) - _TILELANG_OPTIONS
        if unknown:
            raise TypeError(f"kiln.jit got unknown options {sorted(unknown)}")
        if (tune_on_miss or tune) and not use_best:
            raise TypeError("kiln.jit: tune_on_miss and tune= go with use_best=True")
        self.fn = _unwrap(fn)
        functools.update_wrapper(self, self.fn)
        self.name = entry or self.fn.__name__
        self.target = None if target in (None, "auto", "cuda") else target
        self.bind = dict(bind or {})
        self.dynamic = set(dynamic or ())
        self.options = dict(options or {})
        self._client = client if client is not None else (Client(server) if server else None)
        self.source, self.file_name, self._line_offset = _module_source(self.fn)
        self._digest = hashlib.sha256(self.source.encode()).hexdigest()
        self._info = None
        self._signature = inspect.signature(self.fn)
        # TileLang's out_idx: the prim_func parameters the call leaves off and gets back.
        out_idx = tilelang_options.get("out_idx")
        self.out_idx = None if out_idx is None else (
            [int(out_idx)] if isinstance(out_idx, int) else [int(i) for i in out_idx])
        # What fills unbound tile parameters: None (the caller binds them all), the
        # daemon's best configs (use_best) or a sweep (kiln.autotune); kiln/autotune.py.
        self._tuning = None
        if use_best:
            from .autotune import UseBest
            self._tuning = UseBest(tune_on_miss=tune_on_miss, tune=tune,
                                   device_model=device_model)

    # -- what the source says --

    @property
    def info(self):
        if self._info is None:
            line = self.fn.__code__.co_firstlineno + self._line_offset
            try:
                self._info = _analysis.analyze(self.source, self.fn.__name__, line)
            except _analysis.AnalysisError as e:
                raise BindingError(str(e)) from None
        return self._info

    @property
    def client(self):
        return self._client if self._client is not None else _client()

    def __repr__(self):
        return f"<kiln.jit {self.name} ({self.info.form} form) from {self.file_name}>"

    # -- compiling --

    def compile(self, target=None, bindings=None, **more):
        """Compiles (or takes from the process cache) for ``target`` (default: the
        decorator's, else this process's CUDA device when torch sees one, else "cpu")
        with these bindings, TileLang's ``kernel = fn.compile(M=..., block_M=...)``.
        Returns a CompiledKernel (kiln/_compiled.py): callable on tensors, with TileLang's
        get_kernel_source() and get_profiler(), and the Artifact's attributes. Under
        use_best / kiln.autotune, unbound tile parameters are filled (looked up or
        tuned) first."""
        target = target or self.target or _default_target()
        b = dict(self.bind)
        b.update(bindings or {})
        b.update(more)
        given = set(b)
        if self._tuning is not None:
            b = self._tuning.resolve(self, target, b, ((), dict(bindings or {}, **more)))
        b = {k: (dtype_name(v) if _is_dtype_object(v) else v) for k, v in b.items()}
        kernel = CompiledKernel(self, b, self._compiled(target, b), target,
                                ((), dict(bindings or {}, **more)))
        kernel.config = {k: v for k, v in b.items() if k not in given}
        return kernel

    def _with_tuning(self, tuning):
        """A copy of this kernel whose unbound tile parameters ``tuning`` fills."""
        other = copy.copy(self)
        other._tuning = tuning
        return other

    @property
    def autotune_results(self):
        """The AutotuneResult of every sweep kiln.autotune ran for this kernel, oldest
        first ([] for a kernel without autotune)."""
        return list(getattr(self._tuning, "results", ()))

    def _compiled(self, target, bindings):
        key = (self._digest, self.name, target, _freeze(bindings), _freeze(self.options))
        hit = _cache.get(key)
        if hit is not None:
            return hit
        with _cache_lock:
            lock = _cache_locks.setdefault(key, threading.Lock())
        with lock:
            hit = _cache.get(key)
            if hit is None:
                art = self.client.compile(source=self.source, file_name=self.file_name,
                                          entry=self.name, bindings=bindings, target=target,
                                          options=self.options or None)
                hit = _cache[key] = _Compiled(art)
        return hit

    # -- calling --

    def __call__(self, *args, **kwargs):
        info = self.info
        if info.form == "factory":
            if not any(_tensors.is_tensor(a) for a in list(args) + list(kwargs.values())):
                # TileLang's way: the factory's arguments now, the tensors later.
                try:
                    bind = (self._signature.bind if self._tuning is None
                            else self._signature.bind_partial)  # tile parameters come later
                    bound = bind(*args, **kwargs)
                except TypeError as e:
                    raise BindingError(f"{self.name}(): {e}") from None
                b = dict(self.bind)
                b.update(bound.arguments)
                return Kernel(self, b, (args, kwargs))
            return self._call_factory(args, kwargs)
        return self._call_jit(args, kwargs)

    def _call_factory(self, args, kwargs):
        info = self.info
        kparams = info.kernel_params
        names = [p.name if isinstance(p, _analysis.TensorSpec) else p[1] for p in kparams]
        if len(args) > len(names):
            raise BindingError(f"{self.name}(): {len(args)} positional arguments for the "
                               f"kernel's {len(names)} parameters ({', '.join(names)})")
        provided = dict(zip(names, args))
        user = {}
        for k, v in kwargs.items():
            if k in names:
                provided[k] = v
            elif k in info.params:
                user[k] = v
            else:
                raise BindingError(f"{self.name}() has no parameter '{k}' (factory: "
                                   f"{', '.join(info.params)}; kernel: {', '.join(names)})")
        b = dict(self.bind)
        b.update(user)
        return self._run(b, provided, (args, kwargs))

    def _call_jit(self, args, kwargs):
        info = self.info
        tensor_names = {t.name for t in info.kernel_params}
        output_names = {t.name for t in info.outputs}
        if len(args) > len(info.params):
            raise BindingError(f"{self.name}() takes {len(info.params)} positional arguments "
                               f"({', '.join(info.params)}), got {len(args)}")
        provided, user = {}, {}
        for name, v in list(zip(info.params, args)) + list(kwargs.items()):
            if name in tensor_names or (name in output_names and _tensors.is_tensor(v)):
                provided[name] = v
            elif name in info.params or name in info.consts:
                user[name] = v
            else:
                raise BindingError(f"{self.name}() has no parameter or T.const '{name}'")
        b = dict(self.bind)
        b.update(user)
        return self._run(b, provided, (args, kwargs))

    def _specs(self):
        info = self.info
        specs = {p.name: p for p in info.kernel_params if isinstance(p, _analysis.TensorSpec)}
        for o in info.outputs:
            specs.setdefault(o.name, o)
        return specs

    def _infer(self, bindings, views, check=True):
        """Binds shape symbols and dtype parameters from the tensors, checking them
        against what the caller bound; returns the bindings to send (``check``: raise
        for parameters nothing binds)."""
        b = dict(bindings)
        origin = {k: "given" for k in b}
        specs = self._specs()
        for name, v in views.items():
            spec = specs.get(name)
            if spec is None:
                continue
            if spec.dims is not None:
                if len(spec.dims) != len(v.shape):
                    raise BindingError(
                        f"{self.name}(): {name} has {len(v.shape)} dimensions {v.shape}, the "
                        f"kernel declares {len(spec.dims)} "
                        f"({', '.join(str(d.value) for d in spec.dims)})")
                for i, d in enumerate(spec.dims):
                    got = v.shape[i]
                    if d.kind == "int" and d.value != got:
                        raise BindingError(f"{self.name}(): {name}.shape[{i}] is {got}, the kernel "
                                           f"declares {d.value}")
                    if d.kind != "sym" or d.value in self.dynamic:
                        continue
                    if d.value in b:
                        if _as_int(b[d.value]) != got:
                            raise BindingError(
                                f"{self.name}(): {name}.shape[{i}] is {got} but {d.value} is "
                                f"{b[d.value]} ({origin[d.value]})")
                    else:
                        b[d.value], origin[d.value] = got, f"from {name}.shape[{i}]"
            if spec.dtype is not None:
                kind, what = spec.dtype
                if kind == "name" and what != v.dtype:
                    raise BindingError(f"{self.name}(): {name} is {v.dtype}, the kernel declares "
                                       f"{what}")
                if kind == "param":
                    if what in b:
                        if dtype_name(b[what]) != v.dtype:
                            raise BindingError(f"{self.name}(): {name} is {v.dtype} but {what} "
                                               f"is {dtype_name(b[what]) or b[what]} "
                                               f"({origin[what]})")
                    else:
                        b[what], origin[what] = v.dtype, f"from {name}.dtype"
        if check:
            self._check_bound(b)
        return {k: (dtype_name(v) if _is_dtype_object(v) else v) for k, v in b.items()}

    def unbound_parameters(self, bindings, with_defaults=False):
        """The factory/jit parameters (not tensors) that ``bindings`` leaves unbound;
        only those without a default unless ``with_defaults``."""
        specs = self._specs()
        return [p.name for p in self._signature.parameters.values()
                if (with_defaults or p.default is inspect.Parameter.empty)
                and p.name not in bindings and p.name not in specs
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]

    def _check_bound(self, b, parameters=True):
        # Parameters nothing bound: the server would refuse them; say which here.
        missing = self.unbound_parameters(b) if parameters else []
        missing += [c for c in self.info.consts if c not in b and c not in self.dynamic]
        if missing:
            raise BindingError(f"{self.name}(): nothing binds {', '.join(missing)}; no tensor "
                               "argument has it in its shape: pass it as a keyword argument or "
                               "in kiln.jit(bind={...})")

    def _target_for(self, views):
        devices = {v.device for v in views.values()}
        if len(devices) > 1:
            raise BindingError(f"{self.name}(): tensors on different devices: "
                               + ", ".join(f"{n} on {_dev_text(v.device)}" for n, v in views.items()))
        dev = devices.pop() if devices else "cpu"
        if dev == "cpu":
            if self.target not in (None, "cpu"):
                raise BindingError(f"{self.name}(): target {self.target} needs CUDA tensors; "
                                   "these are host memory")
            return "cpu", dev
        if self.target is not None and not self.target.startswith("cuda"):
            raise BindingError(f"{self.name}(): CUDA tensors for target {self.target}")
        if self.target is not None and self.target.startswith("cuda:"):
            return self.target, dev
        from . import _launch_cuda
        major, minor = _launch_cuda.capability(dev[1] or 0)
        return f"cuda:sm_{major}{minor}", dev

    def _run(self, bindings, provided, call=((), {})):
        views = {}
        for name, value in provided.items():
            if not (isinstance(value, (int, float, bool)) and not _tensors.is_tensor(value)):
                v = _tensors.view(value)
                if v is None:
                    raise BindingError(f"{self.name}(): {name} is a {type(value).__name__}, not a "
                                       "tensor (NumPy, torch or cupy)")
                views[name] = v
        target, device = self._target_for(views)
        b = self._infer(bindings, views, check=self._tuning is None)
        if self._tuning is not None:
            self._check_bound(b, parameters=False)  # shapes are never tuned
            b = self._tuning.resolve(self, target, b, call)
            self._check_bound(b)
        compiled = self._compiled(target, b)
        return self._launch(compiled, target, device, provided, views)

    def _launch(self, compiled, target, device, provided, views):
        lp = compiled.launch
        # The dynamic symbols' values, read off the tensors whose shapes name them.
        sym = {}
        for p in lp.params:
            v = views.get(p.name)
            if v is None or p.is_scalar:
                continue
            if len(p.shape) != len(v.shape):
                raise BindingError(f"{self.name}(): {p.name} has {len(v.shape)} dimensions, the "
                                   f"compiled kernel takes {len(p.shape)} ({', '.join(p.shape)})")
            for i, d in enumerate(p.shape):
                if d in lp.symbols:
                    if sym.setdefault(d, v.shape[i]) != v.shape[i]:
                        raise BindingError(f"{self.name}(): {p.name}.shape[{i}] is {v.shape[i]} "
                                           f"but {d} is {sym[d]} from another tensor")
        missing = [s for s in lp.symbols if s not in sym]
        if missing:
            raise BindingError(f"{self.name}(): no tensor argument gives the dynamic "
                               f"symbol(s) {', '.join(missing)}")
        ref = next(iter(views.values()), None)
        values, outputs, allocated = [], set(), []
        for i, p in enumerate(lp.params):
            if p.is_scalar:
                if p.name not in provided:
                    raise BindingError(f"{self.name}(): no value for the scalar {p.name}")
                values.append(pack_scalar(provided[p.name], p.dtype))
                continue
            shape = tuple(evaluate(d, sym) for d in p.shape)
            v = views.get(p.name)
            if v is None:
                if not p.is_output:
                    raise BindingError(f"{self.name}(): the input tensor {p.name} is missing")
                if ref is None:
                    if target != "cpu":
                        raise BindingError(f"{self.name}(): no tensor to allocate {p.name} like")
                    ref = _tensors.TensorView(None, "numpy", "cpu", (), p.dtype, 0, True)
                obj = _tensors.zeros_like(ref, shape, p.dtype)
                v = _tensors.view(obj)
                allocated.append((p.name, obj))
            else:
                if v.dtype != p.dtype:
                    raise BindingError(f"{self.name}(): {p.name} is {v.dtype}, the compiled kernel "
                                       f"takes {p.dtype}")
                if tuple(v.shape) != shape:
                    raise BindingError(f"{self.name}(): {p.name} has shape {v.shape}, the compiled "
                                       f"kernel takes {shape}")
            if p.is_output:
                outputs.add(i)
            values.append(v)
        grids = []
        for k in lp.sequence():
            grid = tuple(evaluate(g, sym) for g in k.grid)
            if any(g <= 0 for g in grid):
                raise LaunchError(f"{self.name}(): empty grid {grid} ({k.kernel_symbol})")
            grids.append(grid)
        symbols = [sym[s] for s in lp.symbols]
        # Global workspaces (T.alloc_global): zero-filled, alive for this call only.
        spaces = []
        for w in lp.workspaces:
            if ref is None:
                if target != "cpu":
                    raise BindingError(f"{self.name}(): no tensor to allocate workspace "
                                       f"{w.name} like")
                ref = _tensors.TensorView(None, "numpy", "cpu", (), w.dtype, 0, True)
            spaces.append(_tensors.zeros_like(ref, tuple(evaluate(d, sym) for d in w.shape),
                                              w.dtype))
        space_ptrs = [_tensors.view(o).ptr for o in spaces]
        if target == "cpu":
            args = [x if isinstance(x, int) else x for x in values]
            if symbols:
                args += [s & 0xFFFFFFFF for s in symbols]
            compiled.cpu_module().launch(args, grids, outputs, space_ptrs)
        else:
            self._launch_cuda(compiled, device, values, symbols, grids, space_ptrs)
        del spaces  # after the launches: the stream orders any later reuse of the memory
        return self._results(allocated, provided)

    def _launch_cuda(self, compiled, device, values, symbols, grids, workspaces=()):
        from . import _launch_cuda
        lp = compiled.launch
        params, stream_view = [], None
        for p, x in zip(lp.params, values):
            if isinstance(x, int):
                params.append(x)
                continue
            if not x.contiguous:
                raise BindingError(f"{self.name}(): {p.name} (shape {x.shape}) is not "
                                   "contiguous; pass .contiguous() (Kiln kernels take row-major "
                                   "tensors)")
            if x.ptr % 16:
                raise BindingError(f"{self.name}(): {p.name} (shape {x.shape}) starts at an "
                                   "address that is not 16-byte aligned; pass a copy (.clone())")
            stream_view = stream_view or x
            params.append(x.ptr)
        stream = _launch_cuda.current_stream(stream_view) if stream_view else 0
        # Every kernel of the program in order on one stream (one for most programs).
        for k, grid in zip(lp.sequence(), grids):
            try:
                maps = launch_encodings(lp, values, k.tensor_maps)
            except (BindingError, LaunchError) as e:
                raise type(e)(f"{self.name}(): {e}") from None
            _launch_cuda.launch(compiled.artifact.key, lambda: compiled.artifact.file("cubin"),
                                k, device[1] or 0, (params, symbols), grid, stream, maps,
                                workspaces)

    def _results(self, allocated, provided):
        info = self.info
        if info.form == "jit":
            got = dict(allocated)
            outs = [got.get(o.name, provided.get(o.name)) for o in info.outputs]
            outs = [o for o in outs if o is not None] or [obj for _, obj in allocated]
        else:
            outs = [obj for _, obj in allocated]
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else tuple(outs)


class Kernel:
    """A factory-form kernel with its factory arguments bound (TileLang's
    ``kernel = matmul(M, N, K, ...)``); call it with the prim_func's tensors."""

    def __init__(self, jit_kernel, bindings, call=((), {})):
        self.jit = jit_kernel
        self.bindings = bindings
        self._call = call  # the factory call's own arguments (autotune's configs callable)

    def __call__(self, *args, **kwargs):
        info = self.jit.info
        names = [p.name if isinstance(p, _analysis.TensorSpec) else p[1]
                 for p in info.kernel_params]
        if self.jit.out_idx and len(args) < len(names):
            # out_idx=[-1] (TileLang): positional tensors fill the other parameters;
            # those are allocated by the launch and returned.
            outs = {i % len(names) for i in self.jit.out_idx if -len(names) <= i < len(names)}
            names = [n for i, n in enumerate(names) if i not in outs]
        if len(args) > len(names):
            raise BindingError(f"{self.jit.name}: {len(args)} arguments for the kernel's "
                               f"{len(names)} parameters ({', '.join(names)})")
        provided = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise BindingError(f"{self.jit.name}: the kernel has no parameter '{k}'")
            provided[k] = v
        return self.jit._run(self.bindings, provided, self._call)

    def compile(self, target=None):
        """This kernel compiled for ``target`` (JitKernel.compile's default): a
        CompiledKernel."""
        target = target or self.jit.target or _default_target()
        b = self.bindings
        if self.jit._tuning is not None:
            b = self.jit._tuning.resolve(self.jit, target, b, self._call)
        kernel = CompiledKernel(self.jit, b, self.jit._compiled(target, b), target, self._call)
        kernel.config = {k: v for k, v in b.items() if k not in self.bindings}
        return kernel

    def get_profiler(self, tensor_supply_type=TensorSupplyType.Auto):
        """TileLang's profiler (kiln/_compiled.py) of this kernel compiled for the
        default target."""
        return self.compile().get_profiler(tensor_supply_type)

    def get_kernel_source(self):
        return self.compile().get_kernel_source()

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.bindings.items())
        return f"<kiln.Kernel {self.jit.name}({args})>"


def jit(fn=None, *, target=None, bind=None, dynamic=(), client=None, server=None, options=None,
        entry=None, use_best=False, tune_on_miss=False, tune=None, device_model=None,
        **tilelang_options):
    """Decorates a TileLang kernel function (factory or jit form) so calling it compiles
    through kilnd and launches. ``target``: None/"auto" (from the tensors' device: "cpu"
    for host memory, "cuda:sm_XY" of the GPU), or a target string; ``bind``: bindings
    applied under the call's; ``dynamic``: T.const symbols left unbound (one binary
    for every value; passed at launch); ``client``/``server``: where to compile;
    ``options``: CompileOptions fields (toolchain, opt_level, fast_math, ...).

    ``use_best=True`` fills the tile parameters a call leaves unbound from kilnd's best
    config for the call's shapes, target and device (``device_model``, default: the
    daemon's device for the target), looked up once per process and shape; on a miss
    ``tune_on_miss=True`` tunes first (``tune``: Client.tune arguments such as
    strategy, max_candidates, space, warmup, repeats), else the parameters' defaults
    are used, or a BindingError names the parameters that have none."""
    def wrap(f):
        return JitKernel(f, target=target, bind=bind, dynamic=dynamic, client=client,
                         server=server, options=options, entry=entry, use_best=use_best,
                         tune_on_miss=tune_on_miss, tune=tune, device_model=device_model,
                         **tilelang_options)
    return wrap if fn is None else wrap(fn)


def _default_target():
    """Where a compile without a target builds for: the current CUDA device of an imported
    torch; without torch, CUDA device 0 where this machine has an NVIDIA GPU (the kernel
    files' own main() functions compile first and make their CUDA tensors after); else
    "cpu"."""
    import os
    import sys
    torch = sys.modules.get("torch")
    try:
        if torch is not None:
            if not torch.cuda.is_available():
                return "cpu"
            ordinal = torch.cuda.current_device()
        elif os.path.exists("/dev/nvidiactl"):
            ordinal = 0
        else:
            return "cpu"
        from . import _launch_cuda
        major, minor = _launch_cuda.capability(ordinal)
        return f"cuda:sm_{major}{minor}"
    except Exception:  # noqa: BLE001 (a broken CUDA setup compiles for the CPU)
        return "cpu"


def _as_int(v):
    try:
        return int(v)
    except (TypeError, ValueError):
        return v


def _is_dtype_object(v):
    return not isinstance(v, (str, int, float, bool)) and dtype_name(v) is not None


def _dev_text(dev):
    return "cpu" if dev == "cpu" else f"cuda:{dev[1]}"
