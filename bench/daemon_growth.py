#!/usr/bin/python3
"""Does kilnd grow or slow with the calls it serves? (issue 27, the rpc_fuzz observation)

Starts the real kilnd on a loopback port with a temporary cache directory
(--devices none: Benchmark and Tune fail fast or wait for the CPU worker
behind --worker-request-timeout 2s, as in the fuzz campaign) and sends it
the requests of tests/fuzz/rpc_fuzz.py (same generator, same mix: every
method, raw / mutated / valid requests, hostile programs) or, with
--mix plain, a simpler mix: many distinct small programs to Compile, bad
programs, ListJobs, GetJob, Benchmark, Tune, CacheStats, GetVersion.

Every --every calls it prints one line: calls so far, seconds, the calls a
second of that window, kilnd's RSS and peak RSS (VmRSS, VmHWM of
/proc/PID/status), its thread count, the lines and label sets of its
/metrics page and the jobs ListJobs returns at limit 100000. A daemon whose
per-call state is bounded shows a flat rate and an RSS that levels off.

  bench/daemon_growth.py [--kilnd build/kilnd] [--calls 50000] [--every 5000]
                         [--concurrency 8] [--mix fuzz|plain] [--seed 1]
                         [--json OUT] [--wrap CMD] [-- KILND_FLAGS...]
Exit status 0, or 2 when kilnd does not start.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "fuzz"))
import rpc_fuzz  # noqa: E402  (also puts the Python client on sys.path)
import grpc  # noqa: E402
from kiln._proto.v1 import service_pb2 as pb  # noqa: E402

BAD_PROGRAMS = ["def f(:\n", "import tilelang\nx = = 1\n", "@tilelang.jit\ndef k(A):\n    return undefined_name\n"]


def plain_request(rng, n):
    """Call n of the plain mix: (method, streaming, request bytes)."""
    kind = rng.randrange(10)
    src = rpc_fuzz.SMALL_KERNEL.replace("* 2.0", f"* {n}.0")  # a distinct program per call
    prog = pb.ProgramSource(tilelang_source=src, file_name=f"p{n}.py")
    prog.bindings["M"].int_value = 64
    if kind <= 2:
        return "Compile", False, pb.CompileRequest(program=prog, target="cpu").SerializeToString()
    if kind == 3:
        bad = pb.ProgramSource(tilelang_source=rng.choice(BAD_PROGRAMS) + f"# {n}\n", file_name="bad.py")
        return "Compile", False, pb.CompileRequest(program=bad, target="cpu").SerializeToString()
    if kind == 4:
        return "ListJobs", False, pb.ListJobsRequest(limit=5).SerializeToString()
    if kind == 5:
        return "GetJob", False, pb.GetJobRequest(job_id=f"job-{n}").SerializeToString()
    if kind == 6:
        return "Benchmark", False, pb.BenchmarkRequest(program=prog, target="cuda:sm_80",
                                                       trials=1).SerializeToString()
    if kind == 7:
        return "Tune", True, pb.TuneRequest(program=prog, target="cuda:sm_80").SerializeToString()
    if kind == 8:
        return "LookupBest", False, pb.LookupBestRequest(program=prog, target="cpu").SerializeToString()
    return rng.choice([("CacheStats", False, b""), ("GetVersion", False, b""), ("ListDevices", False, b"")])


def call(channel, name, streaming, body, deadline):
    path = f"/kiln.v1.Kiln/{name}"
    try:
        if streaming:
            c = channel.unary_stream(path)(body, timeout=deadline)
            for i, _ in enumerate(c):
                if i >= 20:
                    c.cancel()
                    break
        else:
            channel.unary_unary(path)(body, timeout=deadline)
        return "OK"
    except grpc.RpcError as e:
        return e.code().name if e.code() is not None else "NONE"


def proc_status(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            out[k] = int(v.split()[0]) // 1024  # MiB
        elif k == "Threads":
            out[k] = int(v)
    return out


def metrics(address):
    try:
        text = urllib.request.urlopen(f"http://{address}/metrics", timeout=5).read().decode()
    except OSError:
        return 0, 0
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    return len(text), len(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kilnd", default=str(REPO / "build" / "kilnd"))
    ap.add_argument("--calls", type=int, default=50000)
    ap.add_argument("--every", type=int, default=5000)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--mix", choices=["fuzz", "plain"], default="fuzz")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--deadline", type=float, default=10.0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--wrap", default="", help="a command kilnd runs under (e.g. 'heaptrack -o FILE')")
    ap.add_argument("kilnd_args", nargs="*")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="kiln-growth-")
    log_path = os.path.join(tmp, "kilnd.log")
    log = open(log_path, "w+")
    proc = subprocess.Popen(
        [*args.wrap.split(), args.kilnd, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--cache-dir",
         os.path.join(tmp, "cache"), "--devices", "none", "--grace-period", "2s", "--worker-request-timeout", "2s",
         *args.kilnd_args], stdout=log, stderr=subprocess.STDOUT, text=True)
    address = http = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None and not (address and http):
        text = open(log_path).read()
        m = re.search(r"listening on (\S+)", text)
        address = m.group(1) if m else None
        m = re.search(r"(?:metrics|HTTP)[^\n]*?(127\.0\.0\.1:\d+)", text)
        http = m.group(1) if m else None
        time.sleep(0.05)
    if address is None:
        print("daemon_growth: kilnd did not start:\n" + open(log_path).read()[-3000:], file=sys.stderr)
        return 2
    channel = grpc.insecure_channel(address, options=rpc_fuzz.CHANNEL_OPTIONS)
    methods = rpc_fuzz.seeds()
    master = random.Random(args.seed)

    def one(n, seed):
        if args.mix == "fuzz":
            name, streaming, _mode, body = rpc_fuzz.make_request(methods, random.Random(seed))
        else:
            name, streaming, body = plain_request(random.Random(seed), n)
        t0 = time.monotonic()
        code = call(channel, name, streaming, body, args.deadline)
        return name, code, time.monotonic() - t0

    rows = []
    codes = {}
    pool = concurrent.futures.ThreadPoolExecutor(args.concurrency)
    start = time.monotonic()
    done = 0
    print(f"# kilnd pid {proc.pid}, mix {args.mix}, {args.concurrency} in flight, seed {args.seed}")
    print("calls\tseconds\tcalls/s\tRSS_MiB\tpeak_MiB\tthreads\tmetrics_KiB\tmetric_series\tlisted_jobs\tslowest(call-seconds)")
    try:
        while done < args.calls:
            n = min(args.every, args.calls - done)
            t0 = time.monotonic()
            seeds = [(done + i, master.getrandbits(64)) for i in range(n)]
            spent = {}  # method -> seconds of this window's calls
            for name, code, secs in pool.map(lambda a: one(*a), seeds):
                codes[f"{name}/{code}"] = codes.get(f"{name}/{code}", 0) + 1
                spent[name] = spent.get(name, 0.0) + secs
            done += n
            window = time.monotonic() - t0
            if proc.poll() is not None:
                print(f"daemon_growth: kilnd exited with {proc.returncode}", file=sys.stderr)
                break
            st = proc_status(proc.pid)
            mbytes, series = metrics(http) if http else (0, 0)
            try:
                listed = len(pb.ListJobsResponse.FromString(channel.unary_unary("/kiln.v1.Kiln/ListJobs")(
                    pb.ListJobsRequest(limit=100000).SerializeToString(), timeout=10)).jobs)
            except grpc.RpcError:
                listed = -1
            row = {"calls": done, "seconds": round(time.monotonic() - start, 1), "calls_per_s": round(n / window),
                   "rss_mib": st.get("VmRSS"), "peak_mib": st.get("VmHWM"), "threads": st.get("Threads"),
                   "metrics_kib": mbytes // 1024, "metric_series": series, "listed_jobs": listed,
                   "slowest": ",".join(f"{k}={v:.0f}s" for k, v in sorted(spent.items(), key=lambda x: -x[1])[:3])}
            rows.append(row)
            print("\t".join(str(v) for v in row.values()), flush=True)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        channel.close()
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {"mix": args.mix, "seed": args.seed, "concurrency": args.concurrency, "rows": rows, "codes": codes}
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
