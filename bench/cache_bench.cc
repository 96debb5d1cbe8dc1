// The cache's hit path, put throughput and eviction cost, against a plain
// read() of one file holding the same bytes in the same run.
//
//   cache_bench [--dir DIR] [--seconds S] [--keys N] [--puts N] [--evict N]
//               [--file PATH ...]
//
//   get   GetArtifact of a 64 KiB and a 1 MiB artifact (one cubin file) by
//         key, with 1 and 8 threads: p50/p99 latency and ops/s; "read" is
//         open + fstat + read into a std::string + close of a plain file of
//         the same bytes; also the same get with full SHA-256 verification.
//   put   PutArtifact of new 64 KiB artifacts, fsync on (the default) and off.
//   evict EvictTo(0) over N small artifacts: time per evicted entry.
//   zstd  compression ratio and decode time of each --file (e.g. a cubin and
//         a PTX file) and of synthetic text.
// DIR (default: a fresh directory under $TMPDIR) should be on the disk the
// cache will use.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/random_bytes.h"
#include "cache/cache.h"
#include "cache/zstd_codec.h"
#include "util/sha256.h"
#include "util/temp_dir.h"

namespace {

using Clock = std::chrono::steady_clock;
using kiln::cache::Artifact;
using kiln::cache::Cache;
using kiln::cache::CacheOptions;

double Us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

using kiln::bench::RandomBytes;

std::string PtxLikeText(size_t n) {
  std::string s;
  for (int i = 0; s.size() < n; ++i) {
    s += "\tld.shared.v4.u32 {%r" + std::to_string(i % 61) + ", %r" + std::to_string(i % 53) +
         "}, [%rd" + std::to_string(i % 17) + "+" + std::to_string((i * 16) % 4096) + "];\n";
  }
  s.resize(n);
  return s;
}

Artifact OneFileArtifact(std::string bytes) {
  Artifact a;
  a.target = "cuda:sm_90";
  a.toolchain_fingerprint = "bench";
  a.launch_json = R"({"symbol": "kiln_kernel", "grid": [132, 1, 1], "block": [256, 1, 1]})";
  a.files.push_back({"cubin", std::move(bytes), "", 0});
  return a;
}

struct Run {
  std::vector<double> latencies_us;
  double seconds = 0;
  size_t ops() const { return latencies_us.size(); }
  double Percentile(double p) {
    std::sort(latencies_us.begin(), latencies_us.end());
    return latencies_us[std::min(
        latencies_us.size() - 1,
        static_cast<size_t>(p * static_cast<double>(latencies_us.size())))];
  }
};

// Runs `op(thread, i)` on `threads` threads for `seconds`.
template <typename Op>
Run Measure(int threads, double seconds, Op op) {
  std::vector<std::vector<double>> per(threads);
  const auto start = Clock::now();
  const auto end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      // At least one op per thread, so percentiles are defined.
      for (size_t i = 0;; ++i) {
        const auto a = Clock::now();
        op(t, i);
        const auto b = Clock::now();
        per[t].push_back(Us(b - a));
        if (b >= end) break;
      }
    });
  }
  for (std::thread& th : pool) th.join();
  Run r;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& v : per) r.latencies_us.insert(r.latencies_us.end(), v.begin(), v.end());
  return r;
}

std::string ReadPlain(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) std::abort();
  struct stat st {};
  fstat(fd, &st);
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = read(fd, out.data() + done, out.size() - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  close(fd);
  return out;
}

void Fail(const absl::Status& s, const char* what) {
  std::fprintf(stderr, "cache_bench: %s: %s\n", what, std::string(s.message()).c_str());
  std::exit(1);
}

} // namespace

