"""kiln.Client against a real kilnd (CPU target): compile outcomes, artifact bytes,
located errors, typed exceptions, jobs, benchmark, tune and best."""
import concurrent.futures
import hashlib
import re
import socket

import grpc
import pytest

import kiln
from conftest import REPO, example_path

ADD = str(example_path("elementwise/add.py"))


def add_bindings(M, N, bm=16, bn=64):
    return dict(M=M, N=N, block_M=bm, block_N=bn)


def test_compile_miss_then_hit(client):
    first = client.compile(ADD, bindings=add_bindings(33, 65), target="cpu")
    assert first.outcome == "miss" and not first.cache_hit
    assert re.fullmatch(r"[0-9a-f]{64}", first.key)
    assert first.compile_ms > 0 and first.job_id.startswith("j-")
    second = client.compile(ADD, bindings=add_bindings(33, 65), target="cpu")
    assert second.outcome == "hit" and second.cache_hit
    assert second.key == first.key
    # Other bindings: another kernel.
    third = client.compile(ADD, bindings=add_bindings(33, 66), target="cpu")
    assert third.key != first.key


def test_identical_concurrent_compiles_join_one_job(client):
    b = add_bindings(41, 129)
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        arts = list(pool.map(lambda _: client.compile(ADD, bindings=b, target="cpu"), range(6)))
    outcomes = sorted(a.outcome for a in arts)
    assert len({a.key for a in arts}) == 1
    assert outcomes.count("miss") == 1, outcomes
    assert "joined" in outcomes, outcomes


def test_artifact_bytes_match_their_digests(client):
    art = client.compile(ADD, bindings=add_bindings(33, 65), target="cpu", emit_source=True)
    assert art.binary_kind == "so"
    so = art.binary
    assert so[:4] == b"\x7fELF"
    by_kind = {f.kind: f for f in art.metadata.files}
    files = client.get_artifact(art.key)  # every file
    assert set(files) >= {"so", "source", "ir"}
    for f in art.metadata.files:
        name = {v: k for k, v in kiln.client._KINDS.items()}[f.kind]
        data = files["so" if name == "shared_object" else ("ir" if name == "ir_text" else name)]
        assert hashlib.sha256(data).hexdigest() == f.blob_digest
        assert len(data) == f.size_bytes
    assert files["so"] == so
    # Small chunks stream the same bytes.
    assert client.get_artifact(art.key, kinds=["so"], chunk_bytes=1000)["so"] == so
    assert b"kiln_kernel" in files["source"]
    assert len(by_kind) == len(art.metadata.files)


def test_launch_metadata(client):
    art = client.compile(ADD, bindings=add_bindings(33, 65), target="cpu")
    lp = art.launch
    assert lp.kernel_symbol
    assert [p.name for p in lp.params] == ["A", "B", "C"]
    assert [p.dtype for p in lp.params] == ["float16"] * 3
    assert [p.is_output for p in lp.params] == [False, False, True]
    assert lp.params[0].shape == ("33", "65")
    assert lp.grid == ("2", "3", "1")  # ceildiv(65, 64), ceildiv(33, 16)
    assert lp.block == (256, 1, 1)


def expected_diagnostic(path):
    m = re.match(r"# EXPECT: (\d+):(\d+): (.*)", path.read_text())
    b = re.search(r"^# BIND: (.*)$", path.read_text(), re.M)
    binds = dict(w.split("=") for w in b.group(1).split()) if b else {}
    return int(m.group(1)), int(m.group(2)), m.group(3), {k: int(v) for k, v in binds.items()}


@pytest.mark.parametrize("name", ["001_unknown_name.py", "011_copy_shape_mismatch.py",
                                  "020_syntax_error.py", "029_float_grid.py"])
def test_bad_program_raises_compile_error_with_location(client, name):
    path = REPO / "tests" / "bad_programs" / name
    line, col, message, binds = expected_diagnostic(path)
    with pytest.raises(kiln.CompileError) as info:
        client.compile(path, bindings=binds, target="cpu")
    e = info.value
    assert isinstance(e, kiln.InvalidArgument) and isinstance(e, kiln.KilnError)
    assert e.code == grpc.StatusCode.INVALID_ARGUMENT
    d = e.diagnostics[0]
    assert (d.line, d.col) == (line, col)
    assert d.file == str(path)
    assert d.message.startswith(message.rstrip()[:40])
    assert d.rendered in str(e)


def test_source_text_is_named_in_diagnostics(client):
    src = (REPO / "tests" / "bad_programs" / "001_unknown_name.py").read_text()
    with pytest.raises(kiln.CompileError) as info:
        client.compile(source=src, file_name="mine.py", bindings={"N": 256, "block": 64})
    assert info.value.diagnostics[0].rendered.startswith("mine.py:13:19: ")
    # str() quotes line 13 with a caret under column 19; details stay one line.
    line13 = src.split("\n")[12]
    shown = str(info.value).split("\n")
    assert shown[0] == info.value.details
    assert shown[1] == f"  13 | {line13}"
    assert shown[2] == "     | " + "".join("\t" if c == "\t" else " " for c in line13[:18]) + "^"


