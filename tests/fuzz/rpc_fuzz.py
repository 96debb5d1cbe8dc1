#!/usr/bin/env python3
"""A mutating gRPC client that fuzzes a real kilnd process (issue 27, "Also").

Every method of kiln.v1.Kiln (and grpc.health.v1.Health/Check) is called with
requests made three ways, chosen per execution:
  raw      random bytes, or a valid seed's bytes mutated (bit flips, cut,
           repeated, spliced, a field tag or length varint rewritten): the
           daemon's protobuf parsing of malformed input;
  message  a seed message whose fields are set from descriptors to edge
           values (int64 and int32 extremes, NaN, long and invalid strings,
           repeated fields grown, nested messages filled) and whose program
           source, if any, is a generated hostile TileLang program (70,000-link
           chains, deep nesting, `l = (l, l)` growth, 2**31 tile sizes);
  seed     a valid seed as is (a compile of a small program, a job lookup).
Each call carries a deadline (--deadline); a streaming call is read to its end
or cancelled after a few messages. After every batch (--batch executions) the
daemon must still run (same PID) and answer Health/Check and GetVersion within
5 s. Findings: the daemon died (crash), a call got no answer within its
deadline (hang: DEADLINE_EXCEEDED; for Benchmark and Tune, which wait for the
device behind bounded work, it is counted as slow instead), the health check
failed; a batch with a
finding is written to --findings as one file per request (method, mode, bytes)
and the daemon is restarted. Status codes are counted per method; UNKNOWN and
INTERNAL answers are listed too (`--strict` counts them as findings).

Each execution's request is a function of a 64-bit seed drawn from --seed, so
a batch is the same whoever runs it. Requests are built in processes of their
own (RequestMaker), never in one that times calls: with --jobs J > 1, J client processes
(`concurrency` calls in flight each) take the executions of a batch from one
queue against the one daemon, and the batch's liveness check waits for all of
them. The summary (--json) counts every process's executions and gives the
CPU seconds of the client and of the daemon, and the calls and mean latency
per method.

  rpc_fuzz.py --kilnd build/kilnd --runs 1000000 [--seconds S] [--seed N]
              [--jobs 1] [--concurrency 4] [--findings DIR] [--json OUT]
              [-- KILND_FLAGS...]
Exit status: 0 without findings, 1 with findings, 2 on a usage or start error
or a client error.
"""
import argparse
import collections
import concurrent.futures
import functools
import json
import multiprocessing
import os
import pathlib
import queue
import random
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "clients" / "python"))

import grpc  # noqa: E402
from google.protobuf import descriptor  # noqa: E402
from google.protobuf.internal import api_implementation  # noqa: E402,F401

from kiln._proto.v1 import service_pb2 as pb  # noqa: E402

# ---------------------------------------------------------------------------
# Hostile program text (a small cousin of frontend_structured_fuzzer.cc).
# ---------------------------------------------------------------------------
INTS = ["0", "1", "64", "-1", "2**31", "2**31 - 1", "2**32 + 32", "2**63 - 1", "2**63", "10**400",
        "9223372036854775808", "2**20 + 1"]
CHAIN_LINKS = [1, 10, 199, 200, 201, 1999, 2000, 2001, 5000, 70000]
CHAIN_SHAPES = ["+1", "[0]", "()", ".a", " < x", " and x", " or x", "[0:1]", "*x", " if x else x"]
NEST_SHAPES = [("(", ")"), ("[", "]"), ("f(", ")"), ("-", ""), ("not ", ""), ("lambda: ", "")]
SMALL_KERNEL = '''import tilelang
import tilelang.language as T


@tilelang.jit
def scale(A, block_M=32, dtype=T.float32):
    M = T.const("M")
    A: T.Tensor((M,), dtype)
    B = T.empty((M,), dtype)
    with T.Kernel(T.ceildiv(M, block_M), threads=block_M) as bx:
        for i in T.Parallel(block_M):
            if bx * block_M + i < M:
                B[bx * block_M + i] = A[bx * block_M + i] * 2.0
    return B
'''