int main(int argc, char** argv) {
  std::string dir;
  double seconds = 2.0;
  int keys = 64;
  int puts = 200;
  int evict = 2000;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "cache_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--dir") {
      dir = next();
    } else if (a == "--seconds") {
      seconds = std::atof(next().c_str());
    } else if (a == "--keys") {
      keys = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--puts") {
      puts = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--evict") {
      evict = std::max(1, std::atoi(next().c_str()));
    } else if (a == "--file") {
      files.push_back(next());
    } else {
      std::fprintf(stderr, "usage: cache_bench [--dir DIR] [--seconds S] [--keys N] [--puts N] "
                           "[--evict N] [--file PATH ...]\n");
      return 2;
    }
  }
  std::optional<kiln::util::TempDir> tmp;
  if (dir.empty()) {
    absl::StatusOr<kiln::util::TempDir> t = kiln::util::TempDir::Create("kiln-cache-bench");
    if (!t.ok()) Fail(t.status(), "temp dir");
    tmp.emplace(*std::move(t));
    dir = tmp->path();
  }

  // --- hit path ---
  std::printf("## get (%d keys per size, %.1f s per row)\n\n", keys, seconds);
  std::printf("| size | threads | what | p50 us | p99 us | ops/s | p50 ratio to read() |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (size_t size : {size_t{64} << 10, size_t{1} << 20}) {
    const std::string cache_dir = dir + "/get-" + std::to_string(size);
    CacheOptions options;
    absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(cache_dir, options);
    if (!c.ok()) Fail(c.status(), "open");
    CacheOptions full_options;
    full_options.read_verify = kiln::cache::ReadVerify::kFullHash;
    absl::StatusOr<std::unique_ptr<Cache>> full = Cache::Open(cache_dir, full_options);
    if (!full.ok()) Fail(full.status(), "open");
    CacheOptions no_memo_options;
    no_memo_options.memo_ttl = std::chrono::milliseconds(0);
    absl::StatusOr<std::unique_ptr<Cache>> no_memo = Cache::Open(cache_dir, no_memo_options);
    if (!no_memo.ok()) Fail(no_memo.status(), "open");
    std::vector<std::string> names;
    for (int k = 0; k < keys; ++k) {
      const std::string bytes = RandomBytes(size, static_cast<uint64_t>(k) + size);
      const std::string key = kiln::util::Sha256Hex("key" + std::to_string(k));
      absl::Status s = (*c)->PutArtifact(key, OneFileArtifact(bytes));
      if (!s.ok()) Fail(s, "put");
      names.push_back(key);
      std::ofstream(cache_dir + "/plain-" + std::to_string(k), std::ios::binary) << bytes;
    }
    for (int threads : {1, 8}) {
      Run plain = Measure(threads, seconds, [&](int t, size_t i) {
        const std::string b =
            ReadPlain(cache_dir + "/plain-" + std::to_string((i * 7 + t) % names.size()));
        if (b.size() != size) std::abort();
      });
      Run get = Measure(threads, seconds, [&](int t, size_t i) {
        absl::StatusOr<Artifact> a = (*c)->GetArtifact(names[(i * 7 + t) % names.size()]);
        if (!a.ok() || a->files[0].bytes.size() != size) std::abort();
      });
      const double read_p50 = plain.Percentile(0.5);
      std::printf("| %zu KiB | %d | read() | %.1f | %.1f | %.0f | |\n", size >> 10, threads,
                  read_p50, plain.Percentile(0.99),
                  static_cast<double>(plain.ops()) / plain.seconds);
      std::printf("| %zu KiB | %d | GetArtifact | %.1f | %.1f | %.0f | **%.2fx** |\n", size >> 10,
                  threads, get.Percentile(0.5), get.Percentile(0.99),
                  static_cast<double>(get.ops()) / get.seconds, get.Percentile(0.5) / read_p50);
      if (threads == 1) {
        // Where the time goes: the blob read alone, and the index alone.
        kiln::cache::BlobStore store(cache_dir + "/blobs", {});
        std::vector<std::string> digests;
        for (const std::string& k : names) digests.push_back((*c)->GetArtifact(k)->files[0].digest);
        Run blob = Measure(1, seconds / 2, [&](int, size_t i) {
          absl::StatusOr<std::string> b = store.Get(digests[(i * 7) % digests.size()]);
          if (!b.ok()) std::abort();
        });
        Run index = Measure(1, seconds / 2, [&](int, size_t i) {
          absl::StatusOr<bool> b = (*c)->ContainsArtifact(names[(i * 7) % names.size()]);
          if (!b.ok() || !*b) std::abort();
        });
        std::printf("| %zu KiB | 1 | of which blob read + checksum | %.1f | %.1f | %.0f | |\n",
                    size >> 10, blob.Percentile(0.5), blob.Percentile(0.99),
                    static_cast<double>(blob.ops()) / blob.seconds);
        std::printf("| %zu KiB | 1 | of which index lookup | %.1f | %.1f | %.0f | |\n", size >> 10,
                    index.Percentile(0.5), index.Percentile(0.99),
                    static_cast<double>(index.ops()) / index.seconds);
        Run direct = Measure(threads, seconds, [&](int t, size_t i) {
          absl::StatusOr<Artifact> a = (*no_memo)->GetArtifact(names[(i * 7 + t) % names.size()]);
          if (!a.ok()) std::abort();
        });
        std::printf("| %zu KiB | %d | GetArtifact without the hit memo | %.1f | %.1f | %.0f | "
                    "%.2fx |\n",
                    size >> 10, threads, direct.Percentile(0.5), direct.Percentile(0.99),
                    static_cast<double>(direct.ops()) / direct.seconds,
                    direct.Percentile(0.5) / read_p50);
        Run sha = Measure(threads, seconds, [&](int t, size_t i) {
          absl::StatusOr<Artifact> a = (*full)->GetArtifact(names[(i * 7 + t) % names.size()]);
          if (!a.ok()) std::abort();
        });
        std::printf("| %zu KiB | %d | GetArtifact, full SHA-256 | %.1f | %.1f | %.0f | %.2fx |\n",
                    size >> 10, threads, sha.Percentile(0.5), sha.Percentile(0.99),
                    static_cast<double>(sha.ops()) / sha.seconds, sha.Percentile(0.5) / read_p50);
      }
    }
  }

  // --- put throughput ---
  std::printf("\n## put (%d new 64 KiB artifacts)\n\n| fsync | puts/s | MiB/s | p50 ms | p99 ms |\n"
              "|---|---|---|---|---|\n",
              puts);
  for (bool sync : {true, false}) {
    CacheOptions options;
    options.sync = sync;
    absl::StatusOr<std::unique_ptr<Cache>> c =
        Cache::Open(dir + (sync ? "/put-sync" : "/put-nosync"), options);
    if (!c.ok()) Fail(c.status(), "open");
    std::vector<Artifact> artifacts;
    for (int i = 0; i < puts; ++i) {
      artifacts.push_back(OneFileArtifact(RandomBytes(64 << 10, 1000000 + i)));
    }
    std::vector<double> lat;
    const auto start = Clock::now();
    for (int i = 0; i < puts; ++i) {
      const auto a = Clock::now();
      absl::Status s = (*c)->PutArtifact("put" + std::to_string(i), artifacts[i]);
      if (!s.ok()) Fail(s, "put");
      lat.push_back(Us(Clock::now() - a) / 1000);
    }
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    std::sort(lat.begin(), lat.end());
    std::printf("| %s | %.0f | %.1f | %.2f | %.2f |\n", sync ? "on" : "off", puts / secs,
                puts * 64.0 / 1024 / secs, lat[lat.size() / 2], lat[lat.size() * 99 / 100]);
  }

  // --- eviction ---
  {
    CacheOptions options;
    options.sync = false;
    options.background = false;
    absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir + "/evict", options);
    if (!c.ok()) Fail(c.status(), "open");
    for (int i = 0; i < evict; ++i) {
      Artifact a = OneFileArtifact(RandomBytes(4096, 5000000 + i));
      a.files.push_back({"ptx", PtxLikeText(8192) + std::to_string(i), "", 0});
      absl::Status s = (*c)->PutArtifact("evict" + std::to_string(i), a);
      if (!s.ok()) Fail(s, "put");
    }
    const auto start = Clock::now();
    absl::StatusOr<int64_t> n = (*c)->EvictTo(0);
    if (!n.ok()) Fail(n.status(), "evict");
    const double us = Us(Clock::now() - start);
    std::printf("\n## eviction\n\nEvictTo(0) over %d artifacts (3 blobs each): %lld evicted in "
                "%.1f ms, **%.1f us per evicted entry**\n",
                evict, static_cast<long long>(*n), us / 1000, us / static_cast<double>(*n));
  }

  // --- zstd ---
  std::printf("\n## zstd level 3\n\n| input | bytes | ratio | decode us | decode MB/s |\n"
              "|---|---|---|---|---|\n");
  std::vector<std::pair<std::string, std::string>> inputs = {
      {"synthetic PTX-like text", PtxLikeText(256 << 10)},
      {"random bytes", RandomBytes(256 << 10, 3)}};
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    inputs.emplace_back(f, ss.str());
  }
  for (const auto& [name, bytes] : inputs) {
    absl::StatusOr<std::string> z = kiln::cache::ZstdCompress(bytes, 3);
    if (!z.ok()) Fail(z.status(), "zstd");
    Run r = Measure(1, 0.5, [&](int, size_t) {
      absl::StatusOr<std::string> back = kiln::cache::ZstdDecompress(*z, bytes.size());
      if (!back.ok()) std::abort();
    });
    const double p50 = r.Percentile(0.5);
    std::printf("| %s | %zu | %.2fx | %.1f | %.0f |\n", name.c_str(), bytes.size(),
                static_cast<double>(bytes.size()) / static_cast<double>(z->size()), p50,
                static_cast<double>(bytes.size()) / p50);
  }
  return 0;
}
