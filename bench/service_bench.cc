// Service benchmarks against a real kilnd process (started here on a
// loopback port with a fresh cache directory):
//
//  1. Cache-hit Compile RPC: QPS and p50/p99 latency with 1, 8 and 64
//     concurrent clients, each client its own channel, next to the Echo RPC
//     of the same request and response sizes on the same server in the same
//     run, in alternating slices (`--rounds` of each per point).
//  2. Cold compile through the daemon (Compile of a program it has never
//     seen) next to a direct library call (driver::CompileProgram in this
//     process) on the same programs: the daemon's overhead.
//
//   build/bench/service_bench [--kilnd build/kilnd] [--seconds 5] [--rounds 10] [--cold 5]
//                             [--source-dir DIR]
//                             [--target cpu|cuda:sm_90]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "compiler/driver/compile_driver.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"
#include "tests/support/example_loader.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string kilnd = std::string(KILN_BINARY_DIR) + "/kilnd";
  double seconds = 5;
  int cold = 5;
  int rounds = 10; // alternating slices per point
  std::string target = "cpu";
  std::string source_dir = KILN_SOURCE_DIR; // where examples/ is
};

kiln::v1::CompileRequest GemmRequest(const kiln::testing::ExampleFile& ex, int64_t m,
                                     const std::string& target) {
  kiln::v1::CompileRequest req;
  req.mutable_program()->set_tilelang_source(ex.source);
  req.mutable_program()->set_file_name(ex.rel_path);
  for (const auto& [name, value] : ex.test_bind) {
    kiln::v1::BindingValue v;
    v.set_int_value(name == "M" ? m : value.ival);
    (*req.mutable_program()->mutable_bindings())[name] = v;
  }
  req.set_target(target);
  return req;
}

struct Result {
  double qps = 0, p50_us = 0, p99_us = 0;
  int64_t errors = 0;
};

// Latencies and wall time of one or more slices of load.
struct Samples {
  std::vector<double> latencies_us;
  double wall_s = 0;
  int64_t errors = 0;
  Result Summary() {
    Result r;
    r.errors = errors;
    if (latencies_us.empty() || wall_s <= 0) return r;
    std::sort(latencies_us.begin(), latencies_us.end());
    r.qps = static_cast<double>(latencies_us.size()) / wall_s;
    r.p50_us = latencies_us[latencies_us.size() / 2];
    r.p99_us = latencies_us[std::min(latencies_us.size() - 1, latencies_us.size() * 99 / 100)];
    return r;
  }
};

