"""Kiln's Python client: compile, tune and benchmark TileLang tile programs on a kilnd,
and launch the results on NumPy arrays (CPU target) or torch/cupy tensors (CUDA).

    import kiln
    client = kiln.Client()                       # $KILN_SERVER or 127.0.0.1:7070
    art = client.compile("examples/gemm/gemm.py", bindings={...}, target="cuda:sm_90")

    @kiln.jit
    def gemm(A, B, block_M, block_N, block_K, ...): ...   # a TileLang kernel
    C = gemm(A, B, block_M=128, block_N=128, block_K=32)

    @kiln.autotune(configs=[{"block_M": 64, ...}, ...])   # tuned by kilnd per shape
    @kiln.jit
    def gemm2(...): ...

docs/python.md has the whole API.
"""
from . import events
from .autotune import AutotuneResult, autotune
from .client import (DEFAULT_ADDRESS, Artifact, BenchmarkResult, BestConfig, Client, Device,
                     Job, LaunchInfo, Measurement, Param, TensorMap, TuneResult,
                     program_source)
from .errors import (Aborted, AlreadyExists, BindingError, Cancelled, CompileError, DataLoss,
                     DeadlineExceeded, Diagnostic, FailedPrecondition, Internal, InvalidArgument,
                     KilnError, LaunchError, NotFound, OutOfRange, PermissionDenied,
                     ResourceExhausted, TuneError, Unauthenticated, Unavailable, Unimplemented)
from .events import (CandidateCompiled, CandidateFailed, CandidateMeasured, NewBest,
                     TuneEvent, TuneFinished, TuneStarted)
from ._compiled import CompiledKernel, Profiler, TensorSupplyType
from .jit import JitKernel, Kernel, jit, set_default_client
from .shim import install_tilelang_shim

__version__ = "0.1.0"

__all__ = [
    "Client", "Artifact", "LaunchInfo", "Param", "TuneResult", "Measurement", "BestConfig",
    "BenchmarkResult", "Device", "Job", "DEFAULT_ADDRESS", "program_source", "jit", "JitKernel",
    "Kernel", "set_default_client", "install_tilelang_shim", "autotune", "AutotuneResult",
    "events", "TuneEvent", "TuneStarted", "CandidateCompiled", "CandidateMeasured",
    "CandidateFailed", "NewBest", "TuneFinished", "TuneError", "KilnError", "CompileError",
    "InvalidArgument",
    "NotFound", "AlreadyExists", "FailedPrecondition", "ResourceExhausted", "Aborted",
    "DeadlineExceeded", "Unavailable", "Unauthenticated", "PermissionDenied", "Cancelled",
    "DataLoss", "Internal", "Unimplemented", "OutOfRange", "LaunchError", "BindingError",
    "Diagnostic", "TensorMap", "CompiledKernel", "Profiler", "TensorSupplyType",
]
