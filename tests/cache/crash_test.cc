// A writer process is killed with SIGKILL at random points of its puts, 100
// times. After each kill the cache opens cleanly, every entry the writer
// reported committed reads back intact, and no partial entry is visible.
// A second directory does the same with a small size limit, so that kills
// also land inside eviction.
#include <csignal>
#include <random>
#include <set>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "cache/cache.h"
#include "gtest/gtest.h"
#include "tests/cache/cache_test_util.h"
#include "util/temp_dir.h"

namespace kiln::cache {
namespace {

using testing::MakeArtifact;
using testing::MatchesKey;

size_t CubinSize(const std::string& key) { return 2000 + (std::hash<std::string>{}(key) % 30000); }

CacheOptions Options(bool bounded, bool sync) {
  CacheOptions o;
  o.background = false;
  o.sync = sync;
  if (bounded) {
    o.max_size_bytes = 400 << 10;
    o.hard_limit_bytes = 4 << 20;
    o.limits_count_overhead = false; // limits below the 2 MiB reserve: blobs only
  }
  o.on_warning = [](const std::string&) {};
  return o;
}

// The child: stores artifacts until killed, reporting each committed key on
// `fd` (one line per key, a single write(), so lines are never interleaved).
[[noreturn]] void Writer(const std::string& dir, int round, bool bounded, bool sync, int fd) {
  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir, Options(bounded, sync));
  if (!c.ok()) _exit(3);
  std::mt19937 rng(round);
  for (int n = 0;; ++n) {
    const std::string key = "r" + std::to_string(round) + "-" + std::to_string(n);
    if (!(*c)->PutArtifact(key, MakeArtifact(key, CubinSize(key))).ok()) _exit(4);
    const std::string line = key + "\n";
    if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(5);
    if (rng() % 4 == 0) {
      BestConfig b;
      const int latency = static_cast<int>(rng() % 100);
      b.config_json = std::to_string(latency);
      b.latency.median_us = latency;
      b.artifact_key = key;
      if (!(*c)->PutBest({"prog", "s", "cpu", "m"}, b).ok()) _exit(6);
    }
  }
}

// Starts a writer, kills it at a random point after its first commit, and
// returns the keys it reported committed.
std::vector<std::string> RunAndKill(const std::string& dir, int round, bool bounded, bool sync,
                                    std::mt19937& rng) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Writer(dir, round, bounded, sync, fds[1]);
  }
  close(fds[1]);
  std::string got;
  char buf[4096];
  // Wait for the first commit, so the kill lands inside the put loop.
  while (got.find('\n') == std::string::npos) {
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  usleep(std::uniform_int_distribution<useconds_t>(0, sync ? 40000 : 8000)(rng));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << "the writer died on its own: status " << status;
  while (true) {
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  std::vector<std::string> keys;
  size_t start = 0;
  for (size_t nl; (nl = got.find('\n', start)) != std::string::npos; start = nl + 1) {
    keys.push_back(got.substr(start, nl - start));
  }
  return keys;
}

// Every visible artifact whose key starts with `prefix` is whole; returns
// how many artifacts are visible in all.
size_t CheckVisible(Cache& c, const std::string& prefix = "") {
  absl::StatusOr<std::vector<ArtifactSummary>> all = c.ListArtifacts();
  EXPECT_TRUE(all.ok()) << all.status();
  if (!all.ok()) return 0;
  for (const ArtifactSummary& a : *all) {
    if (a.key.rfind(prefix, 0) != 0) continue;
    absl::StatusOr<Artifact> got = c.GetArtifact(a.key);
    EXPECT_TRUE(got.ok()) << "visible but unreadable: " << a.key << ": " << got.status();
    if (got.ok()) {
      EXPECT_TRUE(MatchesKey(*got, a.key, CubinSize(a.key))) << "torn: " << a.key;
    }
  }
  absl::StatusOr<BestConfig> best = c.GetBest({"prog", "s", "cpu", "m"});
  if (best.ok()) {
    EXPECT_EQ(best->config_json, std::to_string(static_cast<int>(best->latency.median_us)));
  }
  return all->size();
}

TEST(CrashTest, WriterKilledAtRandomPointsLeavesNoPartialEntries) {
  absl::StatusOr<util::TempDir> tmp = util::TempDir::Create("kiln-crash-test");
  ASSERT_TRUE(tmp.ok());
  const std::string dir = tmp->path() + "/cache";
  std::mt19937 rng(20261201);
  std::set<std::string> committed;
  for (int round = 0; round < 100; ++round) {
    SCOPED_TRACE(round);
    // Half the rounds fsync (kills land mostly in fsync), half do not (kills
    // land across the whole put path, index commit included).
    std::vector<std::string> keys = RunAndKill(dir, round, false, round % 2 == 0, rng);
    ASSERT_FALSE(keys.empty());
    committed.insert(keys.begin(), keys.end());
    absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir, Options(false, false));
    ASSERT_TRUE(c.ok()) << "the cache must open cleanly after a kill: " << c.status();
    // Every round: this round's entries (the one being written at the kill
    // among them). Every tenth round: everything committed so far.
    const bool full = round % 10 == 9;
    const std::vector<std::string> check =
        full ? std::vector<std::string>(committed.begin(), committed.end()) : keys;
    for (const std::string& k : check) {
      absl::StatusOr<Artifact> got = (*c)->GetArtifact(k);
      ASSERT_TRUE(got.ok()) << "committed before the kill but gone: " << k << ": " << got.status();
      ASSERT_TRUE(MatchesKey(*got, k, CubinSize(k))) << k;
    }
    CheckVisible(**c, full ? "" : "r" + std::to_string(round) + "-");
    if (round % 25 == 24) {
      absl::StatusOr<VerifyReport> v = (*c)->Verify();
      ASSERT_TRUE(v.ok());
      EXPECT_TRUE(v->ok()) << v->corrupt_blobs << " corrupt, " << v->missing_blobs
                           << " missing, index: " << v->index_findings;
    }
  }
  // What a killed put can leave (orphan blobs, temp files) Gc removes.
  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir, Options(false, false));
  ASSERT_TRUE(c.ok());
  absl::StatusOr<GcReport> gc = (*c)->Gc(GcOptions{std::nullopt, true});
  ASSERT_TRUE(gc.ok());
  EXPECT_GT(gc->removed_orphans + gc->removed_temps, 0)
      << "no kill landed inside a put: the test would not test anything";
  absl::StatusOr<VerifyReport> v = (*c)->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok()) << v->corrupt_blobs << " corrupt, " << v->missing_blobs
                       << " missing, index: " << v->index_findings;
  EXPECT_EQ(v->orphan_files, 0);
  EXPECT_EQ((*c)->Stats()->artifacts, static_cast<int64_t>(CheckVisible(**c)));
}

