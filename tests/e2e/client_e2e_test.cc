// End-to-end: libkiln_client against the real kilnd (CPU target, its real
// kiln-worker) on a loopback port: compile + verified fetch, the local
// read-through cache (served from disk, a corrupt file fetched again),
// retries while the daemon restarts on the same port, a benchmark with a
// label read back through ListMeasurements, a tune with a progress
// callback then LookupBest, jobs and devices, bearer tokens, and the GEMM
// example (compile + fetch for CUDA; no launch without a GPU).
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/cpp/client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"
#include "tests/support/example_loader.h"
#include "util/sha256.h"
#include "util/subprocess.h"

namespace kiln::client {
namespace {

namespace fs = std::filesystem;
namespace pb = kiln::v1;
using ::testing::HasSubstr;

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";

pb::BindingValue Int(int64_t v) {
  pb::BindingValue b;
  b.set_int_value(v);
  return b;
}

pb::CompileRequest AddRequest(int64_t m = 77) {
  absl::StatusOr<pb::ProgramSource> p =
      LoadProgram(std::string(KILN_SOURCE_DIR) + "/examples/elementwise/add.py");
  EXPECT_TRUE(p.ok()) << p.status();
  pb::CompileRequest req;
  *req.mutable_program() = *p;
  auto& b = *req.mutable_program()->mutable_bindings();
  b["M"] = Int(m);
  b["N"] = Int(130);
  b["block_M"] = Int(16);
  b["block_N"] = Int(64);
  req.set_target("cpu");
  return req;
}

class ClientE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTestDir("client_e2e_");
    fs::create_directories(dir_);
  }
  void StartDaemon(std::vector<std::string> extra = {}, const std::string& listen = "127.0.0.1:0") {
    daemon_ = std::make_unique<testing::DaemonProcess>();
    std::vector<std::string> args = {"--listen=" + listen, "--cache-dir=" + dir_ + "/server"};
    args.insert(args.end(), extra.begin(), extra.end());
    ASSERT_TRUE(daemon_->Start(kKilnd, args)) << daemon_->output();
  }
  std::unique_ptr<Client> Make(ClientOptions o = {}) {
    o.address = daemon_->address();
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Create(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  std::string dir_;
  std::unique_ptr<testing::DaemonProcess> daemon_;
};

TEST_F(ClientE2ETest, CompilesThenFetchesVerifiedBytes) {
  StartDaemon();
  std::unique_ptr<Client> c = Make();
  absl::StatusOr<CompileResult> first = c->Compile(AddRequest());
  ASSERT_TRUE(first.ok()) << first.status() << daemon_->output();
  EXPECT_EQ(first->cache, CacheState::kMiss);
  EXPECT_EQ(first->key.size(), 64u);
  EXPECT_GT(first->compile_ms, 0);
  EXPECT_EQ(first->metadata.key(), first->key);
  absl::StatusOr<CompileResult> second = c->Compile(AddRequest());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->cache, CacheState::kHit);
  EXPECT_EQ(second->key, first->key);

  absl::StatusOr<Artifact> a = c->FetchArtifact(first->key);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->files.count(pb::ARTIFACT_KIND_SHARED_OBJECT));
  EXPECT_FALSE(a->from_local_cache);
  for (const pb::ArtifactFile& f : a->metadata.files()) {
    ASSERT_TRUE(a->files.count(f.kind())) << f.kind();
    EXPECT_EQ(util::Sha256Hex(a->files.at(f.kind())), f.blob_digest());
  }
  // A kind the artifact lacks names the option that makes it.
  absl::StatusOr<std::string> ptx = c->FetchFile(first->key, pb::ARTIFACT_KIND_PTX);
  EXPECT_EQ(ptx.status().code(), absl::StatusCode::kNotFound);
  // A bad program's located diagnostic comes through unchanged.
  pb::CompileRequest bad = AddRequest();
  bad.mutable_program()->mutable_bindings()->erase("N");
  absl::StatusOr<CompileResult> b = c->Compile(bad);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(absl::StrCat(b.status().message()), HasSubstr("add.py:"));
}