@functools.lru_cache(maxsize=None)
def nested_ifs(depth):
    return "".join("    " * i + "if x:\n    " for i in range(depth)) + "    " * depth + "pass"


def hostile_program(rng):
    """A TileLang file with one hostile statement inside an otherwise ordinary kernel."""
    kind = rng.randrange(7)
    if kind == 0:
        n = rng.choice(CHAIN_LINKS)
        stmt = "x = x" + rng.choice(CHAIN_SHAPES) * n
    elif kind == 1:
        n = rng.choice([10, 199, 200, 201, 1000])
        pre, post = rng.choice(NEST_SHAPES)
        stmt = "x = " + pre * n + "1" + post * n
    elif kind == 2:
        n = rng.choice([10, 30, 64, 100])
        stmt = "l = ()\n    " + "l = (l, l)\n    " * n + rng.choice(
            ["x = l == l", "x = str(l)", "x = l < l", "x = hash(l)"])
    elif kind == 3:
        stmt = rng.choice(["x = [0] * ", "x = 'ab' * ", "x = sum(range(", "x = list(range("]) + \
            rng.choice(INTS) + ""
        if "(" in stmt:
            stmt += "))"
    elif kind == 4:
        stmt = rng.choice(["while True:\n        x = 1", "def f(n):\n        return f(n) + f(n)\n    x = f(1)",
                           "for i in range(2**62):\n        x = i"])
    elif kind == 5:
        stmt = nested_ifs(rng.choice([10, 100, 200, 201, 500]))
    else:
        stmt = "x = '" + "a" * rng.choice([10, 10000, 1 << 20]) + "'"
    block = rng.choice(INTS)
    src = SMALL_KERNEL.replace("block_M=32", "block_M=" + block)
    return src.replace('    M = T.const("M")\n', '    M = T.const("M")\n    x = 1\n    ' + stmt + "\n")


EDGE_STRINGS = [
    "", "\x00", "\udcff", "../../etc/passwd", "cuda:sm_80", "cpu", "hip:gfx942", "cuda:sm_" + "9" * 30,
    "0" * 64, "f" * 64, "g" * 64, "job-" + "9" * 40, "M", "float16", "T.float16", "nvrtc", "cc", "gemm=wgmma",
    "a=b=c", "\u202e", "%s%n%x", "{}",
]
LONG_STRINGS = {n: "x" * n for n in (1, 255, 4096, 1 << 20)}


def strings(rng):
    """Edge strings: empty, long, invalid UTF-8 (as bytes), paths, keys, programs.

    One of 24 kinds, equally likely; only the chosen one is built (building a
    hostile program for every string, chosen or not, was most of the client's
    time)."""
    i = rng.randrange(len(EDGE_STRINGS) + 2)
    if i == len(EDGE_STRINGS):
        return LONG_STRINGS[rng.choice([1, 255, 4096, 1 << 20])]
    if i == len(EDGE_STRINGS) + 1:
        return hostile_program(rng)
    return EDGE_STRINGS[i]


INT64S = [0, 1, -1, 2**31 - 1, 2**31, -2**31, 2**32 + 32, 2**63 - 1, -2**63, 1 << 40]
INT32S = [0, 1, -1, 2**31 - 1, -2**31, 1000000, 3]
FLOATS = [0.0, -0.0, 1e308, float("inf"), float("-inf"), float("nan"), 5e-324]
FD = descriptor.FieldDescriptor
# Methods that wait for the device: a mutated request may ask for the most
# work the daemon allows (100,000 trials), and the calls queued behind it
# outlive their deadline. Their DEADLINE_EXCEEDED is counted as slow, not as
# a hang; the health check after each batch still has to pass.
DEVICE_QUEUED = {"Benchmark", "Tune"}


