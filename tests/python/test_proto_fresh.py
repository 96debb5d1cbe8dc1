"""The checked-in message modules (clients/python/kiln/_proto/v1/) are what protoc
3.21 makes of proto/kiln/v1/ today, and they load under this protobuf."""
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

PKG = REPO / "clients" / "python"


def protoc_321():
    protoc = shutil.which("protoc")
    if not protoc:
        return None
    out = subprocess.run([protoc, "--version"], capture_output=True, text=True).stdout
    return protoc if out.startswith("libprotoc 3.21.") else None


@pytest.mark.skipif(protoc_321() is None,
                    reason="needs Debian 12's protoc 3.21 (the checked-in files are its output)")
def test_generated_modules_are_fresh(tmp_path):
    subprocess.run([sys.executable, str(PKG / "tools" / "gen_proto.py"), "--out", str(tmp_path)],
                   check=True)
    for name in ("program_pb2.py", "service_pb2.py"):
        fresh = (tmp_path / name).read_text()
        kept = (PKG / "kiln" / "_proto" / "v1" / name).read_text()
        assert fresh == kept, (f"kiln/_proto/v1/{name} is stale: run "
                               "clients/python/tools/gen_proto.py and commit the result")


def test_messages_round_trip():
    from kiln._proto.v1 import service_pb2 as pb
    req = pb.CompileRequest(target="cpu")
    req.program.tilelang_source = "x"
    req.program.bindings["M"].int_value = 7
    setattr(req, "async", True)
    back = pb.CompileRequest.FromString(req.SerializeToString())
    assert back.program.bindings["M"].int_value == 7 and getattr(back, "async")
    assert pb.DESCRIPTOR.services_by_name["Kiln"].methods_by_name["Compile"]


def test_stub_covers_every_rpc():
    from kiln._proto.v1 import service_pb2 as pb
    from kiln._stub import METHODS
    svc = pb.DESCRIPTOR.services_by_name["Kiln"]
    assert sorted(METHODS) == sorted(m.name for m in svc.methods)
    for m in svc.methods:
        streaming, req, resp = METHODS[m.name]
        assert req.DESCRIPTOR.full_name == m.input_type.full_name
        assert resp.DESCRIPTOR.full_name == m.output_type.full_name
        assert streaming == m.server_streaming
