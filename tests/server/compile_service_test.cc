#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/compile_service.h"
#include "tests/support/example_loader.h"

namespace kiln::server {
namespace {

CompilePoolOptions PoolOptions(int threads, int64_t queued) {
  CompilePoolOptions o;
  o.threads = threads;
  o.max_queued = {queued, queued, queued};
  return o;
}

using ::testing::HasSubstr;
using ::testing::Not;

// An ArtifactStore in memory, with a switch to make puts fail.
class MemoryStore final : public ArtifactStore {
 public:
  absl::StatusOr<cache::Artifact> Get(const std::string& key,
                                      const std::vector<std::string>& kinds) override {
    absl::MutexLock lock(&mu_);
    auto it = artifacts_.find(key);
    if (it == artifacts_.end()) return absl::NotFoundError("miss");
    cache::Artifact a = it->second;
    if (!kinds.empty()) {
      std::vector<cache::ArtifactFile> keep;
      for (auto& f : a.files) {
        if (std::find(kinds.begin(), kinds.end(), f.kind) != kinds.end()) keep.push_back(f);
      }
      a.files = std::move(keep);
    }
    return a;
  }
  absl::Status Put(const std::string& key, const cache::Artifact& artifact) override {
    absl::MutexLock lock(&mu_);
    if (full_) return absl::ResourceExhaustedError("disk full: /srv/kiln-cache/blobs/tmp/x");
    artifacts_[key] = artifact;
    return absl::OkStatus();
  }
  absl::Status CheckRoom() override {
    absl::MutexLock lock(&mu_);
    if (no_room_) return absl::ResourceExhaustedError("/srv/kiln-cache has 0 bytes free");
    return absl::OkStatus();
  }
  void set_full(bool full) {
    absl::MutexLock lock(&mu_);
    full_ = full;
  }
  void set_no_room(bool no_room) {
    absl::MutexLock lock(&mu_);
    no_room_ = no_room;
  }
  size_t size() {
    absl::MutexLock lock(&mu_);
    return artifacts_.size();
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, cache::Artifact> artifacts_ ABSL_GUARDED_BY(mu_);
  bool full_ ABSL_GUARDED_BY(mu_) = false;
  bool no_room_ ABSL_GUARDED_BY(mu_) = false;
};

CompileCall GemmCall() {
  testing::ExampleFile ex = testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/gemm/gemm.py");
  CompileCall call;
  call.program.text = ex.source;
  call.program.file_name = ex.rel_path;
  call.program.bindings = ex.test_bind;
  return call; // target cpu: the host compiler takes about a second
}

struct Fixture {
  MemoryStore store;
  MemoryJobStore job_store;
  JobManager jobs{&job_store};
  CompilePool pool;
  CompileService service{&store, &jobs, &pool};
  explicit Fixture(int threads = 2) : pool(PoolOptions(threads, 64)) {}
};

TEST(CompileService, MissThenHit) {
  Fixture f;
  absl::StatusOr<CompileReply> first = f.service.CompileSync(GemmCall());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->outcome, kiln::v1::CACHE_OUTCOME_MISS);
  EXPECT_FALSE(first->job_id.empty());
  const kiln::v1::ArtifactMetadata& m = first->metadata;
  EXPECT_EQ(m.key().size(), 64u);
  EXPECT_EQ(m.target(), "cpu");
  ASSERT_GE(m.files_size(), 2);
  EXPECT_EQ(m.files(0).kind(), kiln::v1::ARTIFACT_KIND_SHARED_OBJECT);
  EXPECT_GT(m.files(0).size_bytes(), 0);
  EXPECT_EQ(m.launch().kernel_symbol(), "kiln_kernel");
  EXPECT_EQ(m.launch().params_size(), 3);
  EXPECT_THAT(m.toolchain_fingerprint(), HasSubstr("kiln-codegen="));

  absl::StatusOr<CompileReply> second = f.service.CompileSync(GemmCall());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->outcome, kiln::v1::CACHE_OUTCOME_HIT);
  EXPECT_EQ(second->metadata.key(), m.key());
  EXPECT_TRUE(second->job_id.empty());
  EXPECT_EQ(f.service.counters().builds.load(), 1);
  EXPECT_EQ(f.service.counters().memo_hits.load(), 1);
  // The job that built it is recorded as succeeded.
  absl::StatusOr<kiln::v1::Job> job = f.jobs.Get(first->job_id);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state(), kiln::v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job->key(), m.key());
}