def scalar(rng, field):
    t = field.type
    if t in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64):
        return rng.choice(INT64S)
    if t in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        return rng.choice([0, 1, 2**64 - 1, 2**63])
    if t in (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32):
        return rng.choice(INT32S)
    if t in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
        return rng.choice([0, 1, 2**32 - 1])
    if t in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
        return rng.choice(FLOATS)
    if t == FD.TYPE_BOOL:
        return rng.random() < 0.5
    if t == FD.TYPE_ENUM:
        values = [v.number for v in field.enum_type.values]
        return rng.choice(values + [len(values) + 7])  # an unknown value too
    if t == FD.TYPE_BYTES:
        return rng.randbytes(rng.choice([0, 1, 64, 65536]))
    return strings(rng)


# A grown repeated field or map gets FRESH_ELEMENTS generated elements, the
# rest are copies of them in random order: the daemon still sees 1000-element
# lists and 100-key maps (nested, up to 100,000 values), while the client
# builds at most 16 per field (generating every one of them was most of the
# client's time, at up to seconds a request).
FRESH_ELEMENTS = 16
# What a request may grow to: a little past the transport's limit (64 MiB on
# both sides), so that some requests still test the limit, but no more (one
# in 12 Tune requests used to grow past it, up to 660 MiB, which only cost
# the client time and memory before gRPC refused it).
MAX_GENERATED_BYTES = (64 << 20) + (2 << 20)


def generated_size(value):
    return len(value) if isinstance(value, (str, bytes)) else 8


