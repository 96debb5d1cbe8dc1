"""kiln.Client: compile, fetch, tune, look up and benchmark tile programs on a kilnd.

A Client owns one gRPC channel and is safe to share between threads (grpcio's
channels and stubs are). Every failed call raises a typed kiln error
(kiln/errors.py); nothing is retried unless ``retries`` asks for it, and then
only UNAVAILABLE answers of calls that change nothing on a second try.

With a client cache directory (``cache_dir=``, default ``$KILN_CLIENT_CACHE``) compiled
artifacts are kept on disk in the C++ client's layout (kiln/_local_cache.py) and a
repeated compile is answered from the disk, without the daemon.
"""
import dataclasses
import hashlib
import inspect
import os
import threading
import pathlib
import time

import grpc

from . import errors
from ._local_cache import KIND_FILES, LocalCache, is_key, memo_id
from ._proto.v1 import service_pb2 as pb
from .events import ProgressTracker
from ._stub import KilnStub
from ._values import DTYPE_NAMES, fill_map, to_binding, to_dict

__all__ = ["Client", "Artifact", "LaunchInfo", "Param", "TuneResult", "Measurement",
           "BestConfig", "BenchmarkResult", "Device", "Job", "DEFAULT_ADDRESS"]

DEFAULT_ADDRESS = "127.0.0.1:7070"
_MAX_MESSAGE = 64 << 20

_OUTCOMES = {pb.CACHE_OUTCOME_HIT: "hit", pb.CACHE_OUTCOME_MISS: "miss",
             pb.CACHE_OUTCOME_JOINED: "joined"}
_STRATEGIES = {"roller": pb.TUNE_STRATEGY_ROLLER, "grid": pb.TUNE_STRATEGY_EXHAUSTIVE,
               "exhaustive": pb.TUNE_STRATEGY_EXHAUSTIVE, "random": pb.TUNE_STRATEGY_RANDOM}
_KINDS = {"cubin": pb.ARTIFACT_KIND_CUBIN, "ptx": pb.ARTIFACT_KIND_PTX,
          "hsaco": pb.ARTIFACT_KIND_HSACO, "so": pb.ARTIFACT_KIND_SHARED_OBJECT,
          "shared_object": pb.ARTIFACT_KIND_SHARED_OBJECT, "source": pb.ARTIFACT_KIND_SOURCE,
          "ir": pb.ARTIFACT_KIND_IR_TEXT, "ir_text": pb.ARTIFACT_KIND_IR_TEXT}
_KIND_NAMES = {v: k for k, v in _KINDS.items() if k not in ("shared_object", "exhaustive",
                                                               "ir_text")}
_STATUS = {v.number: v.name[len("STATUS_"):].lower()
           for v in pb.Measurement.Status.DESCRIPTOR.values}
_JOB_STATES = {v.number: v.name[len("JOB_STATE_"):].lower()
               for v in pb.JobState.DESCRIPTOR.values}
_JOB_KINDS = {v.number: v.name[len("JOB_KIND_"):].lower() for v in pb.JobKind.DESCRIPTOR.values}
_VERDICTS = {v.number: v.name[len("VERDICT_"):].lower()
             for v in pb.BenchmarkResponse.Verdict.DESCRIPTOR.values}


def _read_maybe_path(value):
    if value is None or isinstance(value, bytes):
        return value
    return pathlib.Path(value).read_bytes()