// `clients` threads, each with its own channel, calling `call` for `seconds`;
// the samples are added to `out`.
template <typename Call>
void Drive(const std::string& address, int clients, double seconds, Call call, Samples* out) {
  std::vector<std::vector<double>> lat(clients);
  std::atomic<int64_t> errors{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      grpc::ChannelArguments ch;
      ch.SetInt("grpc.use_local_subchannel_pool", 1); // a connection per client
      auto stub = kiln::v1::Kiln::NewStub(
          grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), ch));
      while (!stop.load(std::memory_order_relaxed)) {
        const Clock::time_point t0 = Clock::now();
        if (!call(*stub)) errors.fetch_add(1);
        lat[c].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    });
  }
  const Clock::time_point start = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : threads) t.join();
  out->wall_s += std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& v : lat) out->latencies_us.insert(out->latencies_us.end(), v.begin(), v.end());
  out->errors += errors.load();
}

} // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--kilnd") {
      args.kilnd = v;
    } else if (k == "--seconds") {
      (void)absl::SimpleAtod(v, &args.seconds);
    } else if (k == "--rounds") {
      (void)absl::SimpleAtoi(v, &args.rounds);
      if (args.rounds < 1) args.rounds = 1;
    } else if (k == "--cold") {
      (void)absl::SimpleAtoi(v, &args.cold);
    } else if (k == "--source-dir") {
      args.source_dir = v;
    } else if (k == "--target") {
      args.target = v;
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  const std::string dir = std::filesystem::temp_directory_path() / "kiln_service_bench";
  std::filesystem::remove_all(dir);
  kiln::testing::DaemonProcess daemon;
  if (!daemon.Start(args.kilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir})) {
    std::fprintf(stderr, "kilnd did not start:\n%s\n", daemon.output().c_str());
    return 1;
  }
  const kiln::testing::ExampleFile ex =
      kiln::testing::LoadExampleFile(args.source_dir, "examples/gemm/gemm.py");
  const kiln::v1::CompileRequest hit_req = GemmRequest(ex, 100, args.target);
  auto stub = kiln::v1::Kiln::NewStub(
      grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
  kiln::v1::CompileResponse first;
  {
    grpc::ClientContext ctx;
    grpc::Status s = stub->Compile(&ctx, hit_req, &first);
    if (!s.ok()) {
      std::fprintf(stderr, "compile failed: %s\n", s.error_message().c_str());
      return 1;
    }
  }
  const int64_t response_bytes = static_cast<int64_t>(first.ByteSizeLong());
  std::printf("kilnd %s, target %s, hit response %lld bytes, %.0f s per point\n\n",
              daemon.address().c_str(), args.target.c_str(), static_cast<long long>(response_bytes),
              args.seconds);
  std::printf("| clients | Compile hit QPS | p50 us | p99 us | Echo QPS | p50 us | p99 us | QPS "
              "ratio |\n|---|---|---|---|---|---|---|---|\n");
  // The peer moves the same bytes both ways: a request as large as the
  // Compile request (padding) and a reply as large as its response.
  kiln::v1::EchoRequest echo;
  echo.set_size(response_bytes - 3); // field tag + length
  echo.set_padding(std::string(hit_req.ByteSizeLong() - 6, 'p'));
  for (int clients : {1, 8, 64}) {
    // Alternating slices of the two, so that the machine's drift (other
    // tenants, clocks) falls on both alike.
    Samples hits, echoes;
    const double slice = args.seconds / args.rounds;
    for (int round = 0; round < args.rounds; ++round) {
      Drive(
          daemon.address(), clients, slice,
          [&](kiln::v1::Kiln::Stub& s) {
            grpc::ClientContext ctx;
            kiln::v1::CompileResponse r;
            return s.Compile(&ctx, hit_req, &r).ok() && r.outcome() == kiln::v1::CACHE_OUTCOME_HIT;
          },
          &hits);
      Drive(
          daemon.address(), clients, slice,
          [&](kiln::v1::Kiln::Stub& s) {
            grpc::ClientContext ctx;
            kiln::v1::EchoResponse r;
            return s.Echo(&ctx, echo, &r).ok();
          },
          &echoes);
    }
    Result hit = hits.Summary();
    Result ech = echoes.Summary();
    std::printf("| %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.2fx |%s\n", clients, hit.qps,
                hit.p50_us, hit.p99_us, ech.qps, ech.p50_us, ech.p99_us,
                ech.qps > 0 ? hit.qps / ech.qps : 0.0, hit.errors + ech.errors ? " (errors!)" : "");
  }

  // Where a hit's extra time per call goes, next to the echo: the client's
  // protobuf work (serialize the request, parse the response) measured here
  // in a loop, and the daemon's own handling of a hit (server_seconds).
  {
    std::string first_bytes, echo_reply_bytes, wire;
    first.SerializeToString(&first_bytes);
    kiln::v1::EchoResponse echo_reply;
    echo_reply.mutable_payload()->assign(static_cast<size_t>(echo.size()), 'k');
    echo_reply.SerializeToString(&echo_reply_bytes);
    constexpr int kLoops = 20000;
    auto per_call_us = [&](auto&& body) {
      const Clock::time_point t0 = Clock::now();
      for (int i = 0; i < kLoops; ++i) body();
      return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kLoops;
    };
    const double hit_client_us = per_call_us([&] {
      hit_req.SerializeToString(&wire);
      kiln::v1::CompileResponse r;
      (void)r.ParseFromString(first_bytes);
    });
    const double echo_client_us = per_call_us([&] {
      echo.SerializeToString(&wire);
      kiln::v1::EchoResponse r;
      (void)r.ParseFromString(echo_reply_bytes);
    });
    std::vector<double> server_us;
    for (int i = 0; i < 2000; ++i) {
      grpc::ClientContext ctx;
      kiln::v1::CompileResponse r;
      if (stub->Compile(&ctx, hit_req, &r).ok()) server_us.push_back(r.server_seconds() * 1e6);
    }
    std::sort(server_us.begin(), server_us.end());
    std::printf("\nper call: client protobuf (serialize request + parse response) hit %.2f us, "
                "echo %.2f us; kilnd's handling of a hit (server_seconds) p50 %.1f us, p99 %.1f "
                "us\n",
                hit_client_us, echo_client_us,
                server_us.empty() ? 0.0 : server_us[server_us.size() / 2],
                server_us.empty() ? 0.0 : server_us[server_us.size() * 99 / 100]);
  }

  // Cold compiles: new programs (another M each), daemon vs library. The M
  // values differ between runs of this bench too (the process id), since
  // NVRTC may keep its own cache of compiled sources (~/.nv/ComputeCache on
  // the H200 host), and the library's NVRTC is loaded before the timing (the
  // daemon's was, by the hits above).
  const int64_t base = 1000 + static_cast<int64_t>(getpid() % 4096) * 2 * (args.cold + 1);
  auto program_with_m = [&](int64_t m) {
    kiln::driver::ProgramInput in;
    in.text = ex.source;
    in.file_name = ex.rel_path;
    for (const auto& [name, value] : ex.test_bind) {
      in.bindings.emplace_back(name, value);
      if (name == "M") in.bindings.back().second.ival = m;
    }
    return in;
  };
  {
    kiln::driver::BuildOptions o;
    o.target = args.target;
    (void)kiln::driver::CompileProgram(program_with_m(base - 1), o);
  }
  std::vector<double> daemon_ms, direct_ms;
  for (int i = 0; i < args.cold; ++i) {
    kiln::v1::CompileRequest req = GemmRequest(ex, base + i, args.target);
    grpc::ClientContext ctx;
    kiln::v1::CompileResponse r;
    Clock::time_point t0 = Clock::now();
    grpc::Status s = stub->Compile(&ctx, req, &r);
    daemon_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!s.ok() || r.outcome() != kiln::v1::CACHE_OUTCOME_MISS) {
      std::fprintf(stderr, "cold compile %d: %s\n", i, s.error_message().c_str());
      return 1;
    }
    const kiln::driver::ProgramInput in = program_with_m(base + args.cold + i);
    kiln::driver::BuildOptions o;
    o.target = args.target;
    t0 = Clock::now();
    absl::StatusOr<kiln::driver::Built> b = kiln::driver::CompileProgram(in, o);
    direct_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!b.ok()) {
      std::fprintf(stderr, "direct compile %d: %s\n", i, std::string(b.status().message()).c_str());
      return 1;
    }
  }
  std::sort(daemon_ms.begin(), daemon_ms.end());
  std::sort(direct_ms.begin(), direct_ms.end());
  const double dm = daemon_ms[daemon_ms.size() / 2], lm = direct_ms[direct_ms.size() / 2];
  std::printf("\ncold compile (%d programs, median): daemon %.1f ms, library %.1f ms, overhead "
              "%.1f ms (%.2fx)\n",
              args.cold, dm, lm, dm - lm, dm / lm);
  daemon.Stop();
  std::filesystem::remove_all(dir);
  return 0;
}