TEST(CompileService, SixtyFourIdenticalConcurrentCompilesBuildOnce) {
  Fixture f(2);
  constexpr int kCallers = 64;
  std::vector<std::thread> threads;
  std::vector<absl::StatusOr<CompileReply>> replies(kCallers, absl::UnknownError("not run"));
  absl::Notification go;
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      go.WaitForNotification();
      replies[i] = f.service.CompileSync(GemmCall());
    });
  }
  go.Notify();
  for (auto& t : threads) t.join();
  std::map<int, int> outcomes;
  for (const auto& r : replies) {
    ASSERT_TRUE(r.ok()) << r.status();
    ++outcomes[r->outcome];
    EXPECT_EQ(r->metadata.key(), replies[0]->metadata.key());
  }
  EXPECT_EQ(f.service.counters().builds.load(), 1);
  EXPECT_EQ(outcomes[kiln::v1::CACHE_OUTCOME_MISS], 1);
  EXPECT_EQ(outcomes[kiln::v1::CACHE_OUTCOME_MISS] + outcomes[kiln::v1::CACHE_OUTCOME_JOINED] +
                outcomes[kiln::v1::CACHE_OUTCOME_HIT],
            kCallers);
  EXPECT_GT(outcomes[kiln::v1::CACHE_OUTCOME_JOINED], 0);
  EXPECT_EQ(f.store.size(), 1u);
}

// Identical cold requests share one frontend run: with a prepare pool that
// takes two programs per client, 64 identical calls from one client all
// succeed (each running its own frontend, 62 were refused).
TEST(CompileService, IdenticalRequestsShareOneFrontendRun) {
  MemoryStore store;
  MemoryJobStore job_store;
  JobManager jobs{&job_store};
  CompilePool pool(PoolOptions(2, 64));
  PreparePoolOptions po;
  po.threads = 1;
  po.max_queued_per_client = 2;
  PreparePool prepare(po);
  {
    CompileService service(&store, &jobs, &pool, &prepare);
    constexpr int kCallers = 64;
    std::vector<std::thread> threads;
    std::vector<absl::StatusOr<CompileReply>> replies(kCallers, absl::UnknownError("not run"));
    absl::Notification go;
    for (int i = 0; i < kCallers; ++i) {
      threads.emplace_back([&, i] {
        go.WaitForNotification();
        replies[i] = service.CompileSync(GemmCall());
      });
    }
    go.Notify();
    for (auto& t : threads) t.join();
    for (const auto& r : replies) {
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->metadata.key(), replies[0]->metadata.key());
    }
    EXPECT_EQ(service.counters().builds.load(), 1);
    EXPECT_GT(service.counters().prepares_joined.load(), 0);
    EXPECT_LT(service.counters().prepares.load(), kCallers / 2);
    prepare.Shutdown(); // its tasks call into the service
  }
}

// A request that started the shared run and then left (cancelled) does not
// take the others down with it: they run the frontend again.
TEST(CompileService, TheFirstOfIdenticalRequestsLeavingDoesNotFailTheOthers) {
  MemoryStore store;
  MemoryJobStore job_store;
  JobManager jobs{&job_store};
  CompilePool pool(PoolOptions(1, 64));
  PreparePoolOptions po;
  po.threads = 1;
  PreparePool prepare(po);
  // Hold the prepare thread so both calls wait, the second joined to the first.
  absl::Notification release, holding;
  ASSERT_TRUE(prepare
                  .Submit(
                      "blocker", absl::InfiniteFuture(),
                      [&](const std::atomic<bool>*) {
                        holding.Notify();
                        release.WaitForNotification();
                      },
                      [](absl::Status) {})
                  .ok());
  holding.WaitForNotification();
  {
    CompileService service(&store, &jobs, &pool, &prepare);
    absl::Notification first_done, second_done;
    absl::StatusOr<CompileReply> first = absl::UnknownError("not run");
    absl::StatusOr<CompileReply> second = absl::UnknownError("not run");
    auto a = service.Start(GemmCall(), [&](absl::StatusOr<CompileReply> r) {
      first = std::move(r);
      first_done.Notify();
    });
    auto b = service.Start(GemmCall(), [&](absl::StatusOr<CompileReply> r) {
      second = std::move(r);
      second_done.Notify();
    });
    EXPECT_EQ(service.counters().prepares_joined.load(), 1);
    a->Cancel();
    ASSERT_TRUE(first_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
    EXPECT_EQ(first.status().code(), absl::StatusCode::kCancelled);
    release.Notify();
    ASSERT_TRUE(second_done.WaitForNotificationWithTimeout(absl::Seconds(120)));
    ASSERT_TRUE(second.ok()) << second.status();
    EXPECT_EQ(second->outcome, kiln::v1::CACHE_OUTCOME_MISS);
    EXPECT_EQ(service.counters().prepares.load(), 2);
    prepare.Shutdown();
  }
}

TEST(CompileService, BadProgramIsALocatedErrorAndNoJob) {
  Fixture f;
  CompileCall call = GemmCall();
  // An unknown tile op inside the kernel.
  const size_t at = call.program.text.find("T.gemm(");
  ASSERT_NE(at, std::string::npos);
  call.program.text.replace(at, 7, "T.gemmm(");
  absl::StatusOr<CompileReply> r = f.service.CompileSync(call);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("examples/gemm/gemm.py:"));
  EXPECT_TRUE(f.jobs.List(10).empty());
}

