"""Fixtures of the Python client's tests: a real kilnd on a loopback port with a
temporary cache (started once per session), the example programs, and the kiln
package (the installed one, else clients/python of this checkout).

kilnd is found in $KILN_BIN_DIR, else $KILN_BUILD_DIR, else build/ of the checkout.
"""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import importlib.util

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]

try:
    import kiln  # noqa: F401
except ImportError:
    sys.path.insert(0, str(REPO / "clients" / "python"))
    import kiln  # noqa: F401


def pytest_report_header(config):
    import google.protobuf
    import grpc
    return (f"kiln from {os.path.dirname(kiln.__file__)}; grpcio {grpc.__version__}, "
            f"protobuf {google.protobuf.__version__}")


def kiln_binary(name):
    for var in ("KILN_BIN_DIR", "KILN_BUILD_DIR"):
        d = os.environ.get(var)
        if d and (pathlib.Path(d) / name).exists():
            return str(pathlib.Path(d) / name)
    p = REPO / "build" / name
    if p.exists():
        return str(p)
    pytest.fail(f"no {name}: set KILN_BIN_DIR or KILN_BUILD_DIR to the folder holding it "
                "(ctest passes KILN_BUILD_DIR)")


class Daemon:
    """kilnd as a child process: --listen 127.0.0.1:0, the port read from its log."""

    def __init__(self, extra_args=(), devices="none"):
        self.cache_dir = tempfile.mkdtemp(prefix="kiln-pytest-")
        self.binary = kiln_binary("kilnd")
        self.proc = subprocess.Popen(
            [self.binary, "--listen", "127.0.0.1:0", "--cache-dir", self.cache_dir,
             "--devices", devices, "--grace-period", "2s", *extra_args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.log = []
        self.address = None
        deadline = time.monotonic() + 30
        for line in self.proc.stdout:
            self.log.append(line)
            m = re.search(r"listening on (\S+)", line)
            if m:
                self.address = m.group(1)
                break
            if time.monotonic() > deadline:
                break
        if self.address is None:
            self.stop()
            raise RuntimeError("kilnd did not start:\n" + "".join(self.log))
        # Keep draining its log so a full pipe never blocks it.
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self):
        for line in self.proc.stdout:
            self.log.append(line)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.cache_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def daemon():
    d = Daemon(devices=os.environ.get("KILN_TEST_DEVICES", "none"))
    yield d
    d.stop()


@pytest.fixture(scope="session")
def client(daemon):
    c = kiln.Client(daemon.address, timeout=300)
    kiln.set_default_client(c)
    yield c
    c.close()


class CountingClient(kiln.Client):
    """A real Client that counts its Compile calls."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.compiles = 0

    def compile(self, *a, **k):
        self.compiles += 1
        return super().compile(*a, **k)


@pytest.fixture
def counting_client(daemon):
    c = CountingClient(daemon.address, timeout=300)
    yield c
    c.close()


def example_path(rel):
    return REPO / "examples" / rel


_loaded = {}


def load_example(rel):
    """The module of examples/<rel>, imported with the tilelang shim."""
    if rel not in _loaded:
        kiln.install_tilelang_shim()
        name = "kiln_example_" + re.sub(r"\W", "_", rel)
        spec = importlib.util.spec_from_file_location(name, example_path(rel))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _loaded[rel] = mod
    return _loaded[rel]


def bind_line(rel, tag="test-bind"):
    """The {name: value} of an example's `# kiln: test-bind` (or `bind`) line."""
    text = example_path(rel).read_text()
    m = re.search(rf"^# kiln: {tag} (.*)$", text, re.M)
    out = {}
    for word in m.group(1).split():
        k, v = word.split("=", 1)
        for conv in (int, float):
            try:
                v = conv(v)
                break
            except ValueError:
                pass
        if v in ("True", "False"):
            v = v == "True"
        out[k] = v
    return out
