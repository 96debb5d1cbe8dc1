// What proving identity costs on a cache hit: Cache::GetArtifact of one
// artifact of one file, with the old read check (kChecksum: XXH3-64 of the
// stored bytes) and the new default (kFullHash: also the SHA-256 of the
// bytes against the blob's name), next to a plain read of the same blob file
// (no check at all) and to each hash alone over the bytes in memory.
//
//   read_verify_bench [--dir DIR] [--seconds S] [--sizes 1K,64K,1M,16M]
//
// Sizes: 1 KiB is what a Compile hit reads (the artifact's metadata file
// only); 64 KiB, 1 MiB and 16 MiB are binaries as GetArtifact reads them.
// Each row runs for S seconds (default 1) on one thread with the page cache
// warm and the cache's hit memo on, over 8 artifacts of that size (so the
// index is not the point). DIR (default: a fresh directory under $TMPDIR)
// should be on the disk the cache will use. Prints a Markdown table.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "absl/strings/str_cat.h"
#include "bench/random_bytes.h"
#include "cache/cache.h"
#include "util/sha256.h"
#include "util/temp_dir.h"

namespace {

using Clock = std::chrono::steady_clock;
using kiln::cache::Artifact;
using kiln::cache::Cache;
using kiln::cache::CacheOptions;
using kiln::cache::ReadVerify;

constexpr int kArtifacts = 8;

using kiln::bench::RandomBytes;

// p50, p99 of `op`'s latency (us) over `seconds` (at least 5 runs).
template <typename Op>
std::pair<double, double> Measure(double seconds, Op op) {
  std::vector<double> us;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(seconds));
  for (size_t i = 0;; ++i) {
    const auto a = Clock::now();
    op(i);
    const auto b = Clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(b - a).count());
    if (b >= end && us.size() >= 5) break;
  }
  std::sort(us.begin(), us.end());
  auto at = [&](double p) {
    return us[std::min(us.size() - 1, static_cast<size_t>(p * static_cast<double>(us.size())))];
  };
  return {at(0.5), at(0.99)};
}

std::string ReadPlain(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) std::abort();
  struct stat st {};
  if (fstat(fd, &st) != 0) std::abort();
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

[[noreturn]] void Fail(const absl::Status& s, const char* what) {
  std::fprintf(stderr, "read_verify_bench: %s: %s\n", what, absl::StrCat(s.message()).c_str());
  std::exit(1);
}

size_t ParseSize(const std::string& text) {
  char* end = nullptr;
  size_t n = std::strtoull(text.c_str(), &end, 10);
  if (*end == 'K' || *end == 'k') n <<= 10;
  if (*end == 'M' || *end == 'm') n <<= 20;
  return n;
}

std::string SizeName(size_t n) {
  if (n >= (1 << 20) && n % (1 << 20) == 0) return std::to_string(n >> 20) + " MiB";
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + " KiB";
  return std::to_string(n) + " B";
}

std::unique_ptr<Cache> OpenCache(const std::string& dir, ReadVerify verify) {
  CacheOptions o;
  o.background = false;
  o.sync = false; // puts are not measured here
  o.read_verify = verify;
  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir, o);
  if (!c.ok()) Fail(c.status(), "open");
  return *std::move(c);
}

} // namespace

