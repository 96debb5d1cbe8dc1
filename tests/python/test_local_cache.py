"""The Python client's cache directory (KILN_CLIENT_CACHE), in the C++ client's layout:
a second Client or process gets the binary from disk, also with the daemon stopped;
damaged files are refetched."""
import hashlib
import os
import struct
import subprocess
import sys
import textwrap

import pytest

import kiln
from kiln._proto.v1 import service_pb2 as pb
from conftest import REPO, Daemon, example_path, kiln_binary

ADD = str(example_path("elementwise/add.py"))
BIND = dict(M=51, N=97, block_M=16, block_N=64)


def test_second_client_and_no_daemon_are_served_from_disk(tmp_path):
    cache = tmp_path / "client-cache"
    d = Daemon()
    try:
        first = kiln.Client(d.address, cache_dir=cache)
        art = first.compile(ADD, bindings=BIND, target="cpu")
        assert art.outcome == "miss"
        so = art.binary
        assert first.local_stats["artifact_fetches"] == 1
        # The C++ client's layout: metadata, one file per kind, the compile memo.
        adir = cache / "artifacts" / art.key
        meta = pb.ArtifactMetadata()
        meta.ParseFromString((adir / "metadata.pb").read_bytes())
        assert meta.key == art.key
        assert (adir / "so").read_bytes() == so
        assert (adir / "kir").exists()                      # every file, fetched once
        [memo] = list((cache / "compile").iterdir())
        key, written, _ = memo.read_text().split("\n")
        assert key == art.key and int(written) > 0
        req = pb.CompileRequest(target="cpu")
        req.program.CopyFrom(kiln.program_source(ADD, bindings=BIND))
        req.options.CopyFrom(pb.CompileOptions())
        setattr(req, "async", False)
        h = hashlib.sha256()
        for f in (d.address.encode(), req.SerializeToString(deterministic=True)):
            h.update(struct.pack("<Q", len(f)) + f)
        assert memo.name == h.hexdigest()
        assert not [p for p in cache.rglob("*.tmp.*")]      # no temporary left behind

        # Another Client on the same folder: answered locally, no byte over the network.
        second = kiln.Client(d.address, cache_dir=cache)
        again = second.compile(ADD, bindings=BIND, target="cpu")
        assert again.outcome == "local" and again.key == art.key
        assert again.launch == art.launch
        assert again.binary == so
        assert second.local_stats == {"compile_hits": 1, "artifact_hits": 1,
                                      "artifact_fetches": 0}

        # A damaged file is ignored, fetched again and repaired.
        (adir / "so").write_bytes(b"\x7fELF not really")
        third = kiln.Client(d.address, cache_dir=cache, compile_memo_ttl=0)
        art3 = third.compile(ADD, bindings=BIND, target="cpu")
        assert art3.outcome == "hit"                        # ttl 0: the daemon answers
        assert art3.binary == so and third.local_stats["artifact_fetches"] == 1
        assert third.cache.corrupt_files == 1
        assert (adir / "so").read_bytes() == so
        # A damaged memo is ignored too.
        memo.write_text("not a key\n")
        assert kiln.Client(d.address, cache_dir=cache).compile(
            ADD, bindings=BIND, target="cpu").outcome == "hit"
    finally:
        d.stop()

    # The daemon is gone: a request compiled before is still answered, with its binary.
    offline = kiln.Client(d.address, cache_dir=cache, timeout=5)
    art4 = offline.compile(ADD, bindings=BIND, target="cpu")
    assert art4.outcome == "local" and art4.binary == so
    with pytest.raises(kiln.Unavailable):
        offline.compile(ADD, bindings=dict(BIND, M=52), target="cpu")
    # Without the cache directory nothing is answered.
    with pytest.raises(kiln.Unavailable):
        kiln.Client(d.address, cache_dir="", timeout=5).compile(ADD, bindings=BIND)


JIT_SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np
    import kiln
    kiln.install_tilelang_shim()
    import importlib.util
    spec = importlib.util.spec_from_file_location("add_example", sys.argv[1])
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    client = kiln.Client(timeout=5)          # KILN_SERVER and KILN_CLIENT_CACHE
    add = kiln.jit(ex.add, client=client)
    A = np.arange(43 * 75, dtype=np.float16).reshape(43, 75) % 7
    B = np.ones((43, 75), np.float16)
    C = add(A, B, block_M=16, block_N=32)
    assert (C == ex.ref_program(A, B)).all()
    art = add.compile("cpu", {"M": 43, "N": 75, "block_M": 16, "block_N": 32,
                              "dtype": "float16"})
    print(art.outcome, client.local_stats["artifact_fetches"])
''')


def test_a_second_process_runs_a_jit_kernel_without_the_daemon(tmp_path):
    kiln_root = os.path.dirname(os.path.dirname(kiln.__file__))
    env = dict(os.environ, KILN_CLIENT_CACHE=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(filter(None, [kiln_root,
                                                        os.environ.get("PYTHONPATH")])))
    script = tmp_path / "run.py"
    script.write_text(JIT_SCRIPT)
    d = Daemon()
    try:
        env["KILN_SERVER"] = d.address
        out = subprocess.run([sys.executable, str(script), ADD], env=env, capture_output=True,
                             text=True, timeout=300, cwd=REPO)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["miss", "1"]
    finally:
        d.stop()
    out = subprocess.run([sys.executable, str(script), ADD], env=env, capture_output=True,
                         text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["local", "0"]


def test_artifacts_the_cpp_cli_stored_are_read_without_the_daemon(tmp_path):
    # One folder for both clients: what `kiln compile --local-cache` fetched, the Python
    # client reads (and verifies) with the daemon gone.
    cache = tmp_path / "shared"
    so_path = tmp_path / "add.so"
    d = Daemon()
    try:
        out = subprocess.run(
            [kiln_binary("kiln"), "compile", ADD, *[f"--bind={k}={v}" for k, v in BIND.items()],
             "--target", "cpu", "-o", str(so_path), "--server", d.address,
             "--local-cache", str(cache)], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        key = kiln.Client(d.address).compile(ADD, bindings=BIND, target="cpu").key
    finally:
        d.stop()
    offline = kiln.Client(d.address, cache_dir=cache, timeout=5)
    files = offline.get_artifact(key, kinds=["so"])
    assert files["so"] == so_path.read_bytes()
    assert offline.local_stats["artifact_fetches"] == 0