def test_source_snippets_render_like_the_cli():
    src = "a = 1\n\tx = 'äö' + T.bad\n"
    col = len("\tx = 'äö' + ".encode()) + 1
    text = kiln.errors.with_source_snippets(f"t.py:2:{col}: no\nu.py:1:1: other", "t.py", src)
    assert text == (f"t.py:2:{col}: no\n"
                    "  2 | \tx = 'äö' + T.bad\n"
                    "    | \t" + " " * len("x = 'äö' + ") + "^\n"
                    "u.py:1:1: other")
    assert kiln.errors.with_source_snippets("t.py:9:1: past", "t.py", src) == "t.py:9:1: past"
    long = "a" * 300 + "X" + "b" * 300
    lines = kiln.errors.with_source_snippets("f:1:301: x", "f", long).split("\n")
    assert lines[1].index("X") == lines[2].index("^")


def test_missing_binding_is_invalid_argument(client):
    with pytest.raises(kiln.InvalidArgument):
        client.compile(ADD, bindings={"M": 10}, target="cpu")


GROUPED = """import tilelang
import tilelang.language as T


@tilelang.jit
def grouped(A, sizes, block):
    A: T.Tensor((sum(sizes), len(sizes)), T.float32)
    with T.Kernel(sum((s + block - 1) // block for s in sizes), threads=32) as bx:
        A[bx, 0] = sizes[-1]
"""


def test_list_binding_travels_to_the_frontend(client):
    # A list of ints (grouped GEMM's group sizes) shapes the kernel; a tuple of the
    # same ints gives the same kernel, other ints another one.
    art = client.compile(source=GROUPED, file_name="grouped.py",
                         bindings={"sizes": [37, 64, 5], "block": 16})
    assert [p.shape for p in art.launch.params] == [("106", "3")]
    assert art.launch.grid == ("8", "1", "1")
    same = client.compile(source=GROUPED, file_name="grouped.py",
                          bindings={"sizes": (37, 64, 5), "block": 16})
    assert same.key == art.key
    other = client.compile(source=GROUPED, file_name="grouped.py",
                           bindings={"sizes": [37, 64, 6], "block": 16})
    assert other.key != art.key
    with pytest.raises(kiln.InvalidArgument, match="binding 'sizes': a list of 4097"):
        client.compile(source=GROUPED, file_name="grouped.py",
                       bindings={"sizes": [1] * 4097, "block": 16})
    with pytest.raises(TypeError, match="list bindings hold ints"):
        client.compile(source=GROUPED, file_name="grouped.py",
                       bindings={"sizes": [1.5], "block": 16})


def test_unreadable_file_is_a_clear_error(client):
    with pytest.raises(kiln.InvalidArgument, match="cannot read"):
        client.compile("/nonexistent/kernel.py", bindings={})


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unreachable_server_raises_unavailable():
    c = kiln.Client(f"127.0.0.1:{free_port()}", timeout=10)
    with pytest.raises(kiln.Unavailable) as info:
        c.devices()
    assert info.value.code == grpc.StatusCode.UNAVAILABLE
    assert "127.0.0.1" in str(info.value)
    with pytest.raises(kiln.Unavailable):
        c.compile(ADD, bindings=add_bindings(8, 8))
    # Retries back off and still end in the typed error.
    with pytest.raises(kiln.Unavailable):
        kiln.Client(f"127.0.0.1:{free_port()}", retries=2).ping()


def test_default_address_comes_from_kiln_server(monkeypatch, daemon):
    monkeypatch.setenv("KILN_SERVER", daemon.address)
    assert kiln.Client().address == daemon.address
    assert kiln.Client().ping()
    monkeypatch.delenv("KILN_SERVER")
    assert kiln.Client().address == kiln.DEFAULT_ADDRESS


def test_not_found_and_invalid_keys(client):
    with pytest.raises(kiln.NotFound):
        client.get_artifact("0" * 64)
    with pytest.raises(kiln.InvalidArgument):
        client.get_artifact("not-a-key")
    with pytest.raises(kiln.NotFound):
        client.job("j-0000000000000000")


def test_tls_to_a_plaintext_server_fails_typed(daemon, tmp_path):
    # TLS (system roots) against a plaintext server: the handshake cannot succeed.
    c = kiln.Client(daemon.address, tls=True, timeout=5)
    with pytest.raises((kiln.Unavailable, kiln.DeadlineExceeded)):
        c.ping()