def mutate_message(rng, msg, depth=0, budget=None):
    """Sets a few fields of msg (recursively) to edge values.

    budget (a one-element list) counts the bytes generated so far for this
    request; past MAX_GENERATED_BYTES nothing more is added."""
    if budget is None:
        budget = [0]
    fields = msg.DESCRIPTOR.fields
    if not fields:
        return
    for _ in range(rng.randrange(1, 4)):
        if budget[0] > MAX_GENERATED_BYTES:
            return
        f = rng.choice(fields)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            m = getattr(msg, f.name)
            key_f, val_f = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            fresh = []  # (key, generated bytes) of values generated, not copied
            for i in range(rng.choice([1, 2, 100])):
                if budget[0] > MAX_GENERATED_BYTES:
                    break
                k = scalar(rng, key_f) if key_f.type != FD.TYPE_STRING else rng.choice(
                    ["M", "N", "K", "block_M", "threads", "", "x" * 300, str(rng.random())])
                try:
                    if i >= FRESH_ELEMENTS and fresh:
                        src, size = rng.choice(fresh)
                        if val_f.message_type is not None:
                            size = m[src].ByteSize()  # a value may have grown since (its key chosen again)
                        if budget[0] + size > MAX_GENERATED_BYTES:
                            break
                        if val_f.message_type is not None:
                            m[k].CopyFrom(m[src])
                        else:
                            m[k] = m[src]
                        budget[0] += size
                    elif val_f.message_type is not None:
                        if depth < 4:
                            before = budget[0]
                            mutate_message(rng, m[k], depth + 1, budget)
                            fresh.append((k, budget[0] - before))
                    else:
                        v = scalar(rng, val_f)
                        m[k] = v
                        budget[0] += generated_size(v)
                        fresh.append((k, generated_size(v)))
                except (ValueError, TypeError, UnicodeError, KeyError):
                    pass  # a lone surrogate: the raw mode sends invalid UTF-8
        elif f.label == FD.LABEL_REPEATED:
            r = getattr(msg, f.name)
            count = rng.choice([1, 3, 1000])
            fresh, sizes = [], []  # elements generated, and the bytes of each
            for _ in range(min(count, FRESH_ELEMENTS)):
                if budget[0] > MAX_GENERATED_BYTES:
                    break
                before = budget[0]
                if f.message_type is not None:
                    if depth < 4:
                        mutate_message(rng, r.add(), depth + 1, budget)
                    else:
                        r.add()
                    budget[0] += 2
                    fresh.append(r[len(r) - 1])
                else:
                    try:
                        v = scalar(rng, f)
                        r.append(v)
                    except (ValueError, TypeError, UnicodeError):
                        continue
                    budget[0] += generated_size(v)
                    fresh.append(v)
                sizes.append(budget[0] - before)
            if count > FRESH_ELEMENTS and fresh:
                # The copies in one call (r.extend copies in C++), as many as fit the budget.
                picks = rng.choices(range(len(fresh)), k=count - len(fresh))
                room = MAX_GENERATED_BYTES - budget[0]
                total = 0
                for n, j in enumerate(picks):
                    total += sizes[j]
                    if total > room:
                        picks = picks[:n]
                        total -= sizes[j]
                        break
                budget[0] += total
                r.extend([fresh[j] for j in picks])
        elif f.message_type is not None:
            if depth < 4:
                mutate_message(rng, getattr(msg, f.name), depth + 1, budget)
        else:
            try:
                v = scalar(rng, f)
                setattr(msg, f.name, v)
                budget[0] += generated_size(v)
            except (ValueError, TypeError, UnicodeError):
                pass  # e.g. a lone surrogate in a string field: the raw mode sends those


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def mutate_bytes(rng, data):
    data = bytearray(data)
    for _ in range(rng.randrange(1, 5)):
        op = rng.randrange(8)
        if op == 0 and data:  # bit flip
            i = rng.randrange(len(data))
            data[i] ^= 1 << rng.randrange(8)
        elif op == 1 and data:  # cut
            del data[rng.randrange(len(data)):]
        elif op == 2:  # insert random bytes
            i = rng.randrange(len(data) + 1)
            data[i:i] = rng.randbytes(rng.randrange(1, 16))
        elif op == 3 and data:  # repeat a slice
            i = rng.randrange(len(data))
            j = min(len(data), i + rng.randrange(1, 64))
            data[i:i] = data[i:j] * rng.choice([2, 10, 1000])
        elif op == 4:  # a field with a huge or wrong length
            tag = (rng.randrange(1, 20) << 3) | rng.choice([0, 1, 2, 3, 4, 5, 6, 7])
            data += varint(tag) + varint(rng.choice([2**31, 2**63, 2**64 - 1, 1 << 20, 5]))
        elif op == 5:  # deep group / message nesting
            data = bytearray(b"\x0a\x7f" * rng.choice([10, 100, 1000])) + data
        elif op == 6 and data:  # overwrite a byte with a varint continuation
            data[rng.randrange(len(data))] = 0xFF
        else:  # splice random bytes
            data += rng.randbytes(rng.randrange(1, 64))
    return bytes(data)


def seeds():
    """Per method: (full name, streaming, request class, valid seed messages)."""
    prog = pb.ProgramSource(tilelang_source=SMALL_KERNEL, file_name="fuzz.py")
    prog.bindings["M"].int_value = 64
    return [
        ("Compile", False, pb.CompileRequest, [pb.CompileRequest(program=prog, target="cpu"),
                                              pb.CompileRequest(program=prog, target="cuda:sm_80")]),
        ("GetArtifact", True, pb.GetArtifactRequest, [pb.GetArtifactRequest(key="0" * 64)]),
        ("Tune", True, pb.TuneRequest, [pb.TuneRequest(program=prog, target="cpu")]),
        ("LookupBest", False, pb.LookupBestRequest, [pb.LookupBestRequest(program=prog, target="cpu")]),
        ("Benchmark", False, pb.BenchmarkRequest, [pb.BenchmarkRequest(program=prog, target="cpu", trials=1)]),
        ("GetJob", False, pb.GetJobRequest, [pb.GetJobRequest(job_id="job-1")]),
        ("WatchJob", True, pb.WatchJobRequest, [pb.WatchJobRequest(job_id="job-1")]),
        ("CancelJob", False, pb.CancelJobRequest, [pb.CancelJobRequest(job_id="job-1")]),
        ("ListJobs", False, pb.ListJobsRequest, [pb.ListJobsRequest(limit=5)]),
        ("ListDevices", False, pb.ListDevicesRequest, [pb.ListDevicesRequest()]),
        ("ListMeasurements", False, pb.ListMeasurementsRequest, [pb.ListMeasurementsRequest(history_name="h")]),
        ("CacheStats", False, pb.CacheStatsRequest, [pb.CacheStatsRequest()]),
        ("GetVersion", False, pb.GetVersionRequest, [pb.GetVersionRequest()]),
        ("Echo", False, pb.EchoRequest, [pb.EchoRequest(size=16)]),
    ]


