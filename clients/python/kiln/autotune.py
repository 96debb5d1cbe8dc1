"""Filling a kernel's tile parameters from kilnd: ``@kiln.autotune`` and
``kiln.jit(use_best=True)``.

``@kiln.autotune(configs=[...], warmup=, rep=)`` stacked over ``@kiln.jit`` works as
TileLang's ``@tilelang.autotune`` over ``@tilelang.jit``: the first call for a shape
(the bindings read off the tensors, plus the call's other arguments) tunes the config
parameters the call leaves unbound, and that call and every later one with the same
bindings run the fastest config. The sweep is kilnd's: a grid over the configs (the
daemon compiles, validates every candidate's output against the reference and times
it on its device, recording the measurements and the best config in its history),
or the Roller policy over the derived space when ``configs`` is omitted.

A configs list that is not a full cartesian product is swept as a few grids that
together hold exactly its configs (the daemon keeps the fastest of them as the best
config). Parameters with an integer default that no config names stay at that
default (declared as one-value domains, so the daemon's derived space does not widen
them).

Thread-safe: one sweep (or lookup) per (target, bindings), the others wait for it.
"""
import dataclasses
import inspect
import math
import threading
import warnings

from .errors import BindingError, TuneError
from .events import config_id
from ._values import dtype_name

__all__ = ["autotune", "AutotuneResult", "UseBest"]

# TileLang's autotune options that Kiln takes and has no use for: kilnd validates every
# candidate against the reference config's output on its own inputs, with its own
# timeouts. The ones in _UNHONOURED change what TileLang checks, so they get a warning.
_TILELANG_AUTOTUNE_OPTIONS = {"timeout", "supply_type", "ref_prog", "supply_prog",
                              "max_mismatched_ratio", "skip_check", "manual_check_prog",
                              "cache_input_tensors", "early_stop", "early_stop_factor"}
_UNHONOURED = {"ref_prog", "supply_prog", "manual_check_prog"}
_RESERVED_CONFIG_KEYS = {"pass_configs"}  # TileLang's per-config TVM pass settings


@dataclasses.dataclass(frozen=True)
class AutotuneResult:
    """What one autotune of a kernel for one shape found."""
    target: str
    bindings: dict       # what the call bound (shapes, dtypes, other arguments)
    config: dict         # the best config, bound on every call with these bindings
    latency_us: float    # its median time on the daemon's device
    best: object         # its kiln.Measurement
    measurements: list   # a kiln.Measurement per config measured (or failed)
    rejected: list       # configs of the list the daemon's verification refused
    tunes: list          # the kiln.TuneResult of each sweep


def _freeze(d):
    return tuple(sorted((k, type(v).__name__, repr(v)) for k, v in d.items()))


def _is_int(v):
    return not isinstance(v, (bool, float, str)) and hasattr(v, "__index__") \
        and type(v).__name__ != "bool_"


def tune_bindings(jk, b):
    """The bindings a tune and a best-config lookup send: the call's, less dtype
    parameters bound to their default, so a kernel tuned from the CLI without them
    (``kiln tune FILE --bind M=... N=...``) is found."""
    out = {}
    for k, v in b.items():
        p = jk._signature.parameters.get(k)
        if (p is not None and isinstance(v, str) and p.default is not p.empty
                and not isinstance(p.default, (int, float)) and dtype_name(p.default) == v):
            continue
        out[k] = v
    return out


def _shape_text(b):
    return ", ".join(f"{k}={v}" for k, v in sorted(b.items())) or "no bindings"


class _OncePerKey:
    """Runs a function once per key; callers of the same key wait for the first."""

    def __init__(self):
        self._lock = threading.Lock()
        self._locks = {}
        self._done = {}

    def get(self, key, compute):
        if key in self._done:
            return self._done[key]
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key not in self._done:
                self._done[key] = compute()
            return self._done[key]


# --- use_best ------------------------------------------------------------------------