def program_source(program=None, *, source=None, path=None, file_name=None, entry=None,
                   bindings=None, dynamic=None):
    """A ProgramSource message. ``program`` is a path (str or os.PathLike) or, when it
    holds a newline, the source text itself; ``source``/``path`` say which explicitly.
    Text that starts with ``program `` is textual IR, anything else TileLang source.
    ``dynamic`` names integer parameters (or T.const symbols) to compile as dynamic
    shape symbols, whose values the kernel takes at launch."""
    if sum(x is not None for x in (program, source, path)) != 1:
        raise TypeError("give the program once: as a path or as source text")
    if program is not None:
        if isinstance(program, os.PathLike) or (isinstance(program, str) and "\n" not in program):
            path = program
        elif isinstance(program, str):
            source = program
        else:
            raise TypeError(f"program must be a path or source text, not {type(program).__name__}")
    if path is not None:
        try:
            source = pathlib.Path(path).read_text()
        except OSError as e:
            raise errors.InvalidArgument(f"cannot read '{path}': {e.strerror or e}") from None
        file_name = file_name or os.fspath(path)
    msg = pb.ProgramSource()
    if source.lstrip().startswith("program "):
        msg.ir_text = source
    else:
        msg.tilelang_source = source
    msg.file_name = file_name or "<request>"
    if entry:
        msg.entry = entry
    fill_map(msg.bindings, bindings)
    if dynamic:
        if isinstance(dynamic, str):
            dynamic = [dynamic]
        msg.dynamic_params.extend(dynamic)
    return msg


# --- results ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Param:
    """One kernel parameter of the launch metadata."""
    name: str
    dtype: str
    is_scalar: bool
    is_output: bool
    shape: tuple  # of str: numbers ("128") or symbol names ("M")


@dataclasses.dataclass(frozen=True)
class TensorMap:
    """A CUtensorMap (Hopper TMA) the kernel takes after its symbols, for the tensor
    parameter ``param``: ``box`` elements per dimension (outermost first, like the
    shape) and the shared-memory swizzle in bytes (0, 32, 64 or 128)."""
    param: str
    box: tuple
    swizzle_bytes: int


@dataclasses.dataclass(frozen=True)
class KernelLaunch:
    """A further kernel of a program of several (several T.Kernel blocks): launched
    after the one before it, on the same stream, with the same arguments."""
    kernel_symbol: str
    grid: tuple
    block: tuple
    dynamic_shared_bytes: int
    tensor_maps: tuple = ()


@dataclasses.dataclass(frozen=True)
class Workspace:
    """A global workspace (T.alloc_global): the launch allocates it zero-filled for the
    kernel sequence and passes its address after the symbols."""
    name: str
    dtype: str
    shape: tuple  # of str, like Param.shape


def _dims(m):
    block = tuple(m.block) + (1,) * (3 - len(m.block))
    grid = tuple(m.grid) + ("1",) * (3 - len(m.grid))
    maps = tuple(TensorMap(t.param, tuple(t.box), t.swizzle_bytes) for t in m.tensor_maps)
    return grid, block, maps


@dataclasses.dataclass(frozen=True)
class LaunchInfo:
    """How to launch a compiled kernel: the symbol, the grid (expressions over the
    dynamic symbols), the block, dynamic shared memory, and the parameters; the kernel
    takes the params in order, then one int32 per symbol, then one address per
    ``workspaces`` entry, then (CUDA kernels that use TMA) one CUtensorMap per
    ``tensor_maps`` entry, which the launch encodes. A program of several kernels has
    ``next_kernels``, launched after this one in order (docs/design/multi-kernel.md)."""
    kernel_symbol: str
    grid: tuple
    block: tuple
    dynamic_shared_bytes: int
    params: tuple
    symbols: tuple
    tensor_maps: tuple = ()
    next_kernels: tuple = ()
    workspaces: tuple = ()

    def sequence(self):
        """Every kernel in launch order, the first from this object's own fields."""
        first = KernelLaunch(self.kernel_symbol, self.grid, self.block,
                             self.dynamic_shared_bytes, self.tensor_maps)
        return (first,) + tuple(self.next_kernels)

    @classmethod
    def from_proto(cls, m):
        params = tuple(Param(p.name, DTYPE_NAMES.get(p.dtype, "unknown"), p.is_scalar,
                             p.is_output, tuple(p.shape)) for p in m.params)
        grid, block, maps = _dims(m)
        nexts = tuple(KernelLaunch(k.kernel_symbol, *_dims(k)[:2], k.dynamic_shared_bytes,
                                   _dims(k)[2]) for k in m.next_kernels)
        spaces = tuple(Workspace(w.name, DTYPE_NAMES.get(w.dtype, "unknown"), tuple(w.shape))
                       for w in m.workspaces)
        return cls(m.kernel_symbol, grid, block, m.dynamic_shared_bytes, params,
                   tuple(m.symbols), maps, nexts, spaces)