class Daemon:
    def __init__(self, kilnd, extra):
        self.cache_dir = tempfile.mkdtemp(prefix="kiln-rpcfuzz-")
        self.log_path = os.path.join(self.cache_dir, "kilnd.log")
        self.log = open(self.log_path, "w+")
        self.proc = subprocess.Popen(
            [kilnd, "--listen", "127.0.0.1:0", "--cache-dir", os.path.join(self.cache_dir, "cache"),
             "--devices", "none", "--grace-period", "2s", *extra],
            stdout=self.log, stderr=subprocess.STDOUT, text=True)
        self.address = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = re.search(r"listening on (\S+)", open(self.log_path).read())
            if m:
                self.address = m.group(1)
                break
            time.sleep(0.05)
        if self.address is None:
            raise RuntimeError("kilnd did not start:\n" + open(self.log_path).read()[-4000:])

    def tail(self, n=3000):
        return open(self.log_path, errors="replace").read()[-n:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.cache_dir, ignore_errors=True)


def make_request(methods, rng):
    """One execution's request, a function of rng alone (a finding's batch is
    written by making its requests again from their seeds)."""
    name, streaming, cls, seed_msgs = methods[rng.randrange(len(methods))]
    mode = rng.choices(["raw", "message", "seed"], weights=[45, 45, 10])[0]
    if mode == "raw":
        base = rng.choice(seed_msgs).SerializeToString()
        body = rng.randbytes(rng.randrange(0, 256)) if rng.random() < 0.2 else mutate_bytes(rng, base)
    else:
        msg = cls()
        msg.CopyFrom(rng.choice(seed_msgs))
        if mode == "message":
            mutate_message(rng, msg)
        body = msg.SerializeToString()
    return name, streaming, mode, body


def execute(channel, methods, seed, deadline):
    """Makes execution `seed`'s request and calls it (call_request)."""
    return call_request(channel, make_request(methods, random.Random(seed)), deadline)


_MAKER_METHODS = None


def _maker_init():
    global _MAKER_METHODS
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the run
    _MAKER_METHODS = seeds()


def _maker_build(seed):
    return make_request(_MAKER_METHODS, random.Random(seed))