class UseBest:
    """kiln.jit(use_best=True): unbound tile parameters from LookupBest (jit.py)."""

    def __init__(self, tune_on_miss=False, tune=None, device_model=None):
        self.tune_on_miss = tune_on_miss
        self.tune = dict(tune or {})
        self.device_model = device_model or ""
        self._once = _OncePerKey()

    def resolve(self, jk, target, b, call):
        unbound = jk.unbound_parameters(b, with_defaults=True)
        if not unbound:
            return b
        tb = tune_bindings(jk, b)
        key = (target, _freeze(tb), _freeze(jk.options))
        config = self._once.get(key, lambda: self._find(jk, target, tb, unbound))
        out = dict(b)
        out.update({k: v for k, v in config.items() if k not in b})
        return out

    def _find(self, jk, target, tb, unbound):
        client = jk.client
        where = dict(source=jk.source, file_name=jk.file_name, entry=jk.name, bindings=tb,
                     target=target, options=jk.options or None)
        found = client.best(device_model=self.device_model, **where)
        if found is None:
            # A tune that named no entry (`kiln tune FILE`, Client.tune(path)) keeps its
            # best under the file's default kernel; take it when it tunes this function.
            other = client.best(device_model=self.device_model, **dict(where, entry=None))
            # (Tuning knobs such as "kiln:split_k" are the build's, not parameters.)
            if other is not None and {k for k in other.config if ":" not in k} <= \
                    set(jk._signature.parameters):
                found = other
        if found is not None:
            return dict(found.config)
        if self.tune_on_miss:
            args = {"strategy": "roller", **self.tune}
            res = client.tune(device_model=self.device_model or None, **where, **args)
            if res.best is None:
                raise TuneError(f"{jk.name}(): tuning for {_shape_text(tb)} on {target} found "
                                f"no valid config ({len(res.measurements)} failed; job "
                                f"{res.job_id})", [res])
            return dict(res.config)
        no_default = [n for n in unbound
                      if jk._signature.parameters[n].default is inspect.Parameter.empty]
        if no_default:
            raise BindingError(
                f"{jk.name}(): kilnd has no best config for {_shape_text(tb)} on {target}, "
                f"and nothing binds {', '.join(no_default)}. Tune it first (Client.tune(...) "
                f"or `kiln tune {jk.file_name} --bind ...` with these bindings), use "
                "kiln.jit(use_best=True, tune_on_miss=True), or pass "
                f"{', '.join(no_default)} as keyword arguments")
        defaults = {n: jk._signature.parameters[n].default for n in unbound}
        warnings.warn(f"{jk.name}(): kilnd has no best config for {_shape_text(tb)} on "
                      f"{target}; using the defaults {_shape_text(defaults)}", stacklevel=4)
        return {}


# --- autotune ------------------------------------------------------------------------


def _products(points, keys):
    """Cartesian products ({name: [values]}) that together hold exactly ``points``
    (dicts over ``keys`` of integers), each point once."""
    unique, seen = [], set()
    for p in points:
        t = tuple(p[k] for k in keys)
        if t not in seen:
            seen.add(t)
            unique.append(p)
    if not keys:
        return [{}]
    values = {k: sorted({p[k] for p in unique}) for k in keys}
    if math.prod(len(v) for v in values.values()) == len(unique):
        return [values]
    first, rest = keys[0], keys[1:]
    by_value = {}
    for p in unique:
        by_value.setdefault(p[first], []).append({k: p[k] for k in rest})
    merged = {}  # sub-product -> values of `first` it goes with
    for v, sub in by_value.items():
        for space in _products(sub, rest):
            ident = tuple((k, tuple(space[k])) for k in rest)
            merged.setdefault(ident, (space, []))[1].append(v)
    return [{first: sorted(vs), **space} for space, vs in merged.values()]


