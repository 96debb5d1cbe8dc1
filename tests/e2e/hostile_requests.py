#!/usr/bin/env python3
"""Issue 27's bar against a real kilnd on loopback: hostile requests cost their
sender an error and nobody else anything.

  1. kilnd starts (loopback, a temporary cache, --grace-period), one program is
     compiled for the CPU target and then answers as a cache HIT;
  2. the hostile cases below run 8 at a time while the main thread asks for
     the warm entry again and again, timing each hit;
  3. each hostile case must get a clean error code (never OK, UNKNOWN,
     INTERNAL, UNAVAILABLE, CANCELLED, or a DEADLINE_EXCEEDED of the client's
     own deadline: the daemon must answer before it) with a non-empty message;
     program errors carry a location ("file:line:col");
  4. the daemon still runs with the same PID, the warm entry is still a HIT with
     the same key, the hits' p50 is within --hit-p50-ms and their max within
     --hit-max-ms (generous bounds for a loaded CI machine; the numbers are
     printed). On two cores the hitter shares the CPU with eight hostile
     requests, so a hit takes several times its idle 10-20 ms without waiting
     on anything (72 ms p50 was seen); a hit queued behind hostile work waits
     out that work (hundreds of ms to the client's deadline), which the
     150 ms p50 still catches;
  5. with unbounded requests still running, SIGTERM ends kilnd within the grace
     period plus --exit-slack-s.

Classes (issue 27): chain (item 1, every left-deep shape, sizes varied), work
(item 2, unbounded compile-time work), narrow (item 3, tile sizes past int32),
wire (malformed protobuf), huge (a huge source), amplify (requests of every
method that takes a program, each some 12 MiB of empty wire IR sub-messages
that protobuf would parse to gigabytes: RESOURCE_EXHAUSTED before any parse).
After the cases, kilnd's peak RSS must stay within --max-rss-mib. --xfail CLASS (repeatable)
reports a class's failures as XFAIL without failing the run (for a class whose
fix has not landed); a passing xfail class is reported as XPASS.

  hostile_requests.py [--kilnd build/kilnd] [--xfail work] ...
Exit status 0: every check passed (xfail classes aside); 1: a check failed;
2: kilnd did not start.
"""
import argparse
import concurrent.futures
import os
import pathlib
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "clients" / "python"))

import grpc  # noqa: E402

from kiln._proto.v1 import program_pb2 as ir_pb  # noqa: E402
from kiln._proto.v1 import service_pb2 as pb  # noqa: E402

KERNEL = '''import tilelang
import tilelang.language as T


@tilelang.jit
def scale(A, block_M=32, dtype=T.float32):
    M = T.const("M")
    A: T.Tensor((M,), dtype)
    B = T.empty((M,), dtype)
    x = 1
    l = ()
    f = T
    # HOSTILE
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        for i in T.Parallel(block_M):
            if bx * block_M + i < M:
                B[bx * block_M + i] = A[bx * block_M + i] * 2.0
    return B
'''
LOCATED = re.compile(r"^[^:\s]+\.py:\d+:\d+: ")
CLEAN = {"INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "OUT_OF_RANGE",
         "DEADLINE_EXCEEDED"}


def program(hostile, *, block_m="32", file_name="hostile.py", bindings=None, edit=None):
    src = KERNEL if edit is None else KERNEL.replace(*edit)
    src = src.replace("    # HOSTILE\n", "".join("    " + line + "\n" for line in hostile.split("\n")))
    src = src.replace("block_M=32", "block_M=" + block_m)
    req = pb.CompileRequest(target="cpu")
    req.program.tilelang_source = src
    req.program.file_name = file_name
    req.program.bindings["M"].int_value = 64
    for k, v in (bindings or {}).items():
        req.program.bindings[k].int_value = v
    return req.SerializeToString()


