// End-to-end: Compile, GetArtifact and jobs through the real kilnd process
// on a loopback port with a temporary cache directory.
#include <atomic>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"
#include "tests/e2e/test_dir.h"
#include "tests/support/example_loader.h"
#include "tests/support/gemm_request.h"
#include "util/sha256.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";

kiln::v1::CompileRequest GemmRequest(int64_t m = 100) { return testing::GemmCpuRequest(m); }

class CompileE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTestDir("compile_e2e_");
    StartDaemon();
  }
  void StartDaemon() {
    daemon_ = std::make_unique<testing::DaemonProcess>();
    ASSERT_TRUE(daemon_->Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir_}))
        << daemon_->output();
    stub_ = kiln::v1::Kiln::NewStub(
        grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials()));
  }
  grpc::Status Compile(const kiln::v1::CompileRequest& req, kiln::v1::CompileResponse* resp,
                       std::chrono::milliseconds deadline = std::chrono::seconds(120)) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    return stub_->Compile(&ctx, req, resp);
  }

  std::string dir_;
  std::unique_ptr<testing::DaemonProcess> daemon_;
  std::unique_ptr<kiln::v1::Kiln::Stub> stub_;
};

TEST_F(CompileE2ETest, MissThenHitThenTheBytesMatchTheirDigests) {
  kiln::v1::CompileResponse first, second;
  grpc::Status s = Compile(GemmRequest(), &first);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(first.outcome(), kiln::v1::CACHE_OUTCOME_MISS);
  ASSERT_TRUE(Compile(GemmRequest(), &second).ok());
  EXPECT_EQ(second.outcome(), kiln::v1::CACHE_OUTCOME_HIT);
  EXPECT_EQ(second.artifact().key(), first.artifact().key());

  grpc::ClientContext ctx;
  kiln::v1::GetArtifactRequest get;
  get.set_key(first.artifact().key());
  get.set_chunk_bytes(4096); // several chunks for the shared object
  auto reader = stub_->GetArtifact(&ctx, get);
  kiln::v1::ArtifactChunk chunk;
  std::map<int, std::string> files;
  int chunks = 0;
  bool metadata_first = false;
  while (reader->Read(&chunk)) {
    if (chunks++ == 0) metadata_first = chunk.has_metadata();
    std::string& f = files[chunk.kind()];
    EXPECT_EQ(chunk.offset(), static_cast<int64_t>(f.size()));
    f += chunk.data();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_TRUE(metadata_first);
  EXPECT_GT(chunks, 2);
  for (const kiln::v1::ArtifactFile& f : first.artifact().files()) {
    SCOPED_TRACE(f.kind());
    ASSERT_TRUE(files.count(f.kind()));
    EXPECT_EQ(static_cast<int64_t>(files[f.kind()].size()), f.size_bytes());
    EXPECT_EQ(util::Sha256Hex(files[f.kind()]), f.blob_digest());
  }
}

TEST_F(CompileE2ETest, RepeatedRequestsAreHitsWithTheSameArtifact) {
  // The first repeat is a hit through the parsed request, later ones are
  // answered from the request bytes' digest with the stored metadata's bytes.
  kiln::v1::CompileResponse first;
  ASSERT_TRUE(Compile(GemmRequest(), &first).ok());
  ASSERT_EQ(first.outcome(), kiln::v1::CACHE_OUTCOME_MISS);
  std::vector<kiln::v1::CompileResponse> hits(4);
  for (kiln::v1::CompileResponse& r : hits) {
    grpc::Status s = Compile(GemmRequest(), &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  for (const kiln::v1::CompileResponse& r : hits) {
    EXPECT_EQ(r.outcome(), kiln::v1::CACHE_OUTCOME_HIT);
    EXPECT_EQ(r.artifact().SerializeAsString(), first.artifact().SerializeAsString());
    EXPECT_TRUE(r.job_id().empty());
    EXPECT_GT(r.server_seconds(), 0);
    EXPECT_LT(r.server_seconds(), 1);
  }
  // Another request (one binding changed) is not served from the first's bytes.
  kiln::v1::CompileResponse other;
  ASSERT_TRUE(Compile(GemmRequest(/*m=*/104), &other).ok());
  EXPECT_EQ(other.outcome(), kiln::v1::CACHE_OUTCOME_MISS);
  EXPECT_NE(other.artifact().key(), first.artifact().key());
}

TEST_F(CompileE2ETest, AskingForTheSourceAfterABuildIsAHit) {
  // `kiln compile --emit cpp` after a build of the same program: the source
  // was kept by the first build, so nothing is compiled again.
  kiln::v1::CompileResponse build, source;
  ASSERT_TRUE(Compile(GemmRequest(), &build).ok());
  ASSERT_EQ(build.outcome(), kiln::v1::CACHE_OUTCOME_MISS);
  kiln::v1::CompileRequest with_source = GemmRequest();
  with_source.mutable_options()->set_emit_source(true);
  grpc::Status s = Compile(with_source, &source);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(source.outcome(), kiln::v1::CACHE_OUTCOME_HIT);
  EXPECT_EQ(source.artifact().key(), build.artifact().key());

  grpc::ClientContext ctx;
  kiln::v1::GetArtifactRequest get;
  get.set_key(source.artifact().key());
  get.add_kinds(kiln::v1::ARTIFACT_KIND_SOURCE);
  auto reader = stub_->GetArtifact(&ctx, get);
  kiln::v1::ArtifactChunk chunk;
  std::string text;
  while (reader->Read(&chunk)) text += chunk.data();
  grpc::Status fetched = reader->Finish();
  ASSERT_TRUE(fetched.ok()) << fetched.error_message();
  EXPECT_THAT(text, HasSubstr("kiln/cpu/runtime.h"));
}

TEST_F(CompileE2ETest, LongExpressionChainsAreCleanErrorsAndTheDaemonLives) {
  // A left-deep chain of 70,000+ links (`1+1+...`, `x[0][0]...`, `f()()...`,
  // `T.a.a...`) in ~200 KB killed the daemon: the tree was built without a
  // bound and destroying it overflowed a gRPC thread's stack.
  testing::ExampleFile ex =
      testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/elementwise/add.py");
  const std::string def = "def add(M, N, block_M, block_N, threads=256, dtype=T.float16):\n";
  ASSERT_NE(ex.source.find(def), std::string::npos);
  struct Shape {
    std::string head, link;
  };
  for (const Shape& shape : {Shape{"1", "+1"}, Shape{"x", "[0]"}, Shape{"f", "()"},
                             Shape{"T", ".a"}, Shape{"a", "**a+a"}}) {
    SCOPED_TRACE(shape.link);
    std::string chain = shape.head;
    // 80,000 links, or 60,000 of the four-token one: within kMaxSourceTokens.
    const int links = shape.link == "**a+a" ? 60000 : 80000;
    for (int i = 0; i < links; ++i) chain += shape.link;
    std::string source = ex.source;
    source.replace(source.find(def), def.size(), def + "    unused = " + chain + "\n");
    kiln::v1::CompileRequest req = GemmRequest();
    req.mutable_program()->set_tilelang_source(source);
    req.mutable_program()->set_file_name("chain.py");
    kiln::v1::CompileResponse resp;
    grpc::Status s = Compile(req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("chain.py:"));
    EXPECT_THAT(s.error_message(), HasSubstr("expression chain too long"));
  }
  // Still serving.
  kiln::v1::CompileResponse ok;
  grpc::Status s = Compile(GemmRequest(), &ok);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(CompileE2ETest, MalformedRequestBytesAreInvalidArgument) {
  grpc::GenericStub generic(
      grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials()));
  const std::string junk("\x0a\xff\xff\xff\xff\x0f", 6); // a field longer than the message
  grpc::Slice slice(junk);
  grpc::ByteBuffer request(&slice, 1), response;
  grpc::ClientContext ctx;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&ctx, "/kiln.v1.Kiln/Compile", grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) { done.set_value(s); });
  const grpc::Status s = done.get_future().get();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("not a kiln.v1.CompileRequest"));
  // The daemon goes on serving.
  kiln::v1::CompileResponse ok;
  EXPECT_TRUE(Compile(GemmRequest(), &ok).ok());
}

