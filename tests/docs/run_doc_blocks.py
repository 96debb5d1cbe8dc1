#!/usr/bin/env python3
"""Runs the shell blocks of Markdown files that are marked runnable, so that a
document cannot drift from the code (ctest: docs/blocks, label docs).

A block is runnable when the line before its fence is the comment

    <!-- runnable -->            (or <!-- runnable: kilnd -->)

and its fence is ```sh, ```bash or ```shell. The block runs as written, with
bash -euo pipefail, from a fresh sandbox folder that looks like a checkout:
every top-level entry of the repository is linked there, and build/ and
build-release/ both point at --bin-dir, so `build-release/kiln ...` runs the
binaries under test. Files a block writes land in the sandbox, and the
blocks of one Markdown file share it, in order (a later block may read what
an earlier one wrote). HOME is a folder of the sandbox, and /usr/bin comes
first on PATH, so `python3` is Debian's, with the packages that
scripts/install_deps.sh installs, as on a fresh Debian 12 machine.

`<!-- runnable: kilnd -->` blocks need a daemon: one kilnd of --bin-dir is
started for the whole run on a free loopback port with a fresh cache, and
KILN_SERVER names it (so the blocks need no --server flag, as a user's with
the default 127.0.0.1:7070 do not).

    run_doc_blocks.py --repo DIR --bin-dir DIR FILE.md...
    run_doc_blocks.py --list FILE.md...      (the blocks it would run)

Prints one line per block and 'N passed, N failed'; exits 1 if any failed or
a runnable marker is not followed by a shell fence.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MARKER = re.compile(r"^\s*<!--\s*runnable(?::\s*(?P<needs>[\w, -]+))?\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)")
SHELLS = {"sh", "bash", "shell"}
BLOCK_TIMEOUT_S = 600


class Block:
    def __init__(self, path, line, needs, body):
        self.path = path
        self.line = line  # 1-based line of the block's first command
        self.needs = needs
        self.body = body


def parse(path):
    """Returns (blocks, errors) of one Markdown file."""
    blocks, errors = [], []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        m = MARKER.match(lines[i])
        if not m:
            i += 1
            continue
        needs = {n.strip() for n in (m.group("needs") or "").split(",") if n.strip()}
        unknown = needs - {"kilnd"}
        if unknown:
            errors.append(f"{path}:{i + 1}: unknown requirement {sorted(unknown)} (known: kilnd)")
        fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if not fence or fence.group("lang") not in SHELLS:
            errors.append(f"{path}:{i + 1}: a runnable marker must precede a ```sh/```bash fence")
            i += 1
            continue
        start = i + 2
        end = start
        while end < len(lines) and not lines[end].strip().startswith("```"):
            end += 1
        if end == len(lines):
            errors.append(f"{path}:{i + 2}: the fence is not closed")
            break
        indent = len(fence.group("indent"))
        body = "\n".join(l[indent:] if l[:indent].strip() == "" else l for l in lines[start:end])
        blocks.append(Block(path, start + 1, needs, body))
        i = end + 1
    return blocks, errors


def make_sandbox(root, repo, bin_dir):
    os.makedirs(os.path.join(root, "home"))
    for entry in os.listdir(repo):
        if entry in (".git", "build", "build-release") or entry.startswith("build-"):
            continue
        os.symlink(os.path.join(repo, entry), os.path.join(root, entry))
    for name in ("build", "build-release"):
        os.symlink(bin_dir, os.path.join(root, name))


class Daemon:
    def __init__(self, bin_dir, work):
        self.address = None  # kilnd picks a free port (0) and prints it
        self.log_path = os.path.join(work, "kilnd.log")
        self.log = open(self.log_path, "w")
        env = dict(os.environ, HOME=os.path.join(work, "daemon-home"))
        os.makedirs(env["HOME"])
        self.proc = subprocess.Popen(
            [os.path.join(bin_dir, "kilnd"), "--listen", "127.0.0.1:0",
             "--cache-dir", os.path.join(work, "daemon-cache")],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kilnd exited {self.proc.returncode}: {self.tail()}")
            with open(self.log_path) as f:
                m = re.search(r" listening on (127\.0\.0\.1:\d+)", f.read())
            if m:
                self.address = m.group(1)
                return
            time.sleep(0.1)
        raise RuntimeError(f"kilnd did not start within 60 s: {self.tail()}")

    def tail(self):
        with open(self.log_path) as f:
            return "".join(f.readlines()[-20:])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo")
    ap.add_argument("--bin-dir")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()

    all_blocks, errors = [], []
    for f in args.files:
        b, e = parse(f)
        all_blocks += b
        errors += e
    if args.list:
        for b in all_blocks:
            print(f"{b.path}:{b.line}: {b.body.splitlines()[0] if b.body else ''}")
        for e in errors:
            print(e)
        return 1 if errors else 0
    if not args.repo or not args.bin_dir:
        ap.error("--repo and --bin-dir are needed to run blocks")
    repo = os.path.abspath(args.repo)
    bin_dir = os.path.abspath(args.bin_dir)

    work = tempfile.mkdtemp(prefix="kiln-docs-")
    daemon = None
    passed = failed = 0
    try:
        env = dict(os.environ)
        if any("kilnd" in b.needs for b in all_blocks):
            daemon = Daemon(bin_dir, work)
            env["KILN_SERVER"] = daemon.address
        sandboxes = {}
        for b in all_blocks:
            if b.path not in sandboxes:
                sandboxes[b.path] = os.path.join(work, f"sandbox{len(sandboxes)}")
                make_sandbox(sandboxes[b.path], repo, bin_dir)
            cwd = sandboxes[b.path]
            block_env = dict(env, HOME=os.path.join(cwd, "home"),
                             PATH="/usr/bin:" + env.get("PATH", ""))
            rel = os.path.relpath(b.path, repo) if os.path.isabs(b.path) else b.path
            start = time.time()
            try:
                r = subprocess.run(["bash", "-euo", "pipefail", "-c", b.body], cwd=cwd,
                                   env=block_env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=BLOCK_TIMEOUT_S)
                ok, out = r.returncode == 0, r.stdout.decode(errors="replace")
                why = f"exit {r.returncode}"
            except subprocess.TimeoutExpired as e:
                ok, out = False, (e.stdout or b"").decode(errors="replace")
                why = f"timed out after {BLOCK_TIMEOUT_S} s"
            took = time.time() - start
            if ok:
                passed += 1
                print(f"ok   {rel}:{b.line} ({took:.1f} s)")
            else:
                failed += 1
                print(f"FAIL {rel}:{b.line} ({why}, {took:.1f} s)\n---- block\n{b.body}\n"
                      f"---- output\n{out[-4000:]}----")
        for e in errors:
            failed += 1
            print(f"FAIL {e}")
        if daemon and failed:
            print(f"---- kilnd log (last lines)\n{daemon.tail()}")
    finally:
        if daemon:
            daemon.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