TEST(CompileService, AsyncReturnsAJobThatFinishesWithoutWaiters) {
  Fixture f;
  CompileCall call = GemmCall();
  call.async = true;
  absl::StatusOr<CompileReply> r = f.service.CompileSync(call);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome, kiln::v1::CACHE_OUTCOME_MISS);
  ASSERT_FALSE(r->job_id.empty());
  std::shared_ptr<Job> job = f.jobs.Find(r->job_id);
  ASSERT_NE(job, nullptr);
  ASSERT_TRUE(job->WaitDone(absl::Now() + absl::Seconds(120)));
  EXPECT_EQ(job->Snapshot().state(), kiln::v1::JOB_STATE_SUCCEEDED);
  ASSERT_NE(job->result<CompileJobResult>(), nullptr);
  absl::StatusOr<CompileReply> hit = f.service.CompileSync(GemmCall());
  ASSERT_TRUE(hit.ok());
  EXPECT_EQ(hit->outcome, kiln::v1::CACHE_OUTCOME_HIT);
}

// A one-thread pool held by a gate task, so compile jobs stay queued.
struct GatedFixture : Fixture {
  absl::Notification gate, started;
  GatedFixture() : Fixture(1) {
    EXPECT_TRUE(pool.Submit(Priority::kInteractive, "gate",
                            [this] {
                              started.Notify();
                              gate.WaitForNotification();
                            })
                    .ok());
    started.WaitForNotification();
  }
  ~GatedFixture() {
    if (!gate.HasBeenNotified()) gate.Notify();
  }
};

TEST(CompileService, TheLastWaiterLeavingCancelsTheJob) {
  GatedFixture f;
  absl::Notification replied;
  absl::Status got;
  std::shared_ptr<CompileService::Pending> pending =
      f.service.Start(GemmCall(), [&](absl::StatusOr<CompileReply> r) {
        got = r.status();
        replied.Notify();
      });
  std::vector<kiln::v1::Job> listed = f.jobs.List(10);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].waiters(), 1);
  pending->Cancel();
  replied.WaitForNotification();
  EXPECT_EQ(got.code(), absl::StatusCode::kCancelled);
  absl::StatusOr<kiln::v1::Job> job = f.jobs.Get(listed[0].id());
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state(), kiln::v1::JOB_STATE_CANCELLED);
  f.gate.Notify();
  f.pool.Shutdown();
  EXPECT_EQ(f.service.counters().builds.load(), 0);
}

TEST(CompileService, AJobOthersShareGoesOnWhenOneCallerLeaves) {
  GatedFixture f;
  absl::Notification a_done, b_done;
  absl::StatusOr<CompileReply> a_reply = absl::UnknownError(""), b_reply = absl::UnknownError("");
  auto a = f.service.Start(GemmCall(), [&](absl::StatusOr<CompileReply> r) {
    a_reply = std::move(r);
    a_done.Notify();
  });
  auto b = f.service.Start(GemmCall(), [&](absl::StatusOr<CompileReply> r) {
    b_reply = std::move(r);
    b_done.Notify();
  });
  a->Cancel();
  a_done.WaitForNotification();
  EXPECT_EQ(a_reply.status().code(), absl::StatusCode::kCancelled);
  f.gate.Notify();
  b_done.WaitForNotification();
  ASSERT_TRUE(b_reply.ok()) << b_reply.status();
  EXPECT_EQ(b_reply->outcome, kiln::v1::CACHE_OUTCOME_JOINED);
  EXPECT_EQ(f.service.counters().builds.load(), 1);
}