// A request whose wire IR nests `levels` Exprs under the kernel's grid:
// the Expr chain starts at level 4 (program, ir, kernel, grid).
kiln::v1::CompileRequest DeepIrRequest(int levels) {
  kiln::v1::CompileRequest req;
  req.set_target("cpu");
  kiln::v1::Program* ir = req.mutable_program()->mutable_ir();
  ir->set_ir_version(1);
  kiln::v1::Expr* e = ir->mutable_kernel()->add_grid();
  for (int i = 1; i < levels; ++i) e = e->add_args();
  e->set_int_value(1);
  return req;
}

TEST_F(CompileE2ETest, WireIrNestedPastTheRecursionLimitSaysSo) {
  // 120 Exprs: levels 4..123, past protobuf's limit of 100.
  const std::string bytes = DeepIrRequest(120).SerializeAsString();
  grpc::GenericStub generic(
      grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials()));
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1), response;
  grpc::ClientContext ctx;
  std::promise<grpc::Status> done;
  generic.UnaryCall(&ctx, "/kiln.v1.Kiln/Compile", grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) { done.set_value(s); });
  const grpc::Status s = done.get_future().get();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("nests messages deeper than protobuf's recursion "
                                           "limit of 100 levels"));

  // Truncated bytes of the same request are still "not a message".
  grpc::Slice cut(bytes.substr(0, 40));
  grpc::ByteBuffer truncated(&cut, 1);
  grpc::ClientContext ctx2;
  std::promise<grpc::Status> done2;
  generic.UnaryCall(&ctx2, "/kiln.v1.Kiln/Compile", grpc::StubOptions(), &truncated, &response,
                    [&](grpc::Status st) { done2.set_value(st); });
  const grpc::Status t = done2.get_future().get();
  EXPECT_EQ(t.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(t.error_message(), HasSubstr("not a kiln.v1.CompileRequest"));

  // Tune parses its own bytes too (a raw method), and says so alike.
  kiln::v1::TuneRequest tune;
  *tune.mutable_program() = DeepIrRequest(120).program();
  grpc::ClientContext tctx;
  tctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto reader = stub_->Tune(&tctx, tune);
  kiln::v1::TuneEvent event;
  while (reader->Read(&event)) {
  }
  const grpc::Status ts = reader->Finish();
  EXPECT_EQ(ts.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(ts.error_message(),
              HasSubstr("Tune: the request nests messages deeper than protobuf's recursion limit "
                        "of 100 levels"));

  // At the limit the request parses: its IR is judged on its own terms.
  kiln::v1::CompileResponse resp;
  const grpc::Status at = Compile(DeepIrRequest(97), &resp);
  EXPECT_THAT(at.error_message(), ::testing::Not(HasSubstr("recursion limit")));
  EXPECT_THAT(at.error_message(), ::testing::Not(HasSubstr("not a kiln.v1.CompileRequest")));
}

TEST_F(CompileE2ETest, BadProgramIsInvalidArgumentWithItsLocation) {
  kiln::v1::CompileRequest req = GemmRequest();
  std::string text = req.program().tilelang_source();
  text.replace(text.find("T.gemm("), 7, "T.gemmm(");
  req.mutable_program()->set_tilelang_source(text);
  kiln::v1::CompileResponse resp;
  grpc::Status s = Compile(req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              ::testing::MatchesRegex("examples/gemm/gemm.py:[0-9]+:[0-9]+: .*"));

  kiln::v1::CompileRequest empty;
  EXPECT_EQ(Compile(empty, &resp).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  kiln::v1::CompileRequest bad_target = GemmRequest();
  bad_target.set_target("cuda:sm_70");
  s = Compile(bad_target, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("sm_70"));

  grpc::ClientContext ctx;
  kiln::v1::GetArtifactRequest get;
  get.set_key(std::string(64, 'a'));
  auto reader = stub_->GetArtifact(&ctx, get);
  kiln::v1::ArtifactChunk chunk;
  EXPECT_FALSE(reader->Read(&chunk));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

// gemm.py's M is a T.const symbol: bound by the test bindings, dynamic when
// named in dynamic_params instead.
TEST_F(CompileE2ETest, DynamicParamsBecomeLaunchSymbols) {
  kiln::v1::CompileRequest req = GemmRequest();
  req.mutable_program()->mutable_bindings()->erase("M");
  req.mutable_program()->add_dynamic_params("M");
  kiln::v1::CompileResponse resp;
  grpc::Status s = Compile(req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const kiln::v1::LaunchInfo& launch = resp.artifact().launch();
  ASSERT_EQ(launch.symbols_size(), 1);
  EXPECT_EQ(launch.symbols(0), "M");
  ASSERT_GE(launch.params_size(), 1);
  ASSERT_GE(launch.params(0).shape_size(), 1);
  EXPECT_EQ(launch.params(0).shape(0), "M");
  // The same request again is a hit.
  kiln::v1::CompileResponse again;
  ASSERT_TRUE(Compile(req, &again).ok());
  EXPECT_EQ(again.outcome(), kiln::v1::CACHE_OUTCOME_HIT);
  EXPECT_EQ(again.artifact().key(), resp.artifact().key());
  kiln::v1::CompileRequest typo = req;
  typo.mutable_program()->add_dynamic_params("MM");
  s = Compile(typo, &again);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("dynamic parameter 'MM' is neither"));

  kiln::v1::CompileRequest both = GemmRequest();
  both.mutable_program()->add_dynamic_params("M");
  s = Compile(both, &again);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              ::testing::MatchesRegex(
                  "examples/gemm/gemm.py:[0-9]+:[0-9]+: shape symbol 'M' is both bound and "
                  "named dynamic.*"));
  kiln::v1::CompileRequest many = req;
  for (int i = 0; i < 64; ++i) many.mutable_program()->add_dynamic_params("x" + std::to_string(i));
  s = Compile(many, &again);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("program.dynamic_params: 65 names; at most 64"));
}

// A status message echoing a huge request field stays within the headers a
// client accepts: with gRPC's default limits a 1 MB message arrived as
// RESOURCE_EXHAUSTED "received initial metadata size exceeds limit" in place
// of the real answer (rpc_fuzz, 2026-12-06).
TEST_F(CompileE2ETest, HugeFieldsInErrorsAreCutAndTheAnswerArrives) {
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    kiln::v1::GetJobRequest req;
    req.set_job_id(std::string(1'000'000, 'x'));
    kiln::v1::Job job;
    grpc::Status s = stub_->GetJob(&ctx, req, &job);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message().substr(0, 200);
    EXPECT_LE(s.error_message().size(), 4096u);
    EXPECT_THAT(s.error_message(), ::testing::StartsWith("no job 'xxx"));
    EXPECT_THAT(s.error_message(), ::testing::EndsWith(" bytes in all]"));
  }
  kiln::v1::CompileResponse resp;
  EXPECT_TRUE(Compile(GemmRequest(), &resp).ok());
}

