"""Typed progress events of a tuning sweep (``Client.tune(on_progress=...)``).

kilnd streams snapshots of a sweep's counters (TuneProgress: how many candidates are
compiled, measured and failed, the latest measurement, the best so far). A snapshot
may repeat the previous one, and snapshots that follow each other quickly are
merged, so a measurement can be missing from the stream. ``ProgressTracker`` turns
the snapshots into events, each delivered exactly once, in this order:

  TuneStarted                        first (the sweep's size, when the daemon knows it)
  CandidateCompiled(n)               once for n = 1, 2, ... as candidates finish building
  CandidateMeasured / CandidateFailed   once per config, as the stream shows them
  NewBest                            when a faster valid config appears
  TuneFinished                       last, with the TuneResult

Configs the stream skipped are reported from the final result, before TuneFinished,
so every config of the result has exactly one CandidateMeasured or CandidateFailed.
"""
import dataclasses

__all__ = ["TuneEvent", "TuneStarted", "CandidateCompiled", "CandidateMeasured",
           "CandidateFailed", "NewBest", "TuneFinished", "ProgressTracker"]


@dataclasses.dataclass(frozen=True)
class TuneEvent:
    job_id: str


@dataclasses.dataclass(frozen=True)
class TuneStarted(TuneEvent):
    """The sweep runs; ``total`` candidates (0 when the daemon had not planned yet)."""
    total: int


@dataclasses.dataclass(frozen=True)
class CandidateCompiled(TuneEvent):
    """The ``index``-th candidate (1-based) finished building, successfully or not
    (a failed build is also reported as CandidateFailed with kind "compile_error")."""
    index: int
    total: int


@dataclasses.dataclass(frozen=True)
class CandidateMeasured(TuneEvent):
    """A config was timed and its output validated (``measurement`` has the spread,
    the device and the artifact key; ``reused`` when the daemon's history answered)."""
    config: dict
    median_us: float
    measurement: object  # kiln.Measurement


@dataclasses.dataclass(frozen=True)
class CandidateFailed(TuneEvent):
    """A config failed: ``kind`` is "compile_error", "launch_error", "timeout",
    "wrong_result" or "resource_limit"; ``message`` the daemon's explanation."""
    config: dict
    kind: str
    message: str
    measurement: object  # kiln.Measurement


@dataclasses.dataclass(frozen=True)
class NewBest(TuneEvent):
    """``config`` is the fastest valid config so far (``previous_us`` is None for the
    first)."""
    config: dict
    median_us: float
    previous_us: object  # float or None
    measurement: object


@dataclasses.dataclass(frozen=True)
class TuneFinished(TuneEvent):
    """The sweep ended; ``result`` is the TuneResult that Client.tune returns."""
    result: object


def config_id(config):
    """A hashable identity of a config dict."""
    return tuple(sorted((k, repr(v)) for k, v in config.items()))


class ProgressTracker:
    """Turns TuneEvent messages of one Tune stream into typed events (see the module
    doc). ``emit`` receives each event; not thread-safe (one stream, one thread)."""

    def __init__(self, emit, measurement_from_proto):
        self._emit = emit
        self._from_proto = measurement_from_proto
        self._job_id = ""
        self._started = False
        self._total = 0
        self._compiled = 0
        self._seen = set()
        self._best = None  # (config id, median_us)

    def _start(self, total):
        if not self._started:
            self._started = True
            self._emit(TuneStarted(self._job_id, total))

    def _compiled_up_to(self, n):
        while self._compiled < n:
            self._compiled += 1
            self._emit(CandidateCompiled(self._job_id, self._compiled, max(self._total, n)))

    def _finished(self, m):
        """One CandidateMeasured / CandidateFailed per config."""
        ident = config_id(m.config)
        if ident in self._seen:
            return
        self._seen.add(ident)
        if m.status == "ok":
            self._emit(CandidateMeasured(self._job_id, dict(m.config), m.median_us, m))
        else:
            self._emit(CandidateFailed(self._job_id, dict(m.config), m.status, m.error, m))

    def _maybe_best(self, m, final=False):
        if m is None or m.status != "ok":
            return
        ident = config_id(m.config)
        if self._best is not None and self._best[0] == ident:
            return
        if not final and self._best is not None and m.median_us >= self._best[1]:
            return  # not faster than the best already announced
        self._finished(m)  # a best the stream skipped is reported measured first
        previous = self._best[1] if self._best is not None else None
        self._best = (ident, m.median_us)
        self._emit(NewBest(self._job_id, dict(m.config), m.median_us, previous, m))

    def progress(self, job_id, p):
        self._job_id = job_id or self._job_id
        self._total = max(self._total, p.candidates_total)
        if p.candidates_total > 0:
            self._start(p.candidates_total)
        if not self._started:
            return  # an empty snapshot before the plan: nothing to say yet
        self._compiled_up_to(p.candidates_compiled)
        if p.HasField("latest"):
            self._finished(self._from_proto(p.latest))
        if p.HasField("best_so_far"):
            self._maybe_best(self._from_proto(p.best_so_far))

    def finish(self, job_id, result):
        """Reports what the stream skipped, then TuneFinished(result)."""
        self._job_id = job_id or self._job_id
        self._total = max(self._total, len(result.measurements))
        self._start(self._total)
        self._compiled_up_to(len(result.measurements))
        for m in result.measurements:
            self._finished(m)
        self._maybe_best(result.best, final=True)  # the daemon's verdict wins
        self._emit(TuneFinished(self._job_id, result))