class Artifact:
    """A compiled kernel: its cache key, how the request was served (``outcome`` is
    "hit", "miss" or "joined", or "local" when the client cache directory answered
    without the daemon), times, launch metadata, and its files, fetched on first use
    (``binary``, ``file(kind)``; from the client cache directory when it has them)."""

    def __init__(self, client, response, target, outcome=None):
        self._client = client
        self.response = response
        self.metadata = response.artifact
        self.key = response.artifact.key
        self.outcome = outcome or _OUTCOMES.get(response.outcome, "unknown")
        self.job_id = response.job_id
        self.target = response.artifact.target or target
        self.compile_ms = response.artifact.compile_seconds * 1000
        self.server_ms = response.server_seconds * 1000
        self.diagnostics = [errors.Diagnostic(d.file, d.line, d.col, d.message,
                                              pb.Diagnostic.Severity.Name(d.severity)
                                              [len("SEVERITY_"):].lower())
                            for d in response.diagnostics]
        self.launch = LaunchInfo.from_proto(response.artifact.launch)
        self._files = {}

    @property
    def cache_hit(self):
        return self.outcome == "hit"

    @property
    def kinds(self):
        """The file kinds the artifact has ("cubin", "so", "ptx", "source", "ir")."""
        return [_KIND_NAMES.get(f.kind, str(f.kind)) for f in self.metadata.files]

    @property
    def binary_kind(self):
        for kind in ("cubin", "hsaco", "so"):
            if kind in self.kinds:
                return kind
        raise errors.NotFound(f"artifact {self.key} has no binary (files: {self.kinds})")

    @property
    def binary(self):
        """The loadable binary: the cubin (CUDA), hsaco (ROCm) or shared object (CPU)."""
        return self.file(self.binary_kind)

    def file(self, kind):
        """The bytes of one file of the artifact, fetched once over GetArtifact."""
        if kind not in self._files:
            self._files.update(self._client.get_artifact(self.key, kinds=[kind]))
        return self._files[kind]

    def __repr__(self):
        return (f"<kiln.Artifact {self.key[:12]} {self.target} {self.outcome} "
                f"compile {self.compile_ms:.1f} ms>")


@dataclasses.dataclass(frozen=True)
class Measurement:
    config: dict
    status: str
    median_us: float
    mean_us: float
    stddev_us: float
    min_us: float
    max_us: float
    samples: int
    predicted_us: float
    max_abs_error: float
    key: str
    device_id: str
    device_model: str
    error: str

    @classmethod
    def from_proto(cls, m):
        return cls(to_dict(m.config), _STATUS.get(m.status, "unknown"), m.median_us, m.mean_us,
                   m.stddev_us, m.min_us, m.max_us, m.samples, m.predicted_us, m.max_abs_error,
                   m.key, m.device_id, m.device_model, m.error)


@dataclasses.dataclass(frozen=True)
class TuneResult:
    job_id: str
    best: object  # Measurement or None when no candidate was valid
    measurements: list
    best_artifact: object  # pb.ArtifactMetadata or None
    proto: object

    @property
    def config(self):
        """The best config (tunable name -> value); {} without a valid candidate."""
        return dict(self.best.config) if self.best else {}


@dataclasses.dataclass(frozen=True)
class BestConfig:
    config: dict
    measurement: object  # Measurement
    program_key: str


@dataclasses.dataclass(frozen=True)
class BenchmarkResult:
    artifact_key: str
    device_id: str
    device_model: str
    samples_us: list
    median_us: float
    mean_us: float
    stddev_us: float
    p10_us: float
    p90_us: float
    min_us: float
    max_us: float
    verdict: str  # "pass", "regression", "improvement", "no_baseline", "unspecified"
    baseline_median_us: float
    relative_change: float
    p_value: float

    @classmethod
    def from_proto(cls, r):
        lat = r.latency
        return cls(r.artifact_key, r.device_id, r.device_model, list(lat.samples_us),
                   lat.median_us, lat.mean_us, lat.stddev_us, lat.p10_us, lat.p90_us, lat.min_us,
                   lat.max_us, _VERDICTS.get(r.verdict, "unspecified"), r.baseline_median_us,
                   r.relative_change, r.p_value)