int main(int argc, char** argv) {
  std::string dir;
  double seconds = 1.0;
  std::vector<size_t> sizes = {1 << 10, 64 << 10, 1 << 20, 16 << 20};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--dir" && has_value) {
      dir = argv[++i];
    } else if (a == "--seconds" && has_value) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--sizes" && has_value) {
      sizes.clear();
      std::string list = argv[++i];
      for (size_t at = 0; at <= list.size();) {
        const size_t comma = std::min(list.find(',', at), list.size());
        if (comma > at) sizes.push_back(ParseSize(list.substr(at, comma - at)));
        at = comma + 1;
      }
    } else {
      std::fprintf(stderr, "usage: read_verify_bench [--dir DIR] [--seconds S] "
                           "[--sizes 1K,64K,1M,16M]\n");
      return 2;
    }
  }
  std::unique_ptr<kiln::util::TempDir> temp;
  if (dir.empty()) {
    absl::StatusOr<kiln::util::TempDir> t = kiln::util::TempDir::Create("kiln-read-verify-bench");
    if (!t.ok()) Fail(t.status(), "temp dir");
    temp = std::make_unique<kiln::util::TempDir>(*std::move(t));
    dir = temp->path();
  }

  std::printf("| size | what | p50 us | p99 us | MB/s at p50 | p50 / plain read |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (size_t size : sizes) {
    // One cache directory per mode, holding the same artifacts.
    const std::string base = dir + "/" + std::to_string(size);
    std::unique_ptr<Cache> checksum = OpenCache(base + "-xxh3", ReadVerify::kChecksum);
    std::unique_ptr<Cache> full = OpenCache(base + "-sha256", ReadVerify::kFullHash);
    std::vector<std::string> keys;
    std::vector<std::string> bytes;
    std::vector<std::string> paths;
    for (int k = 0; k < kArtifacts; ++k) {
      Artifact a;
      a.target = "cuda:sm_90";
      a.files.push_back({"cubin", RandomBytes(size, size + static_cast<uint64_t>(k)), "", 0});
      keys.push_back("bench-" + std::to_string(size) + "-" + std::to_string(k));
      bytes.push_back(a.files[0].bytes);
      if (absl::Status s = checksum->PutArtifact(keys.back(), a); !s.ok()) Fail(s, "put");
      if (absl::Status s = full->PutArtifact(keys.back(), a); !s.ok()) Fail(s, "put");
      const std::string digest = kiln::util::Sha256Hex(a.files[0].bytes);
      paths.push_back(absl::StrCat(base, "-sha256/blobs/", digest.substr(0, 2), "/", digest));
    }
    uint64_t sink = 0;
    auto row = [&](const char* what, std::pair<double, double> r, double plain_p50) {
      const double mbps = static_cast<double>(size) / r.first; // bytes/us = MB/s
      if (plain_p50 > 0) {
        std::printf("| %s | %s | %.1f | %.1f | %.0f | %.2fx |\n", SizeName(size).c_str(), what,
                    r.first, r.second, mbps, r.first / plain_p50);
      } else {
        std::printf("| %s | %s | %.1f | %.1f | %.0f | |\n", SizeName(size).c_str(), what, r.first,
                    r.second, mbps);
      }
    };
    auto get = [&](Cache& c) {
      return [&](size_t i) {
        absl::StatusOr<Artifact> a = c.GetArtifact(keys[i % kArtifacts]);
        if (!a.ok()) Fail(a.status(), "get");
        sink += a->files[0].bytes.size();
      };
    };
    // Warm the page cache and the hit memos.
    for (int k = 0; k < kArtifacts; ++k) {
      get (*checksum)(k);
      get (*full)(k);
    }
    const auto plain =
        Measure(seconds, [&](size_t i) { sink += ReadPlain(paths[i % kArtifacts]).size(); });
    row("plain read of the blob file (no check)", plain, 0);
    row("GetArtifact, XXH3 (kChecksum, the old default)", Measure(seconds, get(*checksum)),
        plain.first);
    row("GetArtifact, SHA-256 (kFullHash, the default)", Measure(seconds, get(*full)), plain.first);
    row("XXH3-64 alone, bytes in memory",
        Measure(seconds,
                [&](size_t i) { sink += XXH3_64bits(bytes[i % kArtifacts].data(), size); }),
        0);
    row("SHA-256 alone, bytes in memory",
        Measure(seconds,
                [&](size_t i) { sink += kiln::util::Sha256Hex(bytes[i % kArtifacts]).size(); }),
        0);
    if (sink == 0) std::printf("(nothing read)\n");
  }
  return 0;
}