def test_devices_version_and_stats(client):
    devs = client.devices()
    assert "cpu" in [d.id for d in devs]
    v = client.version()
    assert "cpu" in list(v.targets)
    client.compile(ADD, bindings=add_bindings(33, 65))
    assert client.cache_stats().entries >= 1


def test_async_compile_then_watch_and_jobs(client):
    art = client.compile(ADD, bindings=add_bindings(19, 200), target="cpu", wait=False)
    assert art.job_id.startswith("j-")
    states = [j.state for j in client.watch(art.job_id)]
    assert states[-1] == "succeeded", states
    job = client.job(art.job_id)
    assert job.kind == "compile" and job.done and job.key
    assert art.job_id in [j.id for j in client.jobs(limit=100)]
    # Cancelling a finished job leaves it as it was.
    assert client.cancel(art.job_id).state == "succeeded"
    # The compile is in the cache now.
    assert client.compile(ADD, bindings=add_bindings(19, 200)).outcome == "hit"


def test_benchmark_on_cpu_records_history(client):
    b = add_bindings(33, 65)
    r = client.benchmark(ADD, bindings=b, target="cpu", trials=5, warmup=1,
                         history="pytest-add", regression=True)
    assert r.device_id == "cpu" and len(r.samples_us) == 5
    assert 0 < r.min_us <= r.median_us <= r.max_us
    assert r.verdict == "no_baseline"
    again = client.benchmark(ADD, bindings=b, target="cpu", trials=5, warmup=1,
                             history="pytest-add", regression={"max_slowdown": 10.0})
    assert again.verdict in ("pass", "improvement", "regression")
    assert again.baseline_median_us > 0
    by_key = client.benchmark(key=r.artifact_key, trials=2)
    assert by_key.artifact_key == r.artifact_key and len(by_key.samples_us) == 2
    labelled = client.benchmark(key=r.artifact_key, trials=2, history="pytest-add",
                                label="sha-1")
    assert labelled.median_us > 0
    runs = client.measurements("pytest-add")
    assert len(runs.entries) == 3 and list(runs.labels) == ["sha-1"]
    assert runs.entries[0].label == "sha-1"  # newest first
    only = client.measurements("pytest-add", label="sha-1")
    assert [e.label for e in only.entries] == ["sha-1"]


def test_tune_on_cpu_then_best(client):
    b = {"M": 77, "N": 130}
    space = {"block_M": [16, 32], "block_N": [32, 64], "threads": [256]}
    events = []
    res = client.tune(ADD, bindings=b, target="cpu", strategy="grid", space=space, repeats=3,
                      on_progress=lambda p, job: events.append((p.candidates_measured, job)))
    assert res.job_id.startswith("j-") and events
    assert res.best is not None and res.best.status == "ok"
    assert len(res.measurements) == 4
    assert res.config["block_M"] in (16, 32) and res.config["block_N"] in (32, 64)
    assert res.best.median_us == min(m.median_us for m in res.measurements if m.status == "ok")
    best = client.best(ADD, bindings=b, target="cpu")
    assert best is not None and best.config == res.config
    assert client.best(ADD, bindings={"M": 78, "N": 130}, target="cpu") is None
    # Compile with the stored best config: the tuned kernel's key.
    art = client.compile(ADD, bindings=b, target="cpu",
                         use_best_for_device=res.best.device_model)
    assert art.key == res.best.key
    # Again with 5 repeats: the history answers (3 samples each) unless remeasure.
    again = client.tune(ADD, bindings=b, target="cpu", strategy="grid", space=space, repeats=5)
    assert sorted(m.samples for m in again.measurements) == [3] * 4
    fresh = client.tune(ADD, bindings=b, target="cpu", strategy="grid", space=space, repeats=5,
                        remeasure=True)
    assert sorted(m.samples for m in fresh.measurements) == [5] * 4
    assert all(m.status == "ok" for m in fresh.measurements)
    with pytest.raises(ValueError):
        client.tune(ADD, bindings=b, strategy="annealing")


def test_best_configs_are_kept_per_kernel_variant(client):
    # Options that change the kernel (here the host compiler's -O level) tune into a best
    # of their own: best() finds it with the same options only.
    b = {"M": 79, "N": 130}
    space = {"block_M": [16, 32], "block_N": [64], "threads": [256]}
    res = client.tune(ADD, bindings=b, target="cpu", strategy="grid", space=space, repeats=2,
                      options={"opt_level": 2})
    assert res.best is not None and res.best.status == "ok"
    assert client.best(ADD, bindings=b, target="cpu") is None
    best = client.best(ADD, bindings=b, target="cpu", options={"opt_level": 2})
    assert best is not None and best.config == res.config
    # An unknown pass option is the daemon's to refuse, naming it.
    with pytest.raises(kiln.errors.InvalidArgument, match="gemm=magic"):
        client.tune(ADD, bindings=b, target="cpu", strategy="grid", space=space,
                    pass_options=["gemm=magic"])