TEST(CompileService, AStoreThatCannotTakeTheArtifactFailsTheCompileClearly) {
  Fixture f;
  f.store.set_full(true);
  absl::StatusOr<CompileReply> r = f.service.CompileSync(GemmCall());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("could not store"));
  EXPECT_THAT(std::string(r.status().message()), Not(HasSubstr("/srv"))); // the log has it
  // Once there is room, the same request compiles.
  f.store.set_full(false);
  absl::StatusOr<CompileReply> again = f.service.CompileSync(GemmCall());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->outcome, kiln::v1::CACHE_OUTCOME_MISS);
}

// Issue 27, item 6: a full disk was found only after the whole build, and
// the client was told the server's paths. The store is asked first; hits
// are still served.
TEST(CompileService, AFullDiskIsFoundBeforeTheBuildAndNamesNoServerPath) {
  Fixture f;
  absl::StatusOr<CompileReply> stored = f.service.CompileSync(GemmCall());
  ASSERT_TRUE(stored.ok()) << stored.status();
  f.store.set_no_room(true);
  absl::StatusOr<CompileReply> hit = f.service.CompileSync(GemmCall());
  ASSERT_TRUE(hit.ok()) << hit.status();
  EXPECT_EQ(hit->outcome, kiln::v1::CACHE_OUTCOME_HIT);

  CompileCall other = GemmCall();
  other.program.bindings.emplace_back("M", frontend::ParseBindingText("99"));
  absl::StatusOr<CompileReply> refused = f.service.CompileSync(other);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  const std::string message(refused.status().message());
  EXPECT_THAT(message, HasSubstr("disk is full"));
  EXPECT_THAT(message, HasSubstr("cache.min_free"));
  EXPECT_THAT(message, Not(HasSubstr("/srv")));
  EXPECT_EQ(f.service.counters().builds.load(), 1) << "no build for the refused compile";

  f.store.set_no_room(false);
  absl::StatusOr<CompileReply> built = f.service.CompileSync(other);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(f.service.counters().builds.load(), 2);
}

TEST(CompileService, FullQueueIsResourceExhausted) {
  MemoryStore store;
  JobManager jobs(nullptr);
  CompilePool pool(PoolOptions(1, 1));
  CompileService service(&store, &jobs, &pool);
  absl::Notification gate, started;
  ASSERT_TRUE(pool.Submit(Priority::kInteractive, "gate",
                          [&] {
                            started.Notify();
                            gate.WaitForNotification();
                          })
                  .ok());
  started.WaitForNotification();
  CompileCall one = GemmCall();
  one.async = true;
  ASSERT_TRUE(service.CompileSync(one).ok()); // fills the one queue slot
  CompileCall two = GemmCall();
  two.program.bindings.emplace_back("M", frontend::ParseBindingText("99"));
  absl::StatusOr<CompileReply> r = service.CompileSync(two);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  gate.Notify();
}

kiln::v1::CompileRequest GemmRequest() {
  testing::ExampleFile ex = testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/gemm/gemm.py");
  kiln::v1::CompileRequest r;
  r.mutable_program()->set_tilelang_source(ex.source);
  r.mutable_program()->set_file_name(ex.rel_path);
  for (const auto& [name, value] : ex.test_bind) {
    if (value.kind == frontend::BindingValue::Kind::kInt) {
      (*r.mutable_program()->mutable_bindings())[name].set_int_value(value.ival);
    } else if (value.kind == frontend::BindingValue::Kind::kString) {
      (*r.mutable_program()->mutable_bindings())[name].set_string_value(value.sval);
    }
  }
  r.set_target("cpu");
  return r;
}