@dataclasses.dataclass(frozen=True)
class Device:
    id: str
    model: str
    arch: str
    sm_count: int
    memory_bytes: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    max_threads_per_block: int
    clock_mhz: int
    l2_bytes: int
    busy: bool
    worker_state: str

    @classmethod
    def from_proto(cls, d):
        return cls(*(getattr(d, f.name) for f in dataclasses.fields(cls)))


@dataclasses.dataclass(frozen=True)
class Job:
    id: str
    kind: str
    state: str
    key: str
    progress: float
    message: str
    created_unix_ms: int
    finished_unix_ms: int
    waiters: int
    proto: object

    @property
    def done(self):
        return self.state in ("succeeded", "failed", "cancelled")

    @classmethod
    def from_proto(cls, j):
        return cls(j.id, _JOB_KINDS.get(j.kind, "unknown"), _JOB_STATES.get(j.state, "unknown"),
                   j.key, j.progress, j.message, j.created_unix_ms, j.finished_unix_ms, j.waiters,
                   j)


def _takes_two_arguments(fn):
    """Whether ``fn`` is an old-style on_progress(progress, job_id) callback: two or
    more required positional parameters. Anything else gets typed events."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    positional = [p for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.default is p.empty]
    return len(positional) >= 2


# --- the client ------------------------------------------------------------------------


class Client:
    """A connection to one kilnd.

    address: "HOST:PORT" or "unix:PATH"; default $KILN_SERVER, else 127.0.0.1:7070.
    timeout: seconds each call may take (default 600; a call past it raises
        DeadlineExceeded and detaches from its job, which may go on for others).
    token: a bearer token (default $KILN_TOKEN), sent as "authorization: Bearer ...".
    root_certificates: PEM bytes or a file path: use TLS and trust these CAs
        (tls=True uses TLS with the system's roots). private_key/certificate_chain:
        a client certificate for mutual TLS.
    retries: extra attempts, with exponential backoff from 0.1 s, for calls answered
        UNAVAILABLE (Tune and async compiles are never repeated).
    cache_dir: the client cache directory (default $KILN_CLIENT_CACHE; "" turns it
        off): artifacts by key, verified by SHA-256, shared with the C++ client.
    compile_memo_ttl: seconds a compile's answer (request -> key) is reused from the
        cache directory without asking the daemon (default 600; 0: always ask).
    """

    def __init__(self, address=None, *, timeout=600.0, token=None, root_certificates=None,
                 tls=None, private_key=None, certificate_chain=None, retries=0,
                 channel_options=None, cache_dir=None, compile_memo_ttl=600):
        self.address = address or os.environ.get("KILN_SERVER") or DEFAULT_ADDRESS
        if cache_dir is None:
            cache_dir = os.environ.get("KILN_CLIENT_CACHE", "")
        self.cache = LocalCache(cache_dir) if cache_dir else None
        self.compile_memo_ttl = compile_memo_ttl
        # Counters of the client cache directory's work (for tests and tuning the TTL).
        self._stats_lock = threading.Lock()
        self.local_stats = {"compile_hits": 0, "artifact_hits": 0, "artifact_fetches": 0}
        self.timeout = timeout
        self.retries = retries
        token = token if token is not None else os.environ.get("KILN_TOKEN")
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        opts = [("grpc.max_receive_message_length", _MAX_MESSAGE),
                ("grpc.max_send_message_length", _MAX_MESSAGE)] + list(channel_options or [])
        use_tls = tls if tls is not None else any(
            x is not None for x in (root_certificates, private_key, certificate_chain))
        if use_tls:
            creds = grpc.ssl_channel_credentials(
                root_certificates=_read_maybe_path(root_certificates),
                private_key=_read_maybe_path(private_key),
                certificate_chain=_read_maybe_path(certificate_chain))
            self._channel = grpc.secure_channel(self.address, creds, options=opts)
        else:
            self._channel = grpc.insecure_channel(self.address, options=opts)
        self._stub = KilnStub(self._channel)

    # -- plumbing --

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<kiln.Client {self.address}>"

    def _count(self, name):
        with self._stats_lock:
            self.local_stats[name] += 1

    def _timeout(self, timeout):
        return self.timeout if timeout is None else timeout

    def _unary(self, method, request, timeout=None, retry=True):
        call = getattr(self._stub, method)
        attempts = 1 + (self.retries if retry else 0)
        for attempt in range(attempts):
            try:
                return call(request, timeout=self._timeout(timeout), metadata=self._metadata)
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.UNAVAILABLE and attempt + 1 < attempts:
                    time.sleep(0.1 * 2 ** attempt)
                    continue
                raise errors.error_from_rpc(e, method, self.address) from None

    def _stream(self, method, request, timeout=None):
        """Yields the responses of a server-streaming call, errors typed."""
        call = getattr(self._stub, method)
        try:
            for item in call(request, timeout=self._timeout(timeout), metadata=self._metadata):
                yield item
        except grpc.RpcError as e:
            raise errors.error_from_rpc(e, method, self.address) from None

    @staticmethod
    def _options(options, emit_source=False, emit_ptx=False, toolchain=None, opt_level=None,
                 fast_math=None, line_info=None, pass_options=None):
        o = pb.CompileOptions()
        if options is not None:
            if isinstance(options, pb.CompileOptions):
                o.CopyFrom(options)
            else:
                for k, v in dict(options).items():
                    if k == "pass_options":
                        o.pass_options.extend(v)
                    else:
                        setattr(o, k, v)
        if toolchain:
            o.toolchain = toolchain
        if opt_level is not None:
            o.opt_level = opt_level
        if fast_math is not None:
            o.fast_math = fast_math
        if line_info is not None:
            o.line_info = line_info
        if emit_source:
            o.emit_source = True
        if emit_ptx:
            o.emit_ptx = True
        if pass_options:
            o.pass_options.extend(pass_options)
        return o

    # -- Compile / GetArtifact --

    def compile(self, program=None, *, source=None, path=None, bindings=None, dynamic=None,
                target="cpu", entry=None, file_name=None, config=None, use_best_for_device=None,
                options=None, toolchain=None, opt_level=None, fast_math=None, emit_source=False,
                emit_ptx=False, line_info=None, pass_options=None, wait=True, timeout=None):
        """Compiles a program for ``target`` ("cpu", "cuda:sm_90", ...) or takes it from
        the cache. Returns an Artifact; raises CompileError (with ``diagnostics``) for a
        program that does not compile. ``wait=False`` returns once the job is queued
        (``artifact.job_id``; the metadata is empty). ``dynamic`` names parameters
        compiled as dynamic shape symbols (values given at launch)."""
        req = pb.CompileRequest(target=target)
        req.program.CopyFrom(program_source(program, source=source, path=path,
                                            file_name=file_name, entry=entry,
                                            bindings=bindings, dynamic=dynamic))
        req.options.CopyFrom(self._options(options, emit_source, emit_ptx, toolchain, opt_level,
                                           fast_math, line_info, pass_options))
        fill_map(req.config, config)
        if use_best_for_device:
            req.use_best_for_device = use_best_for_device
        setattr(req, "async", not wait)  # a Python keyword: no attribute syntax
        # The memo (as the C++ client keeps it): a request answered within the TTL is
        # answered from the disk while its artifact's files are all there. Never for a
        # best config the daemon may change, nor for async compiles.
        memo = None
        if self.cache is not None and self.compile_memo_ttl > 0 and wait \
                and not use_best_for_device:
            memo = memo_id(self.address, req)
            key = self.cache.compile_key(memo, self.compile_memo_ttl)
            meta = self.cache.metadata(key) if key else None
            if meta is not None and self.cache.has_all_files(meta):
                self._count("compile_hits")
                return Artifact(self, pb.CompileResponse(artifact=meta), target, outcome="local")
        try:
            resp = self._unary("Compile", req, timeout, retry=wait)
        except errors.CompileError as e:
            e.attach_source(req.program.file_name, req.program.tilelang_source)
            raise
        if self.cache is not None and is_key(resp.artifact.key):
            try:  # best effort: a full disk costs the next run a round trip, nothing else
                self.cache.put_metadata(resp.artifact)
                if memo is not None:
                    self.cache.put_compile_key(memo, resp.artifact.key)
            except OSError:
                pass
        return Artifact(self, resp, target)

    def get_artifact(self, key, kinds=None, chunk_bytes=0, timeout=None):
        """The files of a cached artifact as {kind: bytes} ("cubin", "so", "ptx",
        "source", "ir"); every file when ``kinds`` is None. With a client cache
        directory, files already there (and intact) are read from it; otherwise every
        file of the artifact is fetched once and stored there."""
        for k in kinds or ():
            if k not in _KINDS:
                raise ValueError(f"unknown artifact kind {k!r}; one of {sorted(_KIND_NAMES.values())}")
        if self.cache is None:
            return self._fetch_artifact(key, kinds, chunk_bytes, timeout)[1]
        if not is_key(key):
            raise errors.InvalidArgument(
                f"an artifact key is 64 lowercase hex digits, not {key!r}")
        meta = self.cache.metadata(key)
        if meta is not None:
            wanted = [_KINDS[k] for k in kinds] if kinds else \
                [f.kind for f in meta.files if f.kind in KIND_FILES and f.kind in _KIND_NAMES]
            local = {}
            for kind in wanted:
                data = self.cache.file(meta, kind)
                if data is None:
                    break
                local[_KIND_NAMES[kind]] = data
            else:
                self._count("artifact_hits")
                return local
        # Every file the node lacks in one stream, so the next run is served from disk.
        meta, files = self._fetch_artifact(key, None, chunk_bytes, timeout)
        if meta is not None:
            try:
                self.cache.put_metadata(meta)
                for name, data in files.items():
                    self.cache.put_file(meta, _KINDS[name], data)
            except OSError:
                pass
        if not kinds:
            return files
        missing = [k for k in kinds if k not in files]
        if missing:  # the daemon's own error for a kind it lacks
            return self._fetch_artifact(key, kinds, chunk_bytes, timeout)[1]
        return {k: files[k] for k in kinds}

    def _fetch_artifact(self, key, kinds, chunk_bytes, timeout):
        """(metadata, {kind: bytes}) over GetArtifact, each file checked against the
        digest the metadata records."""
        self._count("artifact_fetches")
        req = pb.GetArtifactRequest(key=key, chunk_bytes=chunk_bytes)
        for k in kinds or ():
            req.kinds.append(_KINDS[k])
        parts, meta = {}, None
        for chunk in self._stream("GetArtifact", req, timeout):
            if meta is None and chunk.HasField("metadata"):
                meta = chunk.metadata
            name = _KIND_NAMES.get(chunk.kind)
            if name is None:
                continue
            buf = parts.setdefault(name, bytearray())
            if chunk.offset != len(buf):
                raise errors.DataLoss(f"GetArtifact({key}): a {name} chunk at offset "
                                      f"{chunk.offset} after {len(buf)} bytes")
            buf += chunk.data
        files = {k: bytes(v) for k, v in parts.items()}
        if meta is not None:
            if meta.key and meta.key != key:
                raise errors.DataLoss(f"GetArtifact({key}): the daemon sent the metadata of "
                                      f"{meta.key!r}")
            for f in meta.files:
                name = _KIND_NAMES.get(f.kind)
                if name in files and f.blob_digest and \
                        hashlib.sha256(files[name]).hexdigest() != f.blob_digest:
                    raise errors.DataLoss(f"GetArtifact({key}): the {name} does not match its "
                                          "SHA-256")
        return meta, files

    # -- Tune / LookupBest / Benchmark --

    def tune(self, program=None, *, source=None, path=None, bindings=None, target="cpu",
             entry=None, file_name=None, strategy="roller", top_k=None, max_candidates=None,
             max_seconds=None, space=None, warmup=None, repeats=None, devices=None,
             device_model=None, max_devices=None, reference=None, rtol=None, atol=None, seed=None,
             options=None, pass_options=None, on_progress=None, attach_job_id=None,
             remeasure=False, timeout=None):
        """Tunes the program's tile parameters on the daemon's devices and returns a
        TuneResult (``best``, ``config``, every ``measurements``). ``space`` declares
        candidates ({name: [values]}). ``on_progress(event)`` receives typed events
        (kiln.events: TuneStarted, CandidateCompiled, CandidateMeasured, CandidateFailed,
        NewBest, TuneFinished), each exactly once, on the calling thread; a callable of
        two positional parameters, ``on_progress(progress, job_id)``, gets the raw
        TuneProgress messages as before. ``pass_options`` (e.g.
        ``["gemm=wgmma"]`` with ``target="cuda:sm_90a"``) apply to every build; the
        best config is kept per target and such options. ``remeasure=True`` measures
        every candidate again, also those the daemon's history already holds."""
        req = pb.TuneRequest(target=target)
        if attach_job_id:
            req.attach_job_id = attach_job_id
        else:
            req.program.CopyFrom(program_source(program, source=source, path=path,
                                                file_name=file_name, entry=entry,
                                                bindings=bindings))
        if strategy not in _STRATEGIES:
            raise ValueError(f"strategy must be one of {sorted(_STRATEGIES)}, not {strategy!r}")
        req.strategy = _STRATEGIES[strategy]
        n = max_candidates if max_candidates is not None else top_k
        if n is not None:
            req.budget.max_candidates = n
        if max_seconds is not None:
            req.budget.max_seconds = max_seconds
        if warmup is not None:
            req.budget.warmup = warmup
        if repeats is not None:
            req.budget.repeats = repeats
        for name, values in (space or {}).items():
            lst = req.space.candidates[name]
            for v in values:
                lst.values.append(to_binding(v))
        for d in devices or ():
            req.devices.device_ids.append(d)
        if device_model:
            req.devices.model = device_model
        if max_devices:
            req.devices.max_devices = max_devices
        if remeasure:
            req.remeasure = True
        if reference is not None:
            req.validation.reference_program.CopyFrom(
                reference if isinstance(reference, pb.ProgramSource) else
                program_source(reference, bindings=bindings, entry=entry))
        if rtol is not None:
            req.validation.rtol = rtol
        if atol is not None:
            req.validation.atol = atol
        if seed is not None:
            req.validation.seed = seed
        req.options.CopyFrom(self._options(options, pass_options=pass_options))
        legacy = on_progress is not None and _takes_two_arguments(on_progress)
        tracker = None
        if on_progress is not None and not legacy:
            tracker = ProgressTracker(on_progress, Measurement.from_proto)
        result, job_id = None, attach_job_id or ""
        for event in self._stream("Tune", req, timeout):
            job_id = event.job_id or job_id
            if event.HasField("result"):
                result = event.result
            elif event.HasField("progress"):
                if legacy:
                    on_progress(event.progress, job_id)
                elif tracker is not None:
                    tracker.progress(job_id, event.progress)
        if result is None:
            raise errors.Internal("the Tune stream ended without a result")
        best = Measurement.from_proto(result.best) if result.HasField("best") else None
        out = TuneResult(job_id, best, [Measurement.from_proto(m) for m in result.measurements],
                         result.best_artifact if result.HasField("best_artifact") else None,
                         result)
        if tracker is not None:
            tracker.finish(job_id, out)
        return out

    def best(self, program=None, *, source=None, path=None, bindings=None, target="cpu",
             entry=None, file_name=None, device_model="", options=None, pass_options=None,
             timeout=None):
        """The stored best config for (program, shape, target, device model), or None;
        ``options`` / ``pass_options`` as given to the tune that stored it."""
        req = pb.LookupBestRequest(target=target, device_model=device_model or "")
        req.options.CopyFrom(self._options(options, pass_options=pass_options))
        req.program.CopyFrom(program_source(program, source=source, path=path,
                                            file_name=file_name, entry=entry, bindings=bindings))
        resp = self._unary("LookupBest", req, timeout)
        if not resp.found:
            return None
        return BestConfig(to_dict(resp.config), Measurement.from_proto(resp.measurement),
                          resp.program_key)

    def benchmark(self, program=None, *, source=None, path=None, key=None, bindings=None,
                  target="cpu", entry=None, file_name=None, config=None, devices=None,
                  device_model=None, warmup=None, trials=None, flush_l2=False, cuda_graph=False,
                  history=None, label=None, regression=None, options=None, timeout=None):
        """Times a kernel on one of the daemon's devices. ``key`` benchmarks an artifact
        already compiled. ``history`` files the run under a series name and ``label``
        tags it (e.g. a git sha). ``regression`` (True, or a dict with baseline_runs,
        max_slowdown, significance) asks for a verdict against the history."""
        req = pb.BenchmarkRequest()
        if key is not None:
            if any(x is not None for x in (program, source, path)):
                raise TypeError("give either a program or an artifact key, not both")
            req.artifact_key = key
        else:
            req.program.CopyFrom(program_source(program, source=source, path=path,
                                                file_name=file_name, entry=entry,
                                                bindings=bindings))
            req.target = target
            req.options.CopyFrom(self._options(options))
        fill_map(req.config, config)
        for d in devices or ():
            req.devices.device_ids.append(d)
        if device_model:
            req.devices.model = device_model
        if warmup is not None:
            req.warmup = warmup
        if trials is not None:
            req.trials = trials
        req.flush_l2 = bool(flush_l2)
        req.use_cuda_graph = bool(cuda_graph)
        if history:
            req.history_name = history
        if label:
            req.label = label
        if regression:
            req.regression.SetInParent()
            if isinstance(regression, dict):
                for k, v in regression.items():
                    setattr(req.regression, k, v)
        return BenchmarkResult.from_proto(self._unary("Benchmark", req, timeout))

    def measurements(self, history, *, label=None, device_model=None, successes_only=False,
                     limit=None, timeout=None):
        """The recorded runs of one history series, newest first, as the response's
        ``HistoryEntry`` messages (``labels`` on the response lists the series' labels)."""
        req = pb.ListMeasurementsRequest(history_name=history,
                                         successes_only=bool(successes_only))
        if label:
            req.label = label
        if device_model:
            req.device_model = device_model
        if limit is not None:
            req.limit = limit
        return self._unary("ListMeasurements", req, timeout)

    # -- jobs, devices, cache, version --

    def devices(self, timeout=None):
        resp = self._unary("ListDevices", pb.ListDevicesRequest(), timeout)
        return [Device.from_proto(d) for d in resp.devices]

    def jobs(self, limit=50, timeout=None):
        resp = self._unary("ListJobs", pb.ListJobsRequest(limit=limit), timeout)
        return [Job.from_proto(j) for j in resp.jobs]

    def job(self, job_id, timeout=None):
        return Job.from_proto(self._unary("GetJob", pb.GetJobRequest(job_id=job_id), timeout))

    def watch(self, job_id, timeout=None):
        """Yields a Job snapshot after every change; ends after the final one."""
        for j in self._stream("WatchJob", pb.WatchJobRequest(job_id=job_id), timeout):
            yield Job.from_proto(j)

    def cancel(self, job_id, timeout=None):
        resp = self._unary("CancelJob", pb.CancelJobRequest(job_id=job_id), timeout)
        return Job.from_proto(resp.job)

    def cache_stats(self, timeout=None):
        return self._unary("CacheStats", pb.CacheStatsRequest(), timeout)

    def version(self, timeout=None):
        return self._unary("GetVersion", pb.GetVersionRequest(), timeout)

    def ping(self, timeout=10.0):
        """Round-trips an Echo; raises Unavailable when the daemon cannot be reached."""
        self._unary("Echo", pb.EchoRequest(size=0), timeout)
        return True
