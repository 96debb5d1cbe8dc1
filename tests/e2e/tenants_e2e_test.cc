// End-to-end (issue 27, item 5): tenants of one kilnd stay apart. With bearer
// tokens, a job is seen, watched, listed and cancelled only by the identity
// that created it (or joined it) and by admins; others get NOT_FOUND, as for a
// job that does not exist. Roles from the token file limit which RPCs a token
// may call. Server reflection needs a token unless --auth-open-reflection.
// A request that is not valid protobuf is INVALID_ARGUMENT, and in
// --log-format=json every line kilnd writes is a JSON object (protobuf's and
// gRPC's own log lines included).
//
// KILN_E2E_KILND names another kilnd binary to run these against (to show
// that they fail on a build without the fix).
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"
#include "tests/support/example_loader.h"
#include "tests/support/gemm_request.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Kilnd() { return testing::KilndUnderTest(); }

constexpr char kAlice[] = "kiln-test-token-alice-0123456789";
constexpr char kBob[] = "kiln-test-token-bob-0123456789ab";
constexpr char kOps[] = "kiln-test-token-ops-0123456789ab";
constexpr char kViewer[] = "kiln-test-token-viewer-012345678";

kiln::v1::CompileRequest GemmRequest(int64_t m) { return testing::GemmCpuRequest(m); }