TEST(CompileService, RequestDigestCoversEveryFieldThatMatters) {
  const kiln::v1::CompileRequest base = GemmRequest();
  const std::optional<CompileService::RequestDigest> d = CompileService::DigestOf(base);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(CompileService::DigestOf(base), d);
  // The same bindings inserted in another order: the same digest.
  kiln::v1::CompileRequest reordered = base;
  reordered.mutable_program()->mutable_bindings()->clear();
  std::vector<std::pair<std::string, kiln::v1::BindingValue>> entries(
      base.program().bindings().begin(), base.program().bindings().end());
  std::reverse(entries.begin(), entries.end());
  for (const auto& [k, v] : entries) (*reordered.mutable_program()->mutable_bindings())[k] = v;
  EXPECT_EQ(CompileService::DigestOf(reordered), d);

  auto changed = [&](auto&& edit) {
    kiln::v1::CompileRequest r = base;
    edit(r);
    return CompileService::DigestOf(r);
  };
  EXPECT_NE(
      changed([](auto& r) { (*r.mutable_program()->mutable_bindings())["M"].set_int_value(7); }),
      d);
  EXPECT_NE(changed([](auto& r) { (*r.mutable_config())["block_M"].set_int_value(16); }), d);
  EXPECT_NE(changed([](auto& r) { r.set_target("cuda:sm_90"); }), d);
  EXPECT_NE(changed([](auto& r) { r.mutable_options()->set_opt_level(2); }), d);
  EXPECT_NE(changed([](auto& r) { r.mutable_program()->set_entry("other"); }), d);
  // Dynamic parameters are a set: order and repeats do not matter, names do.
  const auto with_dynamic = [&](std::vector<std::string> names) {
    return changed([&](auto& r) {
      for (const std::string& n : names) r.mutable_program()->add_dynamic_params(n);
    });
  };
  EXPECT_NE(with_dynamic({"M"}), d);
  EXPECT_NE(with_dynamic({"M"}), with_dynamic({"N"}));
  EXPECT_EQ(with_dynamic({"M", "N"}), with_dynamic({"N", "M", "N"}));
  EXPECT_NE(changed([](auto& r) { r.mutable_program()->mutable_tilelang_source()->append(" "); }),
            d);
  // Source text as IR text is another request.
  EXPECT_NE(changed([](auto& r) {
              std::string text = r.program().tilelang_source();
              r.mutable_program()->set_ir_text(text);
            }),
            d);
  // Requests whose key depends on more than their bytes take the full path.
  EXPECT_FALSE(changed([](auto& r) { r.set_use_best_for_device("cuda:0"); }).has_value());
  EXPECT_FALSE(changed([](auto& r) { r.set_async(true); }).has_value());
  EXPECT_FALSE(changed([](auto& r) { r.mutable_program()->mutable_ir(); }).has_value());
}

TEST(CompileService, RequestFastPathHitsOnlyWhatItLearned) {
  Fixture f;
  absl::StatusOr<CompileReply> built = f.service.CompileSync(GemmCall());
  ASSERT_TRUE(built.ok()) << built.status();
  const CompileService::RequestDigest digest = *CompileService::DigestOf(GemmRequest());
  kiln::v1::ArtifactMetadata m;
  EXPECT_FALSE(f.service.TryRequestHit(digest, &m)); // never learned
  f.service.LearnRequest(digest, built->metadata.key());
  const int64_t hits = f.service.counters().hits.load();
  ASSERT_TRUE(f.service.TryRequestHit(digest, &m));
  EXPECT_EQ(m.key(), built->metadata.key());
  EXPECT_EQ(m.SerializeAsString(), built->metadata.SerializeAsString());
  EXPECT_EQ(f.service.counters().hits.load(), hits + 1);
  // A learned key whose artifact is not stored is no hit.
  f.service.LearnRequest(digest, std::string(64, 'f'));
  EXPECT_FALSE(f.service.TryRequestHit(digest, &m));
}