def length_delimited(number, body):
    tag, size, head = (number << 3) | 2, len(body), bytearray()
    head.append(tag)
    while size >= 0x80:
        head.append((size & 0x7F) | 0x80)
        size >>= 7
    head.append(size)
    return bytes(head) + body


def empty_exprs(cls, n):
    """A `cls` request whose program's wire IR has a workspace shaped by one
    Expr with n empty args (2 bytes each on the wire, ~100 once parsed)."""
    args = length_delimited(ir_pb.Expr.DESCRIPTOR.fields_by_name["args"].number, b"") * n
    body = length_delimited(ir_pb.Buffer.DESCRIPTOR.fields_by_name["shape"].number, args)
    body = length_delimited(ir_pb.Program.DESCRIPTOR.fields_by_name["workspaces"].number, body)
    body = length_delimited(pb.ProgramSource.DESCRIPTOR.fields_by_name["ir"].number, body)
    request = cls(target="cpu").SerializeToString()
    return request + length_delimited(cls.DESCRIPTOR.fields_by_name["program"].number, body)


def cases(rng):
    """(class, name, serialized request, expectation[, method]) for every hostile
    shape; the method is Compile unless named.

    expectation: "located" (a clean error; INVALID_ARGUMENT with file:line:col),
    "error" (a clean error with a message), "exhausted" (RESOURCE_EXHAUSTED with
    a message), "any" (an answer or a clean error: a flat shape such as
    `a < b < c ...` or a large but valid source, which may compile).
    """
    n = lambda base: base + rng.randrange(0, base // 4)  # noqa: E731  sizes varied per run
    out = []
    # Item 1: left-deep chains of every shape, each far past the link limit.
    for name, link in [("add", "+1"), ("sub_mul", "-x*1"), ("subscript", "[0]"), ("call", "()"),
                       ("attribute", ".a"), ("compare", " < x"), ("and", " and x"), ("slice", "[0:1]"),
                       ("mixed", "[0].a()+1"), ("ifexp", " if x else x"), ("pow", "**1"),
                       ("unary", None)]:
        links = n(70000)
        if link is None:
            text = "x = " + "-" * links + "x"
        else:
            text = "x = " + ("T" if link == ".a" else "x" if link != "()" else "f") + link * links
        flat = name in ("compare", "and")  # one node with many operands, not a deep tree
        out.append(("chain", f"chain_{name}_{links}", program(text), "any" if flat else "located"))
    # Item 2: compile-time work without a bound of its own.
    depth = 64
    grow = "\n".join(["l = (l, l)"] * depth)
    out += [
        # l == l may answer at once (identity); two equal but distinct
        # 2**64-leaf trees must be compared within the budget or refused.
        ("work", "tuple_64_eq", program(grow + "\nx = l == l"), "any"),
        ("work", "tuple_64_eq_distinct",
         program(grow + "\nm = ()\n" + "\n".join(["m = (m, m)"] * depth) + "\nx = l == m"), "any"),
        ("work", "list_64_in", program("\n".join(["l = [l, l]"] * depth) + "\nx = [l] in [[l]]"), "any"),
        ("work", "list_64_str", program("\n".join(["l = [l, l]"] * depth) + "\nx = len(str(l))"), "located"),
        ("work", "tuple_64_lt", program(grow + "\nx = l < l"), "located"),
        ("work", "while_true", program("while True:\n    x = x + 1"), "located"),
        ("work", "double_recursion", program("def g(n):\n    return g(n) + g(n)\nx = g(1)"), "located"),
        ("work", "list_2_40", program("x = [0] * 2**40"), "located"),
        ("work", "str_2_40", program("x = 'ab' * 2**40"), "located"),
        ("work", "sum_range", program("x = sum(range(10**15))"), "located"),
        ("work", "big_pow", program("x = 3**(2**40)"), "located"),
        ("work", "nested_comprehension",
         program("x = [[[i * j * k for i in range(10**6)] for j in range(10**6)] for k in range(10**6)]"), "located"),
    ]
    # Item 3: tile sizes and extents that do not fit int32.
    out += [
        ("narrow", "block_M_2_31", program("", block_m="2**31"), "located"),
        ("narrow", "block_M_2_32_plus_32", program("", block_m="2**32 + 32"), "located"),
        ("narrow", "block_M_binding_2_31", program("", bindings={"block_M": 2**31}), "located"),
        ("narrow", "parallel_2_32_plus_32",
         program("", edit=("T.Parallel(block_M)", "T.Parallel(2**32 + 32)")), "located"),
        ("narrow", "serial_2_31",
         program("", edit=("for i in T.Parallel(block_M):", "for k in T.serial(2**31):\n            B[k] = 0.0\n"
                                                            "        for i in T.Parallel(block_M):")), "located"),
        ("narrow", "M_binding_2_40", program("", bindings={"M": 2**40}), "located"),
    ]
    # Malformed protobuf to the (non-raw) Compile method.
    good = program("")
    out += [
        ("wire", "truncated", good[: len(good) // 2], "error"),
        ("wire", "bad_varint", b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "error"),
        ("wire", "random_bytes", bytes(rng.randrange(256) for _ in range(4096)), "error"),
        ("wire", "wrong_wire_type", b"\x0b" + good, "error"),
        ("wire", "huge_length", b"\x0a\xff\xff\xff\xff\x07" + good, "error"),
    ]
    # Empty sub-messages by the million, to each method that takes a program
    # (rpc_fuzz, 2026-12-06: a 64 MB Benchmark like this parsed to 5.8 GB).
    for method, cls in [("Compile", pb.CompileRequest), ("Benchmark", pb.BenchmarkRequest),
                        ("Tune", pb.TuneRequest), ("LookupBest", pb.LookupBestRequest)]:
        count = n(6 << 20)  # 12-15 MB; parsed, 600-750 MB: past the 256 MiB limit
        out.append(("amplify", f"{method.lower()}_{count}_empty_exprs", empty_exprs(cls, count), "exhausted",
                    method))
    # A huge source: past the message limit, and just under it.
    out += [
        ("huge", "source_80MiB", program("x = 1\n# " + "a" * (80 << 20)), "error"),
        ("huge", "source_16MiB_statements", program("\n".join(["x = x + 1"] * ((16 << 20) // 10))), "any"),
        ("huge", "source_8MiB_one_line", program("x = '" + "a" * (8 << 20) + "'"), "any"),
    ]
    return out


class Daemon:
    def __init__(self, kilnd, grace):
        self.dir = tempfile.mkdtemp(prefix="kiln-hostile-")
        self.log_path = os.path.join(self.dir, "kilnd.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [kilnd, "--listen", "127.0.0.1:0", "--cache-dir", os.path.join(self.dir, "cache"),
             "--devices", "none", "--grace-period", f"{grace}s"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid
        self.address = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None and not self.address:
            m = re.search(r"listening on (\S+)", open(self.log_path).read())
            self.address = m.group(1) if m else None
            time.sleep(0.05)

    def tail(self, n=2000):
        return open(self.log_path, errors="replace").read()[-n:]

    def peak_rss_kib(self):
        for line in open(f"/proc/{self.pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kilnd", default=str(REPO / "build" / "kilnd"))
    ap.add_argument("--grace", type=float, default=5.0, help="kilnd --grace-period, seconds")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--deadline", type=float, default=120.0,
                    help="client deadline of a hostile call; the daemon must answer before it")
    ap.add_argument("--hit-p50-ms", type=float, default=150.0)
    ap.add_argument("--hit-max-ms", type=float, default=2000.0)
    ap.add_argument("--exit-slack-s", type=float, default=5.0)
    ap.add_argument("--max-rss-mib", type=float, default=1024.0,
                    help="kilnd's peak RSS after the hostile cases (8 requests of up to 64 MiB at once)")
    ap.add_argument("--xfail", action="append", default=[], choices=["chain", "work", "narrow", "wire", "huge", "amplify"])
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    print(f"hostile_requests: seed {seed} (--seed {seed} repeats the sizes)")
    rng = random.Random(seed)
    daemon = Daemon(args.kilnd, args.grace)
    if not daemon.address:
        print("hostile_requests: kilnd did not start:\n" + daemon.tail(), file=sys.stderr)
        daemon.cleanup()
        return 2
    failures = []  # (class, text)
    opts = [("grpc.max_send_message_length", 128 << 20), ("grpc.max_receive_message_length", 64 << 20)]
    channel = grpc.insecure_channel(daemon.address, options=opts)
    compile_raw = channel.unary_unary("/kiln.v1.Kiln/Compile")
    calls = {m: channel.unary_unary(f"/kiln.v1.Kiln/{m}") for m in ("Compile", "Benchmark", "LookupBest")}
    tune_raw = channel.unary_stream("/kiln.v1.Kiln/Tune")
    calls["Tune"] = lambda body, timeout: list(tune_raw(body, timeout=timeout))
    try:
        warm = program("")
        first = pb.CompileResponse.FromString(compile_raw(warm, timeout=300))
        second = pb.CompileResponse.FromString(compile_raw(warm, timeout=60))
        if second.outcome != pb.CACHE_OUTCOME_HIT:
            failures.append(("setup", f"the warm entry answered {second.outcome}, not HIT"))
        warm_key = second.artifact.key
        print(f"warm entry: {first.outcome} then {second.outcome}, key {warm_key[:16]}...")

        hits_ms = []
        stop = threading.Event()

        def hitter():
            while not stop.is_set():
                t0 = time.monotonic()
                try:
                    r = pb.CompileResponse.FromString(compile_raw(warm, timeout=30))
                    ok = r.outcome == pb.CACHE_OUTCOME_HIT and r.artifact.key == warm_key
                except grpc.RpcError as e:
                    ok = False
                    failures.append(("hit", f"cache hit failed during the hostiles: {e.code().name} {e.details()}"))
                hits_ms.append((time.monotonic() - t0) * 1000)
                if not ok:
                    failures.append(("hit", "the warm entry was not a HIT with its key during the hostiles"))
                time.sleep(0.01)

        def hostile(case):
            cls, name, body, expect = case[:4]
            call = calls[case[4] if len(case) > 4 else "Compile"]
            t0 = time.monotonic()
            try:
                call(body, timeout=args.deadline)
                return cls, name, "OK", "", time.monotonic() - t0, expect
            except grpc.RpcError as e:
                return cls, name, e.code().name, e.details() or "", time.monotonic() - t0, expect

        all_cases = cases(rng)
        rng.shuffle(all_cases)
        hit_thread = threading.Thread(target=hitter)
        hit_thread.start()
        t_start = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            results = list(pool.map(hostile, all_cases))
        stop.set()
        hit_thread.join()
        print(f"{len(all_cases)} hostile requests, {args.concurrency} at a time, in "
              f"{time.monotonic() - t_start:.1f} s")
        for cls, name, code, details, secs, expect in results:
            problem = None
            if code == "OK" and expect == "any":
                pass
            elif code not in CLEAN:
                problem = f"answered {code}"
            elif code == "DEADLINE_EXCEEDED" and secs >= args.deadline - 1:
                problem = f"no answer within the client's {args.deadline:.0f} s deadline"
            elif not details.strip():
                problem = f"{code} with an empty message"
            elif expect == "exhausted" and code != "RESOURCE_EXHAUSTED":
                problem = f"{code}, not RESOURCE_EXHAUSTED"
            elif expect == "located" and code == "INVALID_ARGUMENT" and not LOCATED.match(details):
                problem = f"{code} without a file:line:col location"
            short = details.splitlines()[0][:110] if details else ""
            print(f"  {'FAIL' if problem else 'ok  '} {cls:6} {name:32} {code:20} {secs:6.2f} s  {short}")
            if problem:
                failures.append((cls, f"{name}: {problem}: {short}"))

        if daemon.proc.poll() is not None:
            failures.append(("daemon", f"kilnd exited ({daemon.proc.returncode}) during the hostiles"))
        else:
            peak_mib = daemon.peak_rss_kib() / 1024
            print(f"kilnd's peak RSS: {peak_mib:.0f} MiB (limit {args.max_rss_mib:.0f} MiB)")
            if peak_mib > args.max_rss_mib:
                failures.append(("amplify", f"kilnd's peak RSS {peak_mib:.0f} MiB > {args.max_rss_mib:.0f} MiB"))
            try:
                after = pb.CompileResponse.FromString(compile_raw(warm, timeout=30))
                if after.outcome != pb.CACHE_OUTCOME_HIT or after.artifact.key != warm_key:
                    failures.append(("daemon", "after the hostiles the warm entry is not a HIT with its key"))
            except grpc.RpcError as e:
                failures.append(("daemon", f"after the hostiles the warm entry failed: {e.code().name}"))
        if hits_ms:
            p50 = statistics.median(hits_ms)
            mx = max(hits_ms)
            print(f"cache hits during the hostiles: {len(hits_ms)}, p50 {p50:.1f} ms, "
                  f"p90 {sorted(hits_ms)[int(len(hits_ms) * 0.9)]:.1f} ms, max {mx:.1f} ms")
            if p50 > args.hit_p50_ms:
                failures.append(("hit", f"hit p50 {p50:.1f} ms > {args.hit_p50_ms} ms"))
            if mx > args.hit_max_ms:
                failures.append(("hit", f"hit max {mx:.1f} ms > {args.hit_max_ms} ms"))
        else:
            failures.append(("hit", "no cache hit was answered during the hostiles"))

        # SIGTERM while unbounded work runs: exit within the grace period.
        if daemon.proc.poll() is None:
            busy = [c for c in all_cases if c[0] == "work"][:4]
            pool = concurrent.futures.ThreadPoolExecutor(len(busy))
            for c in busy:
                pool.submit(hostile, c)
            time.sleep(1.0)
            t0 = time.monotonic()
            daemon.proc.send_signal(signal.SIGTERM)
            try:
                rc = daemon.proc.wait(timeout=args.grace + args.exit_slack_s + 60)
                took = time.monotonic() - t0
                print(f"SIGTERM: exit {rc} after {took:.2f} s (grace period {args.grace:.0f} s)")
                if took > args.grace + args.exit_slack_s:
                    failures.append(("work", f"SIGTERM took {took:.1f} s, grace period {args.grace} s"))
                if rc != 0:
                    failures.append(("daemon", f"kilnd exited {rc} on SIGTERM"))
            except subprocess.TimeoutExpired:
                failures.append(("work", "kilnd did not exit on SIGTERM"))
            pool.shutdown(wait=False, cancel_futures=True)
            if daemon.pid != daemon.proc.pid:
                failures.append(("daemon", "the PID changed"))
    finally:
        channel.close()
        log_tail = daemon.tail()
        daemon.cleanup()

    hard = [f for f in failures if f[0] not in args.xfail]
    xfailed = [f for f in failures if f[0] in args.xfail]
    for cls, text in xfailed:
        print(f"XFAIL [{cls}] {text}")
    for cls in args.xfail:
        if not any(f[0] == cls for f in failures):
            print(f"XPASS [{cls}]: this class passes now; drop its --xfail")
    for cls, text in hard:
        print(f"FAIL [{cls}] {text}", file=sys.stderr)
    if hard:
        print("kilnd log tail:\n" + log_tail, file=sys.stderr)
        return 1
    print("hostile_requests: passed" + (f" (expected failures: {', '.join(args.xfail)})" if args.xfail else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