class TenantsE2ETest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::FreshTestDir("kiln_tenants_"); }
  void TearDown() override {
    daemon_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  // Starts kilnd with `tokens` as its token file.
  bool Start(const std::string& tokens, std::vector<std::string> extra = {}) {
    std::ofstream(dir_ + "/tokens") << tokens;
    std::vector<std::string> args = {"--listen=127.0.0.1:0", "--cache-dir=" + dir_ + "/cache",
                                     "--auth-tokens-file=" + dir_ + "/tokens"};
    args.insert(args.end(), extra.begin(), extra.end());
    daemon_ = std::make_unique<testing::DaemonProcess>(); // a fresh one reads a fresh address
    if (!daemon_->Start(Kilnd(), args)) return false;
    channel_ = grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials());
    stub_ = kiln::v1::Kiln::NewStub(channel_);
    return true;
  }
  std::unique_ptr<grpc::ClientContext>
  As(const char* token, std::chrono::seconds deadline = std::chrono::seconds(60)) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + deadline);
    if (token != nullptr) ctx->AddMetadata("authorization", std::string("Bearer ") + token);
    return ctx;
  }
  // An async compile's job id.
  std::string StartCompile(const char* token, int64_t m) {
    kiln::v1::CompileRequest req = GemmRequest(m);
    req.set_async(true);
    kiln::v1::CompileResponse resp;
    grpc::Status s = stub_->Compile(As(token).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_FALSE(resp.job_id().empty());
    return resp.job_id();
  }
  grpc::Status GetJob(const char* token, const std::string& id, kiln::v1::Job* job) {
    kiln::v1::GetJobRequest req;
    req.set_job_id(id);
    return stub_->GetJob(As(token).get(), req, job);
  }
  grpc::Status CancelJob(const char* token, const std::string& id, kiln::v1::Job* job) {
    kiln::v1::CancelJobRequest req;
    req.set_job_id(id);
    kiln::v1::CancelJobResponse resp;
    grpc::Status s = stub_->CancelJob(As(token).get(), req, &resp);
    *job = resp.job();
    return s;
  }
  // WatchJob to its end: the last snapshot, and the stream's status.
  grpc::Status WatchJob(const char* token, const std::string& id, kiln::v1::Job* last) {
    auto ctx = As(token);
    kiln::v1::WatchJobRequest req;
    req.set_job_id(id);
    auto reader = stub_->WatchJob(ctx.get(), req);
    kiln::v1::Job job;
    while (reader->Read(&job)) *last = job;
    return reader->Finish();
  }
  std::vector<std::string> ListJobIds(const char* token) {
    kiln::v1::ListJobsRequest req;
    req.set_limit(1000);
    kiln::v1::ListJobsResponse resp;
    grpc::Status s = stub_->ListJobs(As(token).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<std::string> ids;
    for (const kiln::v1::Job& j : resp.jobs()) ids.push_back(j.id());
    return ids;
  }
  // A unary call of `method` with `bytes` as the request.
  grpc::Status RawCall(const char* token, const std::string& method, const std::string& bytes) {
    grpc::GenericStub generic(channel_);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    auto ctx = As(token);
    std::promise<grpc::Status> done;
    generic.UnaryCall(ctx.get(), method, grpc::StubOptions(), &request, &response,
                      [&](grpc::Status s) { done.set_value(s); });
    return done.get_future().get();
  }
  // A server-reflection list_services exchange; `listed` gets the bytes of
  // every response.
  grpc::Status ListServices(const char* token, std::string* listed) {
    grpc::GenericStub generic(channel_);
    grpc::CompletionQueue cq;
    auto ctx = As(token);
    auto call = generic.PrepareCall(
        ctx.get(), "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
    void* tag = nullptr;
    bool ok = false;
    auto step = [&](intptr_t want) {
      EXPECT_TRUE(cq.Next(&tag, &ok));
      EXPECT_EQ(reinterpret_cast<intptr_t>(tag), want);
      return ok;
    };
    call->StartCall(reinterpret_cast<void*>(1));
    step(1);
    const std::string list_services("\x3a\x01*", 3); // field 7 (list_services): "*"
    grpc::Slice slice(list_services);
    grpc::ByteBuffer request(&slice, 1);
    call->Write(request, reinterpret_cast<void*>(2));
    step(2);
    call->WritesDone(reinterpret_cast<void*>(3));
    step(3);
    for (;;) {
      grpc::ByteBuffer response;
      call->Read(&response, reinterpret_cast<void*>(4));
      if (!step(4)) break;
      std::vector<grpc::Slice> slices;
      if (response.Dump(&slices).ok()) {
        for (const grpc::Slice& s : slices) {
          listed->append(reinterpret_cast<const char*>(s.begin()), s.size());
        }
      }
    }
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(5));
    step(5);
    return status;
  }

  std::string dir_;
  std::unique_ptr<testing::DaemonProcess> daemon_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<kiln::v1::Kiln::Stub> stub_;
};

TEST_F(TenantsE2ETest, ATenantNeitherSeesNorCancelsAnothersJob) {
  // Token lines as written before roles existed: both get the default role.
  ASSERT_TRUE(Start(std::string(kAlice) + " alice\n" + kBob + " bob\n")) << daemon_->output();
  const std::string id = StartCompile(kAlice, 3001);
  ASSERT_FALSE(id.empty());

  // Bob is answered as if the job did not exist.
  kiln::v1::Job job;
  grpc::Status get = GetJob(kBob, id, &job);
  EXPECT_EQ(get.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(get.error_message(), "no job '" + id + "'");
  grpc::Status missing = GetJob(kBob, "j-0000000000000000", &job);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(CancelJob(kBob, id, &job).error_code(), grpc::StatusCode::NOT_FOUND);
  kiln::v1::Job watched;
  EXPECT_EQ(WatchJob(kBob, id, &watched).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(watched.id().empty());
  EXPECT_THAT(ListJobIds(kBob), Not(::testing::Contains(id)));

  // Alice's job ran to its end: Bob's cancel did nothing.
  kiln::v1::Job last;
  grpc::Status watch = WatchJob(kAlice, id, &last);
  ASSERT_TRUE(watch.ok()) << watch.error_message();
  EXPECT_EQ(last.state(), kiln::v1::JOB_STATE_SUCCEEDED) << last.message();
  ASSERT_TRUE(GetJob(kAlice, id, &job).ok());
  EXPECT_EQ(job.owner(), "alice");
  EXPECT_THAT(ListJobIds(kAlice), ::testing::Contains(id));
  // Alice cancels her own (finished) job: answered with its record.
  grpc::Status own = CancelJob(kAlice, id, &job);
  EXPECT_TRUE(own.ok()) << own.error_message();
  EXPECT_EQ(job.id(), id);
}

// Two tenants compiling the same program share one job (singleflight): both
// see it, and the creator's cancel only withdraws the creator, so the other
// still gets the work done.
TEST_F(TenantsE2ETest, ASharedJobIsEveryJoinersAndOneCancelDoesNotStopIt) {
  constexpr char kCarol[] = "kiln-test-token-carol-0123456789";
  ASSERT_TRUE(Start(std::string(kAlice) + " alice\n" + kBob + " bob\n" + kCarol + " carol\n",
                    {"--compile-threads=1"}))
      << daemon_->output();
  // One compile thread: Alice's second job waits behind her first.
  const std::string first = StartCompile(kAlice, 3005);
  const std::string shared = StartCompile(kAlice, 3006);
  ASSERT_FALSE(shared.empty());
  kiln::v1::CompileRequest same = GemmRequest(3006);
  same.set_async(true);
  kiln::v1::CompileResponse joined;
  ASSERT_TRUE(stub_->Compile(As(kBob).get(), same, &joined).ok());
  ASSERT_EQ(joined.outcome(), kiln::v1::CACHE_OUTCOME_JOINED);
  EXPECT_EQ(joined.job_id(), shared);

  kiln::v1::Job job;
  EXPECT_TRUE(GetJob(kBob, shared, &job).ok());
  EXPECT_EQ(job.owner(), ""); // Alice's name is not Bob's to see
  EXPECT_EQ(job.joined_by_size(), 0);
  EXPECT_THAT(ListJobIds(kBob), ::testing::Contains(shared));
  EXPECT_THAT(ListJobIds(kBob), Not(::testing::Contains(first)));
  EXPECT_EQ(GetJob(kCarol, shared, &job).error_code(), grpc::StatusCode::NOT_FOUND);

  // Alice withdraws; Bob still wants the job, so it runs to its end.
  grpc::Status cancel = CancelJob(kAlice, shared, &job);
  ASSERT_TRUE(cancel.ok()) << cancel.error_message();
  EXPECT_NE(job.state(), kiln::v1::JOB_STATE_CANCELLED);
  kiln::v1::Job last;
  ASSERT_TRUE(WatchJob(kBob, shared, &last).ok());
  EXPECT_EQ(last.state(), kiln::v1::JOB_STATE_SUCCEEDED) << last.message();
}

TEST_F(TenantsE2ETest, RolesLimitWhatATokenMayCallAndAdminsSeeEveryJob) {
  ASSERT_TRUE(Start(std::string(kAlice) + " alice\n" + kOps + " ops role=admin\n" + kViewer +
                        " viewer role=read\n",
                    {"--compile-threads=1"}))
      << daemon_->output();
  // A read-only token looks things up but does not compile.
  kiln::v1::GetVersionResponse version;
  EXPECT_TRUE(stub_->GetVersion(As(kViewer).get(), {}, &version).ok());
  kiln::v1::CompileResponse resp;
  grpc::Status compile = stub_->Compile(As(kViewer).get(), GemmRequest(3002), &resp);
  EXPECT_EQ(compile.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(compile.error_message(), HasSubstr("Compile needs role compile"));
  EXPECT_THAT(compile.error_message(), HasSubstr("'viewer' has role read"));
  EXPECT_THAT(compile.error_message(), Not(HasSubstr(kViewer))); // never the token
  kiln::v1::BenchmarkResponse bench;
  EXPECT_EQ(stub_->Benchmark(As(kViewer).get(), {}, &bench).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // A read-only token reads the statistics but does not move every client's
  // baseline; the default role (tune) does, as every token did before roles.
  kiln::v1::CacheStatsRequest zero;
  zero.set_zero(true);
  kiln::v1::CacheStatsResponse stats;
  EXPECT_TRUE(stub_->CacheStats(As(kViewer).get(), {}, &stats).ok());
  grpc::Status refused = stub_->CacheStats(As(kViewer).get(), zero, &stats);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(refused.error_message(), HasSubstr("zero needs role tune"));
  grpc::Status zeroed = stub_->CacheStats(As(kAlice).get(), zero, &stats);
  EXPECT_TRUE(zeroed.ok()) << zeroed.error_message();

  // The admin sees, lists and cancels Alice's queued job (one compile thread:
  // the second waits for the first); the read-only token does not see it.
  const std::string running = StartCompile(kAlice, 3003);
  const std::string queued = StartCompile(kAlice, 3004);
  ASSERT_FALSE(queued.empty());
  kiln::v1::Job job;
  ASSERT_TRUE(GetJob(kOps, queued, &job).ok());
  EXPECT_EQ(job.owner(), "alice");
  EXPECT_THAT(ListJobIds(kOps), ::testing::IsSupersetOf({running, queued}));
  EXPECT_EQ(GetJob(kViewer, queued, &job).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(ListJobIds(kViewer), Not(::testing::Contains(queued)));
  grpc::Status cancel = CancelJob(kOps, queued, &job);
  ASSERT_TRUE(cancel.ok()) << cancel.error_message();
  kiln::v1::Job last;
  ASSERT_TRUE(WatchJob(kOps, queued, &last).ok());
  EXPECT_EQ(last.state(), kiln::v1::JOB_STATE_CANCELLED) << last.message();
}

TEST_F(TenantsE2ETest, ReflectionNeedsATokenUnlessOpened) {
  ASSERT_TRUE(Start(std::string(kAlice) + " alice\n")) << daemon_->output();
  std::string listed;
  grpc::Status none = ListServices(nullptr, &listed);
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(none.error_message(), HasSubstr("bearer token"));
  EXPECT_THAT(listed, Not(HasSubstr("kiln.v1.Kiln"))); // nothing of the schema leaks
  listed.clear();
  grpc::Status wrong = ListServices("kiln-test-token-wrong-0123456789", &listed);
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(listed, Not(HasSubstr("kiln.v1.Kiln")));
  listed.clear();
  grpc::Status with = ListServices(kAlice, &listed);
  EXPECT_TRUE(with.ok()) << with.error_message();
  EXPECT_THAT(listed, HasSubstr("kiln.v1.Kiln"));

  daemon_->Stop();
  ASSERT_TRUE(Start(std::string(kAlice) + " alice\n", {"--auth-open-reflection"}))
      << daemon_->output();
  listed.clear();
  grpc::Status open = ListServices(nullptr, &listed);
  EXPECT_TRUE(open.ok()) << open.error_message();
  EXPECT_THAT(listed, HasSubstr("kiln.v1.Kiln"));
  // Only reflection is opened.
  kiln::v1::GetVersionResponse version;
  EXPECT_EQ(stub_->GetVersion(As(nullptr).get(), {}, &version).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(TenantsE2ETest, MalformedRequestsAreInvalidArgumentAndEveryLogLineIsJson) {
  // gRPC's own debug lines go through the log too.
  setenv("GRPC_VERBOSITY", "DEBUG", 1);
  const bool started =
      Start(std::string(kAlice) + " alice\n", {"--log-format=json", "--log-level=debug"});
  unsetenv("GRPC_VERBOSITY");
  ASSERT_TRUE(started) << daemon_->output();
  const std::string not_utf8("\x0a\x03\xff\xfe\xfd", 5); // field 1, a string, not UTF-8
  const std::string truncated("\x0a\x7f\x61", 3);        // field 1 claims 127 bytes
  struct Case {
    std::string method, bytes, type;
  };
  const Case cases[] = {
      {"GetJob", not_utf8, "kiln.v1.GetJobRequest"},
      {"GetJob", truncated, "kiln.v1.GetJobRequest"},
      {"CancelJob", not_utf8, "kiln.v1.CancelJobRequest"},
      {"ListJobs", std::string("\x08", 1), "kiln.v1.ListJobsRequest"},
      {"LookupBest", truncated, "kiln.v1.LookupBestRequest"},
      {"GetVersion", std::string("\x0a\x05", 2), "kiln.v1.GetVersionRequest"},
      // field 2 (target), a string, not UTF-8: Compile parses its own bytes
      {"Compile", std::string("\x12\x02\xc3\x28", 4), "kiln.v1.CompileRequest"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.method);
    grpc::Status s = RawCall(kAlice, "/kiln.v1.Kiln/" + c.method, c.bytes);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(c.type));
  }
  // Server-streaming methods too.
  for (const char* method : {"WatchJob", "GetArtifact"}) {
    SCOPED_TRACE(method);
    grpc::GenericStub generic(channel_);
    grpc::CompletionQueue cq;
    auto ctx = As(kAlice);
    auto call = generic.PrepareCall(ctx.get(), std::string("/kiln.v1.Kiln/") + method, &cq);
    void* tag = nullptr;
    bool ok = false;
    call->StartCall(reinterpret_cast<void*>(1));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    grpc::Slice slice(not_utf8);
    call->WriteLast(grpc::ByteBuffer(&slice, 1), grpc::WriteOptions(), reinterpret_cast<void*>(2));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    grpc::ByteBuffer response;
    call->Read(&response, reinterpret_cast<void*>(3));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(4));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  }
  // The daemon goes on serving.
  kiln::v1::GetVersionResponse version;
  EXPECT_TRUE(stub_->GetVersion(As(kAlice).get(), {}, &version).ok());

  EXPECT_EQ(daemon_->Stop(), 0);
  std::istringstream lines(daemon_->output());
  int count = 0;
  bool protobuf_line = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    ++count;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(!j.is_discarded() && j.is_object()) << "not a JSON object: " << line;
    if (j.is_object() && j.value("library", "") == "protobuf") protobuf_line = true;
  }
  EXPECT_GT(count, 5);
  EXPECT_TRUE(protobuf_line) << daemon_->output(); // the UTF-8 errors, structured
}

} // namespace
} // namespace kiln