class RequestMaker:
    """Builds the requests in processes of their own. Building one (up to
    66 MiB of Python objects, then serialized) holds the interpreter lock for
    seconds; in the process that waits for the calls it kept the other
    threads from seeing their answers or their deadlines, and answered calls
    were reported as hangs (a GetJob "without an answer in 19 s" under a 10 s
    deadline, 2026-12-06). Requests come back in the order of their seeds,
    at most `ahead` built and not yet called."""

    def __init__(self, ahead):
        ctx = multiprocessing.get_context("spawn")
        self.pool = ctx.Pool(processes=max(1, min(4, (os.cpu_count() or 2) // 2)), initializer=_maker_init)
        self.ahead = ahead

    def build(self, batch_seeds):
        pending = collections.deque()
        for s in batch_seeds:
            pending.append(self.pool.apply_async(_maker_build, (s,)))
            if len(pending) >= self.ahead:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()

    def close(self):
        self.pool.close()
        self.pool.join()


def call_request(channel, request, deadline):
    """Calls a made request: (method, mode, request bytes, status code name,
    seconds). A streaming call is read to its end or cancelled after 20
    messages."""
    name, streaming, mode, body = request
    path = f"/kiln.v1.Kiln/{name}"
    t0 = time.monotonic()
    code = "OK"
    try:
        if streaming:
            call = channel.unary_stream(path)(body, timeout=deadline)
            for i, _ in enumerate(call):
                if i >= 20:
                    call.cancel()
                    break
        else:
            channel.unary_unary(path)(body, timeout=deadline)
    except grpc.RpcError as e:
        code = e.code().name if e.code() is not None else "NONE"
    return name, mode, len(body), code, time.monotonic() - t0


CHANNEL_OPTIONS = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]


class ThreadRunner:
    """Runs a batch on `concurrency` threads of this process."""

    def __init__(self, concurrency, deadline):
        self.pool = concurrent.futures.ThreadPoolExecutor(concurrency)
        self.deadline = deadline
        self.maker = RequestMaker(2 * concurrency)
        self.gate = threading.Semaphore(2 * concurrency)  # calls submitted and not yet answered
        self.channel, self.address = None, None

    def run(self, address, batch_seeds):
        if address != self.address:
            if self.channel is not None:
                self.channel.close()
            self.channel, self.address = grpc.insecure_channel(address, options=CHANNEL_OPTIONS), address
        futures = []
        for request in self.maker.build(batch_seeds):
            self.gate.acquire()
            f = self.pool.submit(call_request, self.channel, request, self.deadline)
            f.add_done_callback(lambda _: self.gate.release())
            futures.append(f)
        return [f.result() for f in futures]

    def close(self):
        self.maker.close()
        self.pool.shutdown(wait=True)
        if self.channel is not None:
            self.channel.close()


def client_process(tasks, results, concurrency, deadline):
    """A client process of ProcessRunner: `concurrency` threads take (index,
    request, address) from tasks until None and put (index, result) on
    results."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the run
    channels = {}
    lock = threading.Lock()

    def loop():
        while True:
            task = tasks.get()
            if task is None:
                return
            index, request, address = task
            with lock:
                if address not in channels:  # a new daemon after a restart
                    channels[address] = grpc.insecure_channel(address, options=CHANNEL_OPTIONS)
                channel = channels[address]
            try:
                results.put((index, call_request(channel, request, deadline)))
            except Exception:  # noqa: BLE001 - a client bug: the parent stops with it
                import traceback
                results.put((index, ("client error", traceback.format_exc())))

    threads = [threading.Thread(target=loop) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in channels.values():
        c.close()


class ProcessRunner:
    """Runs a batch on `jobs` client processes of `concurrency` threads each,
    which take its executions from one queue (a slow call holds up one
    thread, not a share of the batch). One Python process makes about 1,000
    calls a second at most (its interpreter lock); the daemon takes about as
    much CPU per call, so on two cores two processes keep both busy."""

    def __init__(self, jobs, concurrency, deadline):
        ctx = multiprocessing.get_context("spawn")  # no fork of a process that runs gRPC threads
        self.tasks, self.results = ctx.Queue(), ctx.Queue()
        self.deadline = deadline
        self.procs = [ctx.Process(target=client_process, args=(self.tasks, self.results, concurrency, deadline),
                                  daemon=True) for _ in range(jobs)]
        self.threads = jobs * concurrency
        self.maker = RequestMaker(2 * self.threads)
        for p in self.procs:
            p.start()

    def run(self, address, batch_seeds):
        # Requests go to the clients as the makers finish them, at most two
        # per client thread waiting or in flight.
        out = [None] * len(batch_seeds)
        received = 0

        def take():
            nonlocal received
            while True:
                try:
                    index, result = self.results.get(timeout=self.deadline + 30)
                    break
                except queue.Empty:
                    # Every call ends by its deadline; no answer past it means a client process died.
                    dead = [p.pid for p in self.procs if not p.is_alive()]
                    if dead:
                        raise RuntimeError(f"client processes {dead} died")
            if result[0] == "client error":
                raise RuntimeError("client process failed:\n" + result[1])
            out[index] = result
            received += 1

        for i, request in enumerate(self.maker.build(batch_seeds)):
            while i - received >= 2 * self.threads:
                take()
            self.tasks.put((i, request, address))
        while received < len(batch_seeds):
            take()
        return out

    def close(self):
        self.maker.close()
        for _ in range(self.threads):
            self.tasks.put(None)
        for p in self.procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()


def daemon_cpu(daemon):
    """(own, children's) CPU seconds of the daemon: its children are the host
    compiler runs and the CPU device worker, counted once they exit."""
    try:
        f = open(f"/proc/{daemon.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        tick = os.sysconf("SC_CLK_TCK")
        return (int(f[11]) + int(f[12])) / tick, (int(f[13]) + int(f[14])) / tick
    except (OSError, ValueError, IndexError):
        return 0.0, 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kilnd", default=str(REPO / "build" / "kilnd"))
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--seconds", type=float, default=0, help="stop after this long (0: no limit)")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--jobs", type=int, default=1,
                    help="client processes (1: this process's threads; more: worker processes, one daemon)")
    ap.add_argument("--concurrency", type=int, default=4, help="calls in flight per client process")
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--deadline", type=float, default=10.0, help="seconds a call may take")
    ap.add_argument("--findings", default=None, help="folder for the requests of a batch with a finding")
    ap.add_argument("--json", default=None, help="write the summary here")
    ap.add_argument("--strict", action="store_true", help="UNKNOWN and INTERNAL answers are findings")
    ap.add_argument("kilnd_args", nargs="*", help="extra kilnd flags (after --)")
    args = ap.parse_args()
    if not os.access(args.kilnd, os.X_OK):
        print(f"rpc_fuzz: no kilnd at {args.kilnd}", file=sys.stderr)
        return 2
    if args.jobs < 1 or args.concurrency < 1 or args.batch < 1:
        print("rpc_fuzz: --jobs, --concurrency and --batch must be at least 1", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    methods = seeds()
    try:
        daemon = Daemon(args.kilnd, args.kilnd_args)
    except RuntimeError as e:
        print(f"rpc_fuzz: {e}", file=sys.stderr)
        return 2
    counts = {}  # (method, code) -> n
    latency = {}  # method -> [calls, seconds, max seconds]
    findings = []
    start = time.monotonic()
    executed = 0
    restarts = 0
    slow = 0

    def health(channel):
        try:
            resp = channel.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=5)
            channel.unary_unary("/kiln.v1.Kiln/GetVersion")(b"", timeout=5)
            return resp == b"\x08\x01", f"health answer {resp!r}"
        except grpc.RpcError as e:
            return False, f"health check: {e.code()} {e.details()}"

    master = random.Random(seed)
    runner = (ThreadRunner(args.concurrency, args.deadline) if args.jobs == 1 else
              ProcessRunner(args.jobs, args.concurrency, args.deadline))
    channel = grpc.insecure_channel(daemon.address, options=CHANNEL_OPTIONS)
    batch_no = 0
    client_error = None
    try:
        while executed < args.runs and not (args.seconds and time.monotonic() - start > args.seconds):
            n = min(args.batch, args.runs - executed)
            batch_seeds = [master.getrandbits(64) for _ in range(n)]
            try:
                results = runner.run(daemon.address, batch_seeds)
            except RuntimeError as e:
                client_error = str(e)
                print(f"rpc_fuzz: {e}", file=sys.stderr)
                break
            executed += n
            batch_no += 1
            problems = []
            for name, mode, size, code, elapsed in results:
                counts[(name, code)] = counts.get((name, code), 0) + 1
                lat = latency.setdefault(name, [0, 0.0, 0.0])
                lat[0] += 1
                lat[1] += elapsed
                lat[2] = max(lat[2], elapsed)
                if code == "DEADLINE_EXCEEDED" and name in DEVICE_QUEUED:
                    slow += 1  # waited for the device behind bounded work (up to max_trials)
                elif code == "DEADLINE_EXCEEDED":
                    problems.append(f"hang: {name} ({mode}, {size} bytes) had no answer in {elapsed:.1f} s")
                elif code in ("UNKNOWN", "INTERNAL") and args.strict:
                    problems.append(f"{code}: {name} ({mode}, {size} bytes)")
                elif code == "UNAVAILABLE" and daemon.proc.poll() is not None:
                    pass  # reported below as the crash
            pid_alive = daemon.proc.poll() is None
            ok, why = health(channel) if pid_alive else (False, f"kilnd exited with {daemon.proc.returncode}")
            if not ok:
                problems.append(("crash: " if not pid_alive else "unhealthy: ") + why)
            if problems:
                record = {"batch": batch_no, "seed": seed, "problems": problems[:20], "log_tail": daemon.tail(),
                          "request_seeds": batch_seeds}
                findings.append(record)
                print(f"rpc_fuzz: FINDING in batch {batch_no}: " + "; ".join(problems[:5]), file=sys.stderr)
                if args.findings:
                    d = pathlib.Path(args.findings) / f"batch-{seed}-{batch_no}"
                    d.mkdir(parents=True, exist_ok=True)
                    (d / "finding.json").write_text(json.dumps(record, indent=1))
                    for i, (s, (name, mode, size, code, elapsed)) in enumerate(zip(batch_seeds, results)):
                        body = make_request(methods, random.Random(s))[3]
                        (d / f"{i:05d}-{name}-{mode}-{code}.bin").write_bytes(body)
                if not pid_alive or not ok:
                    channel.close()
                    daemon.stop()
                    daemon = Daemon(args.kilnd, args.kilnd_args)
                    channel = grpc.insecure_channel(daemon.address, options=CHANNEL_OPTIONS)
                    restarts += 1
            rate = executed / max(time.monotonic() - start, 1e-9)
            print(f"rpc_fuzz: {executed} executions, {rate:.0f}/s, {len(findings)} findings", flush=True)
    finally:
        runner.close()
        channel.close()
        own, children = daemon_cpu(daemon)
        self_ru, child_ru = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        daemon.stop()
        stop_s = time.monotonic() - t0
    elapsed = time.monotonic() - start
    by_code = {}
    for (name, code), n in sorted(counts.items()):
        by_code.setdefault(code, 0)
        by_code[code] += n
    summary = {
        "seed": seed, "executions": executed, "seconds": round(elapsed, 1),
        "exec_per_s": round(executed / max(elapsed, 1e-9), 1), "findings": len(findings),
        "restarts": restarts, "device_queued_deadline_exceeded": slow, "sigterm_exit_s": round(stop_s, 2),
        "jobs": args.jobs, "concurrency": args.concurrency,
        # Where the time went: the client (this process and its client
        # processes; daemons restarted after a finding count here too) and
        # the last daemon (its own threads; its host compiler runs and CPU
        # worker). The rate is bounded by their sum over the cores.
        "cpu_s": {"client": round(self_ru.ru_utime + self_ru.ru_stime + child_ru.ru_utime + child_ru.ru_stime, 1),
                  "daemon": round(own, 1), "daemon_children": round(children, 1)},
        "codes": by_code,
        "per_method": {f"{n}/{c}": k for (n, c), k in sorted(counts.items())},
        "per_method_ms": {n: {"calls": v[0], "mean": round(v[1] / v[0] * 1000, 1), "max": round(v[2] * 1000)}
                          for n, v in sorted(latency.items())},
        "problems": [p for f in findings for p in f["problems"]][:50],
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(summary, indent=1))
    if client_error:
        return 2
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