def plan_sweeps(configs):
    """[(fixed bindings, space)]: one grid sweep each. Integer values become the
    space; other values (bools, strings) are bound, one sweep per combination."""
    groups = {}
    for c in configs:
        fixed = {k: v for k, v in c.items() if not _is_int(v)}
        ints = {k: int(v) for k, v in c.items() if _is_int(v)}
        key = (_freeze(fixed), tuple(sorted(ints)))
        groups.setdefault(key, (fixed, []))[1].append(ints)
    out = []
    for fixed, points in groups.values():
        for space in _products(points, sorted(points[0])):
            out.append((fixed, space))
    return out


class Autotune:
    """@kiln.autotune: the sweep per (target, bindings) and its result."""

    def __init__(self, configs, warmup, rep, rtol, atol, strategy, max_candidates,
                 do_not_specialize, on_progress, tune):
        self.configs = configs
        self.warmup, self.rep, self.rtol, self.atol = warmup, rep, rtol, atol
        self.strategy = strategy
        self.max_candidates = max_candidates
        self.do_not_specialize = set(do_not_specialize or ())
        self.on_progress = on_progress
        self.tune = dict(tune or {})
        self.results = []
        self._results_lock = threading.Lock()
        self._once = _OncePerKey()

    def _configs_for(self, jk, call):
        cfgs = self.configs
        if cfgs is None:
            return None
        if callable(cfgs):
            args, kwargs = call
            cfgs = cfgs(*args, **kwargs)  # TileLang calls it with the call's arguments
        if isinstance(cfgs, dict):
            cfgs = [cfgs]
        cfgs = list(cfgs)
        if not cfgs:
            raise ValueError(f"kiln.autotune({jk.name}): no configs to tune")
        params = set(jk._signature.parameters)
        out = []
        for c in cfgs:
            if not isinstance(c, dict):
                raise TypeError(f"kiln.autotune({jk.name}): a config is a dict of parameter "
                                f"values, not {type(c).__name__} ({c!r})")
            c = {k: v for k, v in c.items() if k not in _RESERVED_CONFIG_KEYS}
            unknown = sorted(set(c) - params)
            if unknown:
                raise ValueError(f"kiln.autotune({jk.name}): config keys {unknown} are not "
                                 f"parameters of {jk.name}({', '.join(params)}) (config {c})")
            out.append(c)
        return out

    def resolve(self, jk, target, b, call):
        key_b = {k: v for k, v in b.items() if k not in self.do_not_specialize}
        key = (target, _freeze(key_b), _freeze(jk.options))
        config = self._once.get(key, lambda: self._config_for(jk, target, b, call))
        out = dict(b)
        out.update({k: v for k, v in config.items() if k not in b})
        return out

    def _config_for(self, jk, target, b, call):
        """The config to bind for these bindings ({} when the call binds them all); the
        first call of a key runs this, so a configs callable is called once per key."""
        cfgs = self._configs_for(jk, call)
        if cfgs is None:
            if not jk.unbound_parameters(b, with_defaults=True):
                return {}
        else:
            names = set().union(*cfgs)
            given = names & set(b)
            if given == names:
                return {}  # the call binds every tuned parameter: nothing to tune (TileLang)
            # Configs that agree with what the call binds; tune the rest of them.
            cfgs = [c for c in cfgs if all(repr(c[k]) == repr(b[k]) for k in given & set(c))]
            if not cfgs:
                raise ValueError(f"kiln.autotune({jk.name}): no config has "
                                 f"{_shape_text({k: b[k] for k in given})}, which the call binds")
            cfgs = [{k: v for k, v in c.items() if k not in b} for c in cfgs]
        return self._sweep(jk, target, b, cfgs).config

    def _sweep(self, jk, target, b, cfgs):
        client = jk.client
        tb = tune_bindings(jk, b)
        common = dict(source=jk.source, file_name=jk.file_name, entry=jk.name, target=target,
                      options=jk.options or None, warmup=self.warmup, repeats=self.rep,
                      rtol=self.rtol, atol=self.atol, on_progress=self.on_progress, **self.tune)
        tunes, measured, rejected = [], [], []
        if cfgs is None:
            res = client.tune(bindings=tb, strategy=self.strategy or "roller",
                              max_candidates=self.max_candidates, **common)
            tunes.append(res)
            measured = list(res.measurements)
        else:
            names = set().union(*cfgs)
            pinned = {p.name: [int(p.default)] for p in jk._signature.parameters.values()
                      if p.name not in b and p.name not in names and _is_int(p.default)}
            wanted = {config_id(c) for c in cfgs}
            found = set()
            for fixed, space in plan_sweeps(cfgs):
                res = client.tune(bindings={**tb, **fixed}, strategy=self.strategy or "grid",
                                  space={**space, **pinned}, **common)
                tunes.append(res)
                for m in res.measurements:
                    full = {**m.config, **fixed}
                    ident = config_id({k: v for k, v in full.items() if k in names})
                    if ident in wanted and ident not in found:
                        found.add(ident)
                        measured.append(dataclasses.replace(m, config=full))
            rejected = [c for c in cfgs if config_id(c) not in found]
        ok = [m for m in measured if m.status == "ok"]
        if not ok:
            raise TuneError(f"kiln.autotune({jk.name}): no valid config for {_shape_text(tb)} "
                            f"on {target}: " + "; ".join(
                                f"{m.config}: {m.status} {m.error}".strip()
                                for m in measured[:5]) + (f" ({len(rejected)} configs refused "
                                                          "by the daemon's verification)"
                                                          if rejected else ""), tunes)
        best = min(ok, key=lambda m: m.median_us)
        result = AutotuneResult(target, dict(b), dict(best.config), best.median_us, best,
                                measured, rejected, tunes)
        with self._results_lock:
            self.results.append(result)
        return result


