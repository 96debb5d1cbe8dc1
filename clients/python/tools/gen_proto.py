#!/usr/bin/env python3
"""Regenerates kiln/_proto/v1/{program,service}_pb2.py from proto/kiln/v1/.

The generated modules are checked in (the H200 machine and PYTHONPATH users have
no protoc and no build step); tests/python/test_proto_fresh.py runs this into a
temporary folder and fails when the checked-in copy differs.

Only the message modules are generated, with protoc's own --python_out (no
grpc_tools: its service code pins a grpcio version). The one import between
them, `from kiln.v1 import program_pb2`, is made relative so the modules live
inside the `kiln` package.

Usage: gen_proto.py [--protoc PROTOC] [--out DIR]   (DIR default: the package's)
"""
import argparse
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent.parent
PROTOS = ("kiln/v1/program.proto", "kiln/v1/service.proto")
# protoc 3.21's output is what is checked in; another version writes other text.
EXPECTED_PROTOC = "libprotoc 3.21."


def fix_imports(text):
    return re.sub(r"^from kiln\.v1 import (\w+_pb2) as ", r"from . import \1 as ", text,
                  flags=re.M)


def generate(protoc, out_dir):
    out_dir = pathlib.Path(out_dir)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([protoc, "-I", str(REPO / "proto"), "--python_out=" + tmp]
                       + [str(REPO / "proto" / p) for p in PROTOS], check=True)
        out_dir.mkdir(parents=True, exist_ok=True)
        for p in PROTOS:
            name = pathlib.Path(p).with_suffix("").name + "_pb2.py"
            text = (pathlib.Path(tmp) / "kiln" / "v1" / name).read_text()
            (out_dir / name).write_text(fix_imports(text))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protoc", default=shutil.which("protoc") or "protoc")
    ap.add_argument("--out", default=str(HERE.parent / "kiln" / "_proto" / "v1"))
    args = ap.parse_args()
    version = subprocess.run([args.protoc, "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    if not version.startswith(EXPECTED_PROTOC):
        print(f"gen_proto: {version} is not protoc 3.21 (Debian 12's); the checked-in files "
              "come from 3.21, whose output loads under protobuf 4.21 through 7", file=sys.stderr)
        return 2
    generate(args.protoc, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