TEST_F(ClientE2ETest, TheLocalCacheServesRepeatedRunsFromDisk) {
  StartDaemon();
  ClientOptions o;
  o.cache_dir = dir_ + "/node";
  std::unique_ptr<Client> first = Make(o);
  absl::StatusOr<CompileResult> r = first->Compile(AddRequest());
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<std::string> so = first->FetchFile(r->key, pb::ARTIFACT_KIND_SHARED_OBJECT);
  ASSERT_TRUE(so.ok()) << so.status();
  EXPECT_EQ(first->stats().local_artifact_hits, 0);

  // A second process on the node: compile and fetch without the network.
  std::unique_ptr<Client> second = Make(o);
  absl::StatusOr<CompileResult> again = second->Compile(AddRequest());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cache, CacheState::kLocal);
  EXPECT_EQ(again->key, r->key);
  absl::StatusOr<std::string> so2 = second->FetchFile(r->key, pb::ARTIFACT_KIND_SHARED_OBJECT);
  ASSERT_TRUE(so2.ok());
  EXPECT_EQ(*so2, *so);
  EXPECT_EQ(second->stats().attempts, 0);
  EXPECT_EQ(second->stats().local_compile_hits, 1);
  EXPECT_EQ(second->stats().local_artifact_hits, 1);

  // A different request is the server's to answer.
  absl::StatusOr<CompileResult> other = second->Compile(AddRequest(78));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->cache, CacheState::kLocal);
  EXPECT_NE(other->key, r->key);

  // A damaged local file is detected, fetched again, and the bytes are right.
  const std::string path = o.cache_dir + "/artifacts/" + r->key + "/so";
  ASSERT_TRUE(fs::exists(path));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');
  }
  std::unique_ptr<Client> third = Make(o);
  absl::StatusOr<std::string> so3 = third->FetchFile(r->key, pb::ARTIFACT_KIND_SHARED_OBJECT);
  ASSERT_TRUE(so3.ok()) << so3.status();
  EXPECT_EQ(*so3, *so);
  EXPECT_EQ(third->stats().corrupt_local_files, 1);
  EXPECT_GE(third->stats().attempts, 1);
  // ... and stored again: the next read is local.
  std::unique_ptr<Client> fourth = Make(o);
  ASSERT_TRUE(fourth->FetchFile(r->key, pb::ARTIFACT_KIND_SHARED_OBJECT).ok());
  EXPECT_EQ(fourth->stats().attempts, 0);

  // With the memo off every Compile asks the server.
  o.compile_memo_ttl = std::chrono::seconds(0);
  std::unique_ptr<Client> no_memo = Make(o);
  absl::StatusOr<CompileResult> asked = no_memo->Compile(AddRequest());
  ASSERT_TRUE(asked.ok());
  EXPECT_EQ(asked->cache, CacheState::kHit);
}

TEST_F(ClientE2ETest, RetriesWhileTheDaemonRestarts) {
  StartDaemon();
  const std::string address = daemon_->address();
  daemon_->Stop();
  ClientOptions o;
  o.address = address;
  o.retry.max_attempts = 40;
  o.retry.initial_backoff = std::chrono::milliseconds(100);
  o.retry.max_backoff = std::chrono::milliseconds(400);
  o.deadline = std::chrono::seconds(60);
  absl::StatusOr<std::unique_ptr<Client>> c = Client::Create(o);
  ASSERT_TRUE(c.ok());
  // The call starts while nothing listens; the daemon comes back on the
  // same port a second later.
  std::future<absl::StatusOr<CompileResult>> pending =
      std::async(std::launch::async, [&] { return (*c)->Compile(AddRequest()); });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  StartDaemon({}, address);
  absl::StatusOr<CompileResult> r = pending.get();
  ASSERT_TRUE(r.ok()) << r.status() << daemon_->output();
  EXPECT_EQ(r->key.size(), 64u);
  EXPECT_GE((*c)->stats().retries, 1);
}