TEST_F(CompileE2ETest, SixtyFourConcurrentIdenticalCallsCauseOneCompile) {
  constexpr int kCallers = 64;
  std::vector<std::thread> threads;
  std::vector<kiln::v1::CompileResponse> resp(kCallers);
  std::vector<grpc::Status> status(kCallers);
  const kiln::v1::CompileRequest req = GemmRequest(77);
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] { status[i] = Compile(req, &resp[i]); });
  }
  for (auto& t : threads) t.join();
  std::map<int, int> outcomes;
  for (int i = 0; i < kCallers; ++i) {
    ASSERT_TRUE(status[i].ok()) << status[i].error_message();
    ++outcomes[resp[i].outcome()];
    EXPECT_EQ(resp[i].artifact().key(), resp[0].artifact().key());
  }
  EXPECT_EQ(outcomes[kiln::v1::CACHE_OUTCOME_MISS], 1);
  EXPECT_EQ(outcomes[kiln::v1::CACHE_OUTCOME_JOINED] + outcomes[kiln::v1::CACHE_OUTCOME_HIT],
            kCallers - 1);
  grpc::ClientContext ctx;
  kiln::v1::CacheStatsResponse stats;
  ASSERT_TRUE(stub_->CacheStats(&ctx, {}, &stats).ok());
  EXPECT_EQ(stats.entries(), 1);
  EXPECT_EQ(stats.joined(), outcomes[kiln::v1::CACHE_OUTCOME_JOINED]);
}