TEST(CompileService, RequestBytesFastPathGivesTheStoredMetadataBytes) {
  Fixture f;
  absl::StatusOr<CompileReply> built = f.service.CompileSync(GemmCall());
  ASSERT_TRUE(built.ok()) << built.status();
  const std::string wire = GemmRequest().SerializeAsString();
  const CompileService::RequestDigest digest = CompileService::DigestOfBytes(wire);
  EXPECT_EQ(CompileService::DigestOfBytes(wire), digest);
  EXPECT_NE(CompileService::DigestOfBytes(wire + " "), digest);
  // Seeded apart from the field-wise digest of the same request.
  EXPECT_NE(*CompileService::DigestOf(GemmRequest()), digest);
  std::string encoded;
  EXPECT_FALSE(f.service.TryRequestHitEncoded(digest, &encoded)); // never learned
  f.service.LearnRequest(digest, built->metadata.key());
  const int64_t hits = f.service.counters().hits.load();
  ASSERT_TRUE(f.service.TryRequestHitEncoded(digest, &encoded));
  kiln::v1::ArtifactMetadata m;
  ASSERT_TRUE(m.ParseFromString(encoded));
  EXPECT_EQ(m.SerializeAsString(), built->metadata.SerializeAsString());
  EXPECT_EQ(f.service.counters().hits.load(), hits + 1);
  // Served again from the hit memo: the same bytes.
  std::string again;
  ASSERT_TRUE(f.service.TryRequestHitEncoded(digest, &again));
  EXPECT_EQ(again, encoded);
  f.service.LearnRequest(digest, std::string(64, 'f'));
  EXPECT_FALSE(f.service.TryRequestHitEncoded(digest, &encoded));
}

// C = A + B over a dynamic size, with the tensors and the size symbol named
// `a`, `b`, `c` and `n`; C is an output because the kernel writes it.
CompileCall AddCall(const std::string& a, const std::string& b, const std::string& c,
                    const std::string& n) {
  CompileCall call;
  call.program.text =
      absl::StrCat(R"(import tilelang.language as T

def k(block=32):
    n = T.dynamic(")",
                   n, R"(")

    @T.prim_func
    def main()",
                   a, R"(: T.Tensor((n,), "float32"), )", b, R"(: T.Tensor((n,), "float32"),
             )",
                   c, R"(: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    )",
                   c, "[bx * block + i] = ", a, "[bx * block + i] + ", b, R"([bx * block + i]

    return main
)");
  call.program.file_name = "add.py";
  return call;
}

std::vector<std::string> ParamNames(const kiln::v1::LaunchInfo& l) {
  std::vector<std::string> out;
  for (const kiln::v1::ParamInfo& p : l.params()) {
    out.push_back(absl::StrCat(p.name(), p.is_output() ? " out" : "", " [",
                               absl::StrJoin(p.shape(), ", "), "]"));
  }
  return out;
}

// Two programs that differ only in their parameters' names: each client
// gets its own program's names back, names the IR reserves included (the
// launch metadata stored with an artifact carries them, so the names are
// part of the key).
TEST(CompileService, EachProgramGetsItsOwnParameterNames) {
  Fixture f;
  absl::StatusOr<CompileReply> first = f.service.CompileSync(AddCall("A", "B", "C", "N"));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->outcome, kiln::v1::CACHE_OUTCOME_MISS);
  EXPECT_THAT(ParamNames(first->metadata.launch()),
              ::testing::ElementsAre("A [N]", "B [N]", "C out [N]"));
  EXPECT_THAT(first->metadata.launch().symbols(), ::testing::ElementsAre("N"));

  absl::StatusOr<CompileReply> renamed = f.service.CompileSync(AddCall("x", "max", "out", "in"));
  ASSERT_TRUE(renamed.ok()) << renamed.status();
  EXPECT_EQ(renamed->outcome, kiln::v1::CACHE_OUTCOME_MISS);
  EXPECT_NE(renamed->metadata.key(), first->metadata.key());
  const kiln::v1::LaunchInfo& l = renamed->metadata.launch();
  EXPECT_THAT(ParamNames(l), ::testing::ElementsAre("x [in]", "max [in]", "out out [in]"));
  EXPECT_THAT(l.symbols(), ::testing::ElementsAre("in"));
  EXPECT_EQ(l.grid(0), "(in + 31) // 32");

  absl::StatusOr<CompileReply> again = f.service.CompileSync(AddCall("A", "B", "C", "N"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->outcome, kiln::v1::CACHE_OUTCOME_HIT);
  EXPECT_THAT(ParamNames(again->metadata.launch()),
              ::testing::ElementsAre("A [N]", "B [N]", "C out [N]"));
  EXPECT_EQ(f.service.counters().builds.load(), 2);
}

} // namespace
} // namespace kiln::server