TEST_F(ClientE2ETest, BenchmarksWithALabelAndReadsTheHistoryBack) {
  StartDaemon();
  std::unique_ptr<Client> c = Make();
  pb::CompileRequest creq = AddRequest();
  pb::BenchmarkRequest req;
  *req.mutable_program() = creq.program();
  req.set_target("cpu");
  req.set_trials(3);
  req.set_history_name("add-small");
  for (const char* label : {"sha-old", "sha-new"}) {
    req.set_label(label);
    absl::StatusOr<pb::BenchmarkResponse> b = c->Benchmark(req);
    ASSERT_TRUE(b.ok()) << b.status() << daemon_->output();
    EXPECT_EQ(b->device_id(), "cpu");
    EXPECT_EQ(b->latency().samples_us_size(), 3);
  }
  pb::ListMeasurementsRequest q;
  q.set_history_name("add-small");
  absl::StatusOr<pb::ListMeasurementsResponse> h = c->ListMeasurements(q);
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->entries_size(), 2);
  EXPECT_EQ(h->entries(0).label(), "sha-new"); // newest first
  EXPECT_EQ(h->entries(1).label(), "sha-old");
  EXPECT_GT(h->entries(0).median_us(), 0);
  EXPECT_EQ(h->entries(0).samples(), 3);
  ASSERT_EQ(h->labels_size(), 2);
  EXPECT_EQ(h->labels(0), "sha-new");
  q.set_label("sha-old");
  h = c->ListMeasurements(q);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->entries_size(), 1);
  EXPECT_EQ(h->entries(0).label(), "sha-old");
  q.clear_history_name();
  EXPECT_EQ(c->ListMeasurements(q).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ClientE2ETest, TunesWithProgressThenLooksUpTheBestAndSeesTheJobs) {
  StartDaemon();
  std::unique_ptr<Client> c = Make();
  pb::TuneRequest req;
  *req.mutable_program() = AddRequest().program();
  req.mutable_program()->mutable_bindings()->erase("block_M");
  req.mutable_program()->mutable_bindings()->erase("block_N");
  req.set_target("cpu");
  req.set_strategy(pb::TUNE_STRATEGY_EXHAUSTIVE);
  for (const char* name : {"block_M", "block_N"}) {
    pb::ValueList& list = (*req.mutable_space()->mutable_candidates())[name];
    *list.add_values() = Int(16);
    *list.add_values() = Int(32);
  }
  *(*req.mutable_space()->mutable_candidates())["threads"].add_values() = Int(256);
  req.mutable_budget()->set_repeats(3);
  int events = 0, last_total = 0;
  absl::StatusOr<TuneOutcome> t =
      c->Tune(req, [&](const std::string& job_id, const pb::TuneProgress& p) {
        ++events;
        last_total = p.candidates_total();
        EXPECT_FALSE(job_id.empty());
      });
  ASSERT_TRUE(t.ok()) << t.status() << daemon_->output();
  EXPECT_GE(events, 2);
  EXPECT_EQ(last_total, 4);
  ASSERT_TRUE(t->result.has_best());

  pb::LookupBestRequest lb;
  *lb.mutable_program() = req.program();
  lb.set_target("cpu");
  absl::StatusOr<pb::LookupBestResponse> best = c->LookupBest(lb);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_TRUE(best->found());
  EXPECT_EQ(best->config().at("block_M").int_value(),
            t->result.best().config().at("block_M").int_value());

  absl::StatusOr<pb::Job> job = c->GetJob(t->job_id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->kind(), pb::JOB_KIND_TUNE);
  absl::StatusOr<pb::Job> watched = c->WatchJob(t->job_id);
  ASSERT_TRUE(watched.ok()) << watched.status();
  EXPECT_EQ(watched->state(), pb::JOB_STATE_SUCCEEDED);
  absl::StatusOr<std::vector<pb::Job>> jobs = c->ListJobs(10);
  ASSERT_TRUE(jobs.ok());
  EXPECT_FALSE(jobs->empty());
  EXPECT_EQ(c->GetJob("j-0000000000000000").status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<std::vector<pb::Device>> devices = c->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_FALSE(devices->empty());
  EXPECT_EQ(devices->front().id(), "cpu");
}

TEST_F(ClientE2ETest, SendsTheBearerToken) {
  std::ofstream(dir_ + "/tokens") << "kiln-client-token-0123456789ab ci\n";
  StartDaemon({"--auth-tokens-file=" + dir_ + "/tokens"});
  ClientOptions o;
  EXPECT_EQ(Make(o)->GetVersion().status().code(), absl::StatusCode::kUnauthenticated);
  o.token = "kiln-client-token-0123456789ab";
  absl::StatusOr<pb::GetVersionResponse> v = Make(o)->GetVersion();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_FALSE(v->version().empty());
}

TEST_F(ClientE2ETest, SpeaksTlsWithTheDaemon) {
  const std::string cmd =
      "cd " + dir_ +
      " && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 1 "
      "-subj /CN=kiln-client-test-ca 2>/dev/null"
      " && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext"
      " && for n in server client; do"
      "   openssl req -newkey rsa:2048 -nodes -keyout $n.key -out $n.csr -subj /CN=$n 2>/dev/null"
      "   && openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1"
      "     -extfile san.ext -out $n.pem 2>/dev/null || exit 1; done";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl could not make test certificates";
  StartDaemon({"--tls-cert-file=" + dir_ + "/server.pem", "--tls-key-file=" + dir_ + "/server.key",
               "--tls-client-ca-file=" + dir_ + "/ca.pem"});
  ClientOptions o;
  o.tls = true;
  o.tls_root_certs_file = dir_ + "/ca.pem";
  o.tls_server_name = "localhost";
  o.retry.max_attempts = 1;
  // Mutual TLS: without a client certificate the handshake fails.
  EXPECT_FALSE(Make(o)->GetVersion().ok());
  o.tls_cert_file = dir_ + "/client.pem";
  o.tls_key_file = dir_ + "/client.key";
  absl::StatusOr<pb::GetVersionResponse> v = Make(o)->GetVersion();
  EXPECT_TRUE(v.ok()) << v.status();
}

TEST_F(ClientE2ETest, TheGemmExampleFetchesACubin) {
  StartDaemon();
  const std::string bin = std::string(KILN_BINARY_DIR) + "/kiln-gemm-launch";
  const std::string gemm = std::string(KILN_SOURCE_DIR) + "/examples/gemm/gemm.py";
  util::SubprocessOptions so;
  so.timeout = std::chrono::seconds(300);
  absl::StatusOr<util::SubprocessResult> r = util::RunSubprocess(
      {bin, "--file", gemm, "--server", daemon_->address(), "--m", "256", "--n", "256", "--k",
       "256", "--arch", "sm_90", "--fetch-only", "--cache-dir", dir_ + "/node"},
      so);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->stdout_data << r->stderr_data << daemon_->output();
  EXPECT_THAT(r->stdout_data, HasSubstr("miss, cubin "));
  // Without --fetch-only it launches, which needs a GPU: 77 where there is none.
  if (!fs::exists("/dev/nvidiactl")) {
    absl::StatusOr<util::SubprocessResult> launch = util::RunSubprocess(
        {bin, "--file", gemm, "--server", daemon_->address(), "--m", "256", "--n", "256"}, so);
    ASSERT_TRUE(launch.ok());
    EXPECT_EQ(launch->exit_code, 77) << launch->stderr_data;
    EXPECT_THAT(launch->stderr_data, HasSubstr("skipping"));
  }
}

} // namespace
} // namespace kiln::client
