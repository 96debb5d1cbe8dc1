// ListJobs' cost in the daemon: JobManager::ListFor with N jobs kept in
// memory (finished, as after a busy day: up to keep_finished = 10,000), at
// ListJobs' default limit (50) and a small and the largest one, for an admin
// (every job visible) and for a tenant that owns one job in 16. The store is
// the cache's SQLite job log (CacheJobStore, as in kilnd) in a fresh temporary
// directory, or none (`/store:0`: the in-memory part alone).
//
//   build/bench/job_list_bench [--benchmark_filter=...]
//
// Issue 27: a ListJobs of limit 5 used to snapshot every kept job.
#include <filesystem>
#include <memory>
#include <string>

#include <unistd.h>

#include "benchmark/benchmark.h"
#include "cache/cache.h"
#include "server/cache_job_store.h"
#include "server/job_manager.h"

namespace {

using kiln::server::Job;
using kiln::server::JobManager;
using kiln::server::JobViewer;

struct Fixture {
  std::string dir;
  std::unique_ptr<kiln::cache::Cache> cache;
  std::unique_ptr<kiln::server::CacheJobStore> store;
  std::unique_ptr<JobManager> jobs;

  Fixture(int n, bool with_store) {
    if (with_store) {
      dir = std::filesystem::temp_directory_path() /
            ("kiln_job_list_bench." + std::to_string(getpid()));
      std::filesystem::remove_all(dir);
      auto opened = kiln::cache::Cache::Open(dir);
      if (!opened.ok()) std::abort();
      cache = *std::move(opened);
      store = std::make_unique<kiln::server::CacheJobStore>(cache.get());
    }
    jobs = std::make_unique<JobManager>(store.get());
    for (int i = 0; i < n; ++i) {
      // One job in 16 is the tenant's; the rest another client's.
      std::shared_ptr<Job> job = jobs->Create(kiln::v1::JOB_KIND_COMPILE, std::to_string(i),
                                              /*held=*/false, i % 16 == 0 ? "tenant" : "other");
      job->Succeed(0);
    }
  }
  ~Fixture() {
    jobs.reset();
    store.reset();
    cache.reset();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
};

// Args: jobs kept, limit, admin (1) or tenant (0), store (1) or none (0).
void BM_ListFor(benchmark::State& state) {
  Fixture f(static_cast<int>(state.range(0)), state.range(3) != 0);
  const JobViewer viewer{state.range(2) != 0 ? "admin" : "tenant", state.range(2) != 0};
  size_t listed = 0;
  for (auto _ : state) {
    std::vector<kiln::v1::Job> out = f.jobs->ListFor(state.range(1), viewer);
    listed = out.size();
    benchmark::DoNotOptimize(out);
  }
  state.counters["listed"] = static_cast<double>(listed);
}
BENCHMARK(BM_ListFor)
    ->ArgNames({"jobs", "limit", "admin", "store"})
    ->ArgsProduct({{6000}, {5, 50, 10000}, {1, 0}, {1, 0}})
    ->Unit(benchmark::kMicrosecond);

} // namespace

BENCHMARK_MAIN();
