// Several processes share one cache directory: 8 processes x 1000 mixed
// operations (put, get, remove, eviction, best-config updates). Afterwards
// every committed entry reads back intact, nothing is torn, and no caller
// saw an error other than a miss or a full cache (in particular never
// "database is locked").
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
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

constexpr int kProcesses = 8;
constexpr int kOpsPerProcess = 1000;
constexpr int kKeys = 150;
constexpr int kPrograms = 8;

// The cubin size follows from the key, so a reader can recompute it.
size_t CubinSize(const std::string& key) { return 1000 + (std::hash<std::string>{}(key) % 30000); }

CacheOptions Options() {
  CacheOptions o;
  o.background = false;
  o.sync = false; // process crashes are another test's; this one is about sharing
  o.max_size_bytes = 1 << 20;
  o.hard_limit_bytes = 3 << 19;
  o.limits_count_overhead = false; // limits below the 2 MiB reserve: blobs only
  o.on_warning = [](const std::string&) {};
  return o;
}

// Runs in a forked child; returns the process's exit code. Problems are
// written to `report` one per line.
int Worker(const std::string& dir, int id, const std::string& report) {
  std::ofstream out(report);
  absl::StatusOr<std::unique_ptr<Cache>> opened = Cache::Open(dir, Options());
  if (!opened.ok()) {
    out << "open: " << opened.status() << "\n";
    return 1;
  }
  Cache& c = **opened;
  std::mt19937 rng(1000 + id);
  int problems = 0;
  auto bad = [&](const std::string& op, const absl::Status& s) {
    out << op << ": " << s << "\n";
    ++problems;
  };
  for (int i = 0; i < kOpsPerProcess; ++i) {
    const std::string key = "key" + std::to_string(rng() % kKeys);
    const int op = static_cast<int>(rng() % 100);
    if (op < 40) {
      absl::Status s = c.PutArtifact(key, MakeArtifact(key, CubinSize(key)));
      if (!s.ok() && s.code() != absl::StatusCode::kResourceExhausted) bad("put " + key, s);
    } else if (op < 75) {
      absl::StatusOr<Artifact> a = c.GetArtifact(key);
      if (a.ok()) {
        if (!MatchesKey(*a, key, CubinSize(key))) bad("get " + key, absl::DataLossError("torn"));
      } else if (a.status().code() != absl::StatusCode::kNotFound) {
        bad("get " + key, a.status());
      }
    } else if (op < 85) {
      absl::Status s = c.RemoveArtifact(key);
      if (!s.ok() && s.code() != absl::StatusCode::kNotFound) bad("remove " + key, s);
    } else if (op < 97) {
      BestConfig best;
      const int latency = static_cast<int>(rng() % 1000);
      best.config_json = "{\"block_M\": " + std::to_string(latency) + "}";
      best.latency.median_us = latency;
      best.artifact_key = key;
      const BestConfigKey bk{"prog" + std::to_string(rng() % kPrograms), "M=1", "cuda:sm_90",
                             rng() % 2 == 0 ? "H200" : "A100"};
      absl::StatusOr<bool> s = c.PutBest(
          bk, best, rng() % 2 == 0 ? Cache::BestUpdate::kIfFaster : Cache::BestUpdate::kReplace);
      if (!s.ok()) bad("put best", s.status());
      absl::StatusOr<BestConfig> got = c.GetBest(bk);
      if (!got.ok()) {
        bad("get best", got.status());
      } else if (got->config_json !=
                 "{\"block_M\": " + std::to_string(static_cast<int>(got->latency.median_us)) +
                     "}") {
        bad("get best", absl::DataLossError("torn best config"));
      }
    } else {
      absl::StatusOr<GcReport> r = c.Gc(GcOptions{256 << 10, false});
      if (!r.ok()) bad("gc", r.status());
    }
  }
  return problems == 0 ? 0 : 1;
}

TEST(MultiProcessTest, EightProcessesShareOneCache) {
  absl::StatusOr<util::TempDir> tmp = util::TempDir::Create("kiln-mp-test");
  ASSERT_TRUE(tmp.ok());
  const std::string dir = tmp->path() + "/cache";
  std::vector<pid_t> children;
  for (int id = 0; id < kProcesses; ++id) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      _exit(Worker(dir, id, tmp->path() + "/report" + std::to_string(id)));
    }
    children.push_back(pid);
  }
  for (int id = 0; id < kProcesses; ++id) {
    int status = 0;
    ASSERT_EQ(waitpid(children[id], &status, 0), children[id]);
    std::ifstream in(tmp->path() + "/report" + std::to_string(id));
    std::stringstream problems;
    problems << in.rdbuf();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "process " << id << " reported:\n"
                                                               << problems.str();
    EXPECT_EQ(problems.str().find("locked"), std::string::npos) << problems.str();
  }

  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(dir, Options());
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<std::vector<ArtifactSummary>> all = (*c)->ListArtifacts();
  ASSERT_TRUE(all.ok());
  EXPECT_GT(all->size(), 0U);
  for (const ArtifactSummary& a : *all) {
    absl::StatusOr<Artifact> got = (*c)->GetArtifact(a.key);
    ASSERT_TRUE(got.ok()) << a.key << ": " << got.status();
    EXPECT_TRUE(MatchesKey(*got, a.key, CubinSize(a.key))) << a.key;
  }
  absl::StatusOr<std::vector<std::pair<BestConfigKey, BestConfig>>> bests = (*c)->ListBest("");
  ASSERT_TRUE(bests.ok());
  EXPECT_GT(bests->size(), 0U);
  absl::StatusOr<VerifyReport> v = (*c)->Verify();
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->ok()) << v->corrupt_blobs << " corrupt, " << v->missing_blobs << " missing, "
                       << v->index_findings;
  absl::StatusOr<CacheStats> s = (*c)->Stats();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->corrupt_blobs, 0);
  EXPECT_GT(s->evictions, 0) << "the mix should have exercised eviction";
  EXPECT_GT(s->hits, 0);
  // The byte counter agrees with the blobs the index holds.
  uint64_t sum = 0;
  ASSERT_TRUE((*c)->Gc(GcOptions{std::nullopt, true}).ok());
  BlobStore store(dir + "/blobs", {});
  ASSERT_TRUE(store
                  .ForEach([&](const std::string& d) {
                    absl::StatusOr<BlobInfo> info = store.Stat(d);
                    if (info.ok()) sum += info->file_size;
                  })
                  .ok());
  EXPECT_EQ((*c)->Stats()->blob_bytes, sum);
}

} // namespace
} // namespace kiln::cache
