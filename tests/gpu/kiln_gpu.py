"""Shared helpers of the GPU scripts (tests/gpu/run_examples.py, bench/gpu_kernels.py).

Compiles a tile program with `kiln-opt` (source -> cubin through NVRTC, plus the launch
metadata as JSON), launches the cubin with CuPy's driver bindings on torch tensors, and
loads an example's NumPy `ref_program` with TileLang stubbed out (nothing of TileLang is
needed). Needs torch and cupy; runs on the GPU machine.
"""

import importlib.util
import inspect
import json
import os
import subprocess
import sys
import tempfile
import types

import numpy as np

def torch_dtype(name):
    import torch

    return {
        "float16": torch.float16,
        "bfloat16": torch.bfloat16,
        "float32": torch.float32,
        "float64": torch.float64,
        "int8": torch.int8,
        "int32": torch.int32,
        "int64": torch.int64,
        "uint8": torch.uint8,
        "bool": torch.bool,
    }[name]


def bind_args(binds):
    out = []
    for k, v in binds.items():
        out += ["--bind", f"{k}={v}"]
    return out


def read_bind_line(path, kind):
    """The `# kiln: bind` or `# kiln: test-bind` line of an example as a dict."""
    tag = f"# kiln: {kind} "
    with open(path) as f:
        for line in f:
            if line.startswith(tag):
                return dict(w.split("=", 1) for w in line[len(tag):].split())
    raise ValueError(f"{path} has no '{tag.strip()}' line")


class Compiled:
    def __init__(self, cubin_path, launch, compile_s):
        self.cubin_path = cubin_path
        self.launch = launch
        self.compile_s = compile_s
        self._fn = None

    def function(self):
        if self._fn is None:
            import cupy as cp

            module = cp.RawModule(path=self.cubin_path)
            fn = module.get_function(self.launch["symbol"])
            smem = self.launch["dynamic_smem_bytes"]
            if smem > 48 * 1024:
                fn.max_dynamic_shared_size_bytes = smem
            self._module = module
            self._fn = fn
        return self._fn

    def run(self, tensors, stream=None):
        """Launches once on torch tensors (in argument order)."""
        # Raw device pointers by value: works for every dtype (CuPy has no bfloat16).
        args = tuple(np.uint64(t.data_ptr()) if hasattr(t, "data_ptr") else np.int32(t) for t in tensors)
        grid = tuple(int(g) for g in self.launch["grid"])
        block = tuple(self.launch["block"])
        self.function()(grid, block, args, shared_mem=self.launch["dynamic_smem_bytes"])


def compile_program(kiln_opt, path, binds, arch="sm_90", workdir=None):
    workdir = workdir or tempfile.mkdtemp(prefix="kiln_gpu_")
    stem = os.path.splitext(os.path.basename(path))[0]
    tag = arch + "_" + "_".join(f"{k}{v}" for k, v in sorted(binds.items()))[:120]
    cubin = os.path.join(workdir, f"{stem}_{tag}.cubin")
    launch = os.path.join(workdir, f"{stem}_{tag}.json")
    import time

    t0 = time.perf_counter()
    r = subprocess.run(
        [kiln_opt, path, *bind_args(binds), "--emit=cubin", "--target", f"cuda:{arch}", "-o", cubin,
         "--launch-json", launch, *(["--gemm=wgmma"] if arch == "sm_90a" else [])],
        capture_output=True,
        text=True,
    )
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"kiln-opt failed for {path} {binds}:\n{r.stderr}")
    with open(launch) as f:
        meta = json.load(f)
    return Compiled(cubin, meta, dt)


class _Permissive:
    def __getattr__(self, name):
        return _Permissive()

    def __call__(self, *args, **kwargs):
        if args and callable(args[0]) and not kwargs:
            return args[0]
        return _Permissive()


def load_example_module(path):
    """Imports an example with `tilelang` stubbed, for its ref_program."""
    tl = types.ModuleType("tilelang")
    tl.__getattr__ = lambda name: _Permissive()
    tl.jit = lambda *a, **k: a[0] if a and callable(a[0]) else (lambda fn: fn)
    tll = types.ModuleType("tilelang.language")
    tll.__getattr__ = lambda name: _Permissive()
    tl.language = tll
    sys.modules["tilelang"] = tl
    sys.modules["tilelang.language"] = tll
    spec = importlib.util.spec_from_file_location("kiln_example_" + os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def num_inputs(mod):
    return len(inspect.signature(mod.ref_program).parameters)


def make_tensors(launch, n_inputs, seed=0):
    import torch

    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    out = []
    tensor_index = 0
    for a in launch["args"]:
        if a["scalar"]:
            raise ValueError(f"scalar argument {a['name']} needs a value")
        shape = [int(s) for s in a["shape"]]
        dt = torch_dtype(a["dtype"])
        if tensor_index < n_inputs:
            if dt.is_floating_point:
                t = (torch.rand(shape, generator=g, device="cuda", dtype=torch.float32) * 2 - 1).to(dt)
            else:
                t = torch.randint(-8, 8, shape, generator=g, device="cuda").to(dt)
        else:
            t = torch.zeros(shape, device="cuda", dtype=dt)
        out.append(t)
        tensor_index += 1
    return out


def time_kernel(fn, warmup=5, reps=30, flush_l2=True):
    """Median and min milliseconds of fn() over reps, CUDA events, L2 flushed between reps."""
    import torch

    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda") if flush_l2 else None
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        if flush is not None:
            flush.zero_()
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2], times[0]
