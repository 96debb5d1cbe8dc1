"""Tuning the way TileLang users know, against a real kilnd (CPU target):
@kiln.autotune over @kiln.jit, kiln.jit(use_best=True), typed tune progress events,
and tilelang.autotune under the shim."""
import importlib.util
import sys

import numpy as np
import pytest

import kiln
from conftest import load_example

RNG = np.random.default_rng(11)


def rand(*shape, dtype=np.float16):
    return RNG.standard_normal(shape).astype(dtype)


class SpyClient(kiln.Client):
    """A real Client that records its Tune and Compile requests."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.tunes, self.compiles = [], []

    def tune(self, *a, **k):
        self.tunes.append(k)
        return super().tune(*a, **k)

    def compile(self, *a, **k):
        self.compiles.append(k)
        return super().compile(*a, **k)


@pytest.fixture
def spy(daemon):
    c = SpyClient(daemon.address, timeout=300)
    yield c
    c.close()


def tuned_part(config, names):
    return {k: v for k, v in config.items() if k in names}


# Not a full product of its values: kiln sweeps it as two grids.
ADD_CONFIGS = [{"block_M": 16, "block_N": 32}, {"block_M": 16, "block_N": 64},
               {"block_M": 32, "block_N": 64}]


def test_autotune_configs_list_binds_the_fastest_config_per_shape(spy):
    ex = load_example("elementwise/add.py")
    add = kiln.autotune(configs=ADD_CONFIGS, warmup=1, rep=3)(kiln.jit(ex.add, client=spy))
    A, B = rand(61, 130), rand(61, 130)
    C = add(A, B)                              # block_M, block_N: tuned on this first call
    np.testing.assert_array_equal(C, ex.ref_program(A, B))
    [res] = add.autotune_results
    assert isinstance(res, kiln.AutotuneResult) and res.target == "cpu"
    assert res.bindings["M"] == 61 and res.bindings["N"] == 130
    # Every config of the list measured once, nothing else; the best is the fastest.
    names = {"block_M", "block_N"}
    measured = sorted((tuned_part(m.config, names) for m in res.measurements),
                      key=lambda c: (c["block_M"], c["block_N"]))
    assert measured == ADD_CONFIGS and res.rejected == []
    ok = [m for m in res.measurements if m.status == "ok"]
    fastest = min(ok, key=lambda m: m.median_us)
    assert res.latency_us == fastest.median_us
    assert tuned_part(res.config, names) == tuned_part(fastest.config, names)
    assert res.config["threads"] == 256        # not in the configs: kept at its default
    assert len(res.tunes) == 2 and len(spy.tunes) == 2
    assert all(t["strategy"] == "grid" and t["warmup"] == 1 and t["repeats"] == 3
               for t in spy.tunes)
    from_sweeps = [m for t in res.tunes for m in t.measurements]
    assert fastest.median_us == min(m.median_us for m in from_sweeps if m.status == "ok")
    # The call ran the best config's kernel.
    assert tuned_part(spy.compiles[-1]["bindings"], names) == tuned_part(res.config, names)

    # Same shape again (another thread's call too): no new tune.
    add(A, B)
    add(rand(61, 130), rand(61, 130))
    assert len(spy.tunes) == 2 and len(add.autotune_results) == 1
    # Another shape: its own tune.
    A2, B2 = rand(29, 70), rand(29, 70)
    np.testing.assert_array_equal(add(A2, B2), ex.ref_program(A2, B2))
    assert len(spy.tunes) == 4 and len(add.autotune_results) == 2
    # The call binds the tuned parameters itself: no tune (as in TileLang).
    add(A2, B2, block_M=16, block_N=32)
    assert len(spy.tunes) == 4


def test_autotune_is_thread_safe(spy):
    import concurrent.futures
    ex = load_example("elementwise/add.py")
    add = kiln.autotune(configs=ADD_CONFIGS[:2], warmup=1, rep=2)(kiln.jit(ex.add, client=spy))
    A, B = rand(33, 90), rand(33, 90)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(lambda _: add(A, B), range(4)))
    for C in outs:
        np.testing.assert_array_equal(C, ex.ref_program(A, B))
    assert len(spy.tunes) == 1 and len(add.autotune_results) == 1


def test_autotune_configs_callable_and_bad_keys(spy):
    ex = load_example("elementwise/add.py")
    seen = []

    def configs(A, B):                         # called with the call's arguments
        seen.append(A.shape)
        return [{"block_M": 16, "block_N": n} for n in (32, 64)]

    add = kiln.autotune(configs=configs, warmup=1, rep=2)(kiln.jit(ex.add, client=spy))
    A, B = rand(45, 100), rand(45, 100)
    np.testing.assert_array_equal(add(A, B), ex.ref_program(A, B))
    add(A, B)
    assert seen == [(45, 100)]                 # called once per shape, as TileLang does
    assert add.autotune_results[0].config["block_N"] in (32, 64)
    bad = kiln.autotune(configs=[{"block_M": 16, "blockN": 32}])(kiln.jit(ex.add, client=spy))
    with pytest.raises(ValueError, match="blockN"):
        bad(A, B)
    with pytest.raises(TypeError, match="unknown options"):
        kiln.autotune(configs=ADD_CONFIGS, reps=3)


def test_autotune_without_configs_runs_the_roller(spy):
    ex = load_example("elementwise/add.py")
    events = []
    add = kiln.autotune(max_candidates=3, rep=2, on_progress=events.append)(
        kiln.jit(ex.add, client=spy))
    A, B = rand(64, 128), rand(64, 128)
    np.testing.assert_array_equal(add(A, B), ex.ref_program(A, B))
    [t] = spy.tunes
    assert t["strategy"] == "roller" and t["max_candidates"] == 3 and "space" not in t
    [res] = add.autotune_results
    assert 1 <= len(res.measurements) <= 3 and {"block_M", "block_N"} <= set(res.config)
    assert isinstance(events[0], kiln.TuneStarted) and events[-1].result is res.tunes[0]


def test_use_best_fills_unbound_parameters_from_the_stored_best(spy, client):
    ex = load_example("elementwise/add.py")
    space = {"block_M": [16, 32], "block_N": [64], "threads": [256]}
    res = client.tune(ex.__file__, bindings={"M": 83, "N": 130}, target="cpu", strategy="grid",
                      space=space, repeats=2)
    assert res.best is not None
    add = kiln.jit(ex.add, use_best=True, client=spy)
    A, B = rand(83, 130), rand(83, 130)
    np.testing.assert_array_equal(add(A, B), ex.ref_program(A, B))
    sent = spy.compiles[-1]["bindings"]
    assert sent["block_M"] == res.config["block_M"] and sent["block_N"] == 64
    add(A, B)                                  # looked up once per shape
    assert len(spy.tunes) == 0 and len(spy.compiles) == 1


def test_use_best_with_the_split_k_knob_builds_and_runs_the_split_kernels(spy, client):
    # A stored best whose config holds the tuning knob kiln:split_k (a pass option of
    # the build, not a parameter): the call sends it with the bindings, kilnd builds
    # the split program (its partials and tickets workspaces) and the result is right.
    ex = load_example("gemm/gemm.py")
    space = {"block_M": [16], "block_N": [32], "block_K": [32], "num_stages": [2],
             "threads": [128], "kiln:split_k": [4]}
    res = client.tune(ex.__file__, bindings={"M": 16, "N": 96, "K": 256}, target="cpu",
                      strategy="grid", space=space, repeats=2)
    assert res.best is not None and res.config["kiln:split_k"] == 4
    gemm = kiln.jit(ex.gemm, use_best=True, client=spy)
    A, B = rand(16, 256), rand(256, 96)
    C = gemm(A, B)
    np.testing.assert_allclose(C.astype(np.float32), ex.ref_program(A, B).astype(np.float32),
                               rtol=1e-2, atol=1e-2)
    assert spy.compiles[-1]["bindings"]["kiln:split_k"] == 4


def test_use_best_miss_names_the_unbound_parameters(spy):
    ex = load_example("elementwise/add.py")
    add = kiln.jit(ex.add, use_best=True, client=spy)
    with pytest.raises(kiln.BindingError) as info:
        add(rand(84, 130), rand(84, 130))
    msg = str(info.value)
    assert "block_M" in msg and "block_N" in msg and "threads" not in msg
    assert "tune_on_miss=True" in msg and "M=84" in msg
    assert spy.compiles == [] and spy.tunes == []


def test_use_best_miss_with_defaults_uses_them(spy, tmp_path):
    ex = load_example("elementwise/add.py")
    add = kiln.jit(ex.add, use_best=True, client=spy, bind={"block_M": 16})
    A, B = rand(87, 130), rand(87, 130)
    with pytest.raises(kiln.BindingError, match="block_N"):
        add(A, B)
    with pytest.warns(UserWarning, match="defaults"):
        C = add(A, B, block_N=64)              # threads, dtype: their defaults
    np.testing.assert_array_equal(C, ex.ref_program(A, B))


def test_use_best_tune_on_miss(spy, client):
    ex = load_example("elementwise/add.py")
    with pytest.raises(TypeError, match="use_best"):
        kiln.jit(ex.add, tune_on_miss=True)
    tune = {"strategy": "grid", "repeats": 2,
            "space": {"block_M": [16, 32], "block_N": [32, 64], "threads": [256]}}
    add = kiln.jit(ex.add, use_best=True, tune_on_miss=True, tune=tune, client=spy)
    A, B = rand(85, 130), rand(85, 130)
    np.testing.assert_array_equal(add(A, B), ex.ref_program(A, B))
    assert len(spy.tunes) == 1
    stored = client.best(ex.__file__, entry="add", bindings={"M": 85, "N": 130}, target="cpu")
    assert stored is not None
    sent = spy.compiles[-1]["bindings"]
    assert (sent["block_M"], sent["block_N"]) == (stored.config["block_M"],
                                                  stored.config["block_N"])
    add(rand(85, 130), rand(85, 130))
    assert len(spy.tunes) == 1                 # the hit is remembered


def test_tune_progress_events_are_typed_and_delivered_once(client):
    ex = load_example("elementwise/add.py")
    events = []
    space = {"block_M": [16, 32], "block_N": [32, 64], "threads": [256]}
    res = client.tune(ex.__file__, bindings={"M": 86, "N": 130}, target="cpu", strategy="grid",
                      space=space, repeats=2, on_progress=events.append)
    assert isinstance(events[0], kiln.TuneStarted) and events[0].job_id == res.job_id
    assert isinstance(events[-1], kiln.TuneFinished) and events[-1].result is res
    assert sum(isinstance(e, (kiln.TuneStarted, kiln.TuneFinished)) for e in events) == 2
    assert all(e.job_id == res.job_id for e in events)
    compiled = [e.index for e in events if isinstance(e, kiln.CandidateCompiled)]
    assert compiled == list(range(1, len(res.measurements) + 1))
    done = [e for e in events if isinstance(e, (kiln.CandidateMeasured, kiln.CandidateFailed))]
    key = lambda c: tuple(sorted(c.items()))  # noqa: E731
    assert sorted(key(e.config) for e in done) == sorted(key(m.config) for m in res.measurements)
    for e in done:
        if isinstance(e, kiln.CandidateMeasured):
            assert e.median_us == e.measurement.median_us > 0
    bests = [e for e in events if isinstance(e, kiln.NewBest)]
    assert bests and bests[-1].config == res.config
    medians = [b.median_us for b in bests]
    assert medians == sorted(medians, reverse=True) and len(set(medians)) == len(medians)
    assert bests[0].previous_us is None
    # A NewBest comes after that config's CandidateMeasured.
    for b in bests:
        i = events.index(b)
        assert any(isinstance(e, kiln.CandidateMeasured) and e.config == b.config
                   for e in events[:i])
    # The old two-argument callback still gets the raw messages.
    raw = []
    client.tune(ex.__file__, bindings={"M": 86, "N": 130}, target="cpu", strategy="grid",
                space=space, repeats=2, on_progress=lambda p, job: raw.append((p, job)))
    assert raw and all(hasattr(p, "candidates_total") for p, _ in raw)


SHIM_KERNEL = '''
import itertools
import tilelang
import tilelang.language as T
from tilelang.autotuner import autotune


def get_configs():
    return [{"block_M": m, "block_N": n} for m, n in itertools.product([8, 16], [32, 64])]


@tilelang.autotune(configs=get_configs(), warmup=1, rep=2)
@tilelang.jit(out_idx=[-1])
def scaled_add(A, B, block_M, block_N, threads=128, dtype=T.float32):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), dtype)
    B: T.Tensor((M, N), dtype)
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        for i, j in T.Parallel(block_M, block_N):
            r = by * block_M + i
            c = bx * block_N + j
            if r < M and c < N:
                C[r, c] = A[r, c] * 2.0 + B[r, c]
    return C


def row_configs(A, B):
    return [{"block_M": m} for m in (4, 8) if m <= A.shape[0]]


@autotune(configs=row_configs, warmup=1, rep=2)
@tilelang.jit
def row_add(A, B, block_M, block_N=32, threads=64, dtype=T.float32):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), dtype)
    B: T.Tensor((M, N), dtype)
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        for i, j in T.Parallel(block_M, block_N):
            r = by * block_M + i
            c = bx * block_N + j
            if r < M and c < N:
                C[r, c] = A[r, c] + B[r, c]
    return C
'''


def test_tilelang_autotune_under_the_shim(tmp_path, client):
    assert kiln.install_tilelang_shim()
    import tilelang
    import tilelang.autotuner
    assert tilelang.autotune is kiln.autotune and tilelang.autotuner.autotune is kiln.autotune
    path = tmp_path / "tl_autotune_example.py"
    path.write_text(SHIM_KERNEL)
    spec = importlib.util.spec_from_file_location("tl_autotune_example", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    A, B = rand(37, 90, dtype=np.float32), rand(37, 90, dtype=np.float32)
    C = mod.scaled_add(A, B)
    np.testing.assert_allclose(C, A * 2 + B, rtol=1e-6)
    [res] = mod.scaled_add.autotune_results
    assert len(res.measurements) == 4 and len(res.tunes) == 1   # a full product: one grid
    assert res.latency_us == min(m.median_us for m in res.measurements if m.status == "ok")
    # TileLang's .compile(**bindings) returns the tuned kernel for those bindings.
    art = mod.scaled_add.compile(M=37, N=90, dtype="float32")
    assert art.key == res.best.key
    np.testing.assert_allclose(mod.row_add(A, B), A + B, rtol=1e-6)
    [row] = mod.row_add.autotune_results
    assert sorted(m.config["block_M"] for m in row.measurements) == [4, 8]
    assert row.config["block_N"] == 32 and row.config["threads"] == 64