TEST_F(CompileE2ETest, AsyncCompileIsAJobToWatch) {
  kiln::v1::CompileRequest req = GemmRequest(55);
  req.set_async(true);
  kiln::v1::CompileResponse resp;
  ASSERT_TRUE(Compile(req, &resp).ok());
  ASSERT_FALSE(resp.job_id().empty());
  EXPECT_FALSE(resp.has_artifact());

  grpc::ClientContext ctx;
  kiln::v1::WatchJobRequest watch;
  watch.set_job_id(resp.job_id());
  auto reader = stub_->WatchJob(&ctx, watch);
  kiln::v1::Job job;
  std::vector<kiln::v1::JobState> states;
  while (reader->Read(&job)) states.push_back(job.state());
  ASSERT_TRUE(reader->Finish().ok());
  ASSERT_FALSE(states.empty());
  EXPECT_EQ(states.back(), kiln::v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job.kind(), kiln::v1::JOB_KIND_COMPILE);

  grpc::ClientContext get_ctx;
  kiln::v1::GetJobRequest get;
  get.set_job_id(resp.job_id());
  kiln::v1::Job got;
  ASSERT_TRUE(stub_->GetJob(&get_ctx, get, &got).ok());
  EXPECT_EQ(got.state(), kiln::v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(got.progress(), 1.0);

  grpc::ClientContext missing_ctx;
  get.set_job_id("j-0000000000000000");
  EXPECT_EQ(stub_->GetJob(&missing_ctx, get, &got).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(CompileE2ETest, ATimedOutCallCancelsItsUnsharedJob) {
  kiln::v1::CompileResponse resp;
  // Compiling takes about a second; a 50 ms deadline expires first.
  grpc::Status s = Compile(GemmRequest(33), &resp, std::chrono::milliseconds(50));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  // The daemon is fine and compiles the same program on request.
  ASSERT_TRUE(Compile(GemmRequest(33), &resp).ok());
  EXPECT_NE(resp.outcome(), kiln::v1::CACHE_OUTCOME_UNSPECIFIED);
}

TEST_F(CompileE2ETest, AfterKillNineEverythingCompletedIsAHit) {
  kiln::v1::CompileRequest async = GemmRequest(44);
  kiln::v1::CompileResponse first, resp;
  ASSERT_TRUE(Compile(GemmRequest(), &first).ok());
  daemon_->Kill();
  StartDaemon();
  ASSERT_TRUE(Compile(GemmRequest(), &resp).ok());
  EXPECT_EQ(resp.outcome(), kiln::v1::CACHE_OUTCOME_HIT);
  EXPECT_EQ(resp.artifact().key(), first.artifact().key());
  // The job that compiled it is still known, from the cache's records.
  grpc::ClientContext ctx;
  kiln::v1::GetJobRequest get;
  get.set_job_id(first.job_id());
  kiln::v1::Job job;
  ASSERT_TRUE(stub_->GetJob(&ctx, get, &job).ok());
  EXPECT_EQ(job.state(), kiln::v1::JOB_STATE_SUCCEEDED);
}

} // namespace
} // namespace kiln