TEST(CrashTest, WriterKilledDuringEvictionLeavesNoPartialEntries) {
  absl::StatusOr<util::TempDir> tmp = util::TempDir::Create("kiln-crash-test");
  ASSERT_TRUE(tmp.ok());
  const std::string dir = tmp->path() + "/cache";
  std::mt19937 rng(7);
  // On a loaded machine a kill may land before a round's first put ends, so
  // a round may add nothing visible; the rounds together must have.
  int rounds_with_entries = 0;
  for (int round = 0; round < 30; ++round) {
    SCOPED_TRACE(round);
    std::vector<std::string> keys = RunAndKill(dir, round, true, false, rng);
    ASSERT_FALSE(keys.empty());
    absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir, Options(true, false));
    ASSERT_TRUE(c.ok()) << c.status();
    if (CheckVisible(**c) > 0) ++rounds_with_entries;
  }
  EXPECT_GT(rounds_with_entries, 0);
  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir, Options(true, false));
  ASSERT_TRUE(c.ok());
  EXPECT_GT((*c)->Stats()->evictions, 0);
  absl::StatusOr<VerifyReport> v = (*c)->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok()) << v->corrupt_blobs << " corrupt, " << v->missing_blobs
                       << " missing, index: " << v->index_findings;
}

} // namespace
} // namespace kiln::cache