def autotune(fn=None, *, configs=None, warmup=None, rep=None, rtol=None, atol=None,
             strategy=None, max_candidates=None, do_not_specialize=None, on_progress=None,
             tune=None, **tilelang_options):
    """Tunes a @kiln.jit kernel's tile parameters through kilnd, per shape, the way
    TileLang's @tilelang.autotune does (see the module doc).

    ``configs``: a list of {parameter: value} dicts, or a callable returning one (called
    with the first call's arguments); omitted: the Roller policy over the derived space
    (``max_candidates`` configs). ``warmup``/``rep``: warm-up runs and timed runs per
    config (kilnd's defaults when None). ``rtol``/``atol``: the validation tolerance.
    ``strategy``: "grid" (default with configs), "roller" or "random". ``do_not_specialize``:
    parameters left out of the per-shape key. ``on_progress``: typed tune events
    (kiln.events). ``tune``: more Client.tune arguments (devices, device_model,
    max_seconds, seed, remeasure, ...). TileLang's other options (ref_prog,
    supply_type, skip_check, timeout, ...) are accepted; kilnd validates against the
    reference config's output with its own inputs and limits."""
    unknown = set(tilelang_options) - _TILELANG_AUTOTUNE_OPTIONS
    if unknown:
        raise TypeError(f"kiln.autotune got unknown options {sorted(unknown)}")
    unhonoured = sorted(k for k in _UNHONOURED if tilelang_options.get(k) is not None)
    if unhonoured:
        warnings.warn(f"kiln.autotune: {', '.join(unhonoured)} not used: kilnd validates "
                      "each config against the reference config's output on its own inputs",
                      stacklevel=2)

    def wrap(f):
        from .jit import JitKernel, jit
        kernel = f if isinstance(f, JitKernel) else jit(f)
        return kernel._with_tuning(Autotune(configs, warmup, rep, rtol, atol, strategy,
                                            max_candidates, do_not_specialize, on_progress,
                                            tune))
    return wrap if fn is None else wrap(fn)
