// End-to-end: LookupBest and Compile's use_best_for_device against the real
// kilnd, with a best config written into its cache directory by another
// process's handle on the same cache (as a tuning daemon would).
#include <filesystem>
#include <string>

#include <grpcpp/grpcpp.h>

#include "cache/cache.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "server/best_config.h"
#include "tests/e2e/daemon_process.h"
#include "tests/support/example_loader.h"

namespace kiln {
namespace {

namespace pb = kiln::v1;
const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";

pb::BindingValue Int(int64_t v) {
  pb::BindingValue b;
  b.set_int_value(v);
  return b;
}

class LookupBestE2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "lookup_best_e2e";
    std::filesystem::remove_all(dir_);
    ASSERT_TRUE(daemon_.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache-dir=" + dir_}))
        << daemon_.output();
    stub_ = pb::Kiln::NewStub(
        grpc::CreateChannel(daemon_.address(), grpc::InsecureChannelCredentials()));
    testing::ExampleFile ex = testing::LoadExampleFile(KILN_SOURCE_DIR, "examples/gemm/gemm.py");
    program_.set_tilelang_source(ex.source);
    program_.set_file_name(ex.rel_path);
    (*program_.mutable_bindings())["M"] = Int(100);
    (*program_.mutable_bindings())["N"] = Int(72);
    (*program_.mutable_bindings())["K"] = Int(40);
  }

  std::string CpuModel() {
    grpc::ClientContext ctx;
    pb::ListDevicesResponse devices;
    EXPECT_TRUE(stub_->ListDevices(&ctx, {}, &devices).ok());
    for (const pb::Device& d : devices.devices()) {
      if (d.id() == "cpu") return d.model();
    }
    return "";
  }

  std::string dir_;
  testing::DaemonProcess daemon_;
  std::unique_ptr<pb::Kiln::Stub> stub_;
  pb::ProgramSource program_;
};

TEST_F(LookupBestE2ETest, NotFoundThenTheStoredBestAndCompileUsesIt) {
  pb::LookupBestRequest req;
  *req.mutable_program() = program_;
  req.set_target("cpu");
  {
    grpc::ClientContext ctx;
    pb::LookupBestResponse resp;
    ASSERT_TRUE(stub_->LookupBest(&ctx, req, &resp).ok());
    EXPECT_FALSE(resp.found());
    EXPECT_EQ(resp.program_key().size(), 64u);
  }

  const std::string model = CpuModel();
  ASSERT_FALSE(model.empty());
  {
    absl::StatusOr<std::unique_ptr<cache::Cache>> c = cache::Cache::Open(dir_);
    ASSERT_TRUE(c.ok()) << c.status();
    server::ConfigMap config = {{"block_M", Int(32)}, {"block_N", Int(32)}, {"block_K", Int(16)}};
    cache::BestConfig best;
    best.config_json = server::ConfigToJson(config);
    best.latency.median_us = 12.5;
    best.latency.samples = 10;
    ASSERT_TRUE((*c)->PutBest(server::BestKeyFor(program_, "cpu", model), best).ok());
  }
  pb::LookupBestResponse found;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->LookupBest(&ctx, req, &found).ok());
  }
  ASSERT_TRUE(found.found());
  EXPECT_EQ(found.config().at("block_M").int_value(), 32);
  EXPECT_EQ(found.config().at("block_K").int_value(), 16);
  EXPECT_DOUBLE_EQ(found.measurement().median_us(), 12.5);
  EXPECT_EQ(found.measurement().device_model(), model);

  // Another shape has no best.
  pb::LookupBestRequest other = req;
  (*other.mutable_program()->mutable_bindings())["M"] = Int(200);
  {
    grpc::ClientContext ctx;
    pb::LookupBestResponse resp;
    ASSERT_TRUE(stub_->LookupBest(&ctx, other, &resp).ok());
    EXPECT_FALSE(resp.found());
  }

  // Compile with the best = compile with that config spelled out.
  pb::CompileRequest with_best;
  *with_best.mutable_program() = program_;
  with_best.set_target("cpu");
  with_best.set_use_best_for_device(model);
  pb::CompileRequest explicit_config = with_best;
  explicit_config.clear_use_best_for_device();
  for (const auto& [k, v] : found.config()) (*explicit_config.mutable_config())[k] = v;
  pb::CompileResponse a, b;
  {
    grpc::ClientContext ctx;
    grpc::Status s = stub_->Compile(&ctx, with_best, &a);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  {
    grpc::ClientContext ctx;
    grpc::Status s = stub_->Compile(&ctx, explicit_config, &b);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_EQ(a.artifact().key(), b.artifact().key());
  EXPECT_EQ(b.outcome(), pb::CACHE_OUTCOME_HIT);

  // No best for a model: the request's own config alone.
  pb::CompileRequest fallback = with_best;
  fallback.set_use_best_for_device("NVIDIA A100");
  (*fallback.mutable_config())["block_M"] = Int(64);
  (*fallback.mutable_config())["block_N"] = Int(32);
  (*fallback.mutable_config())["block_K"] = Int(16);
  pb::CompileResponse c;
  {
    grpc::ClientContext ctx;
    grpc::Status s = stub_->Compile(&ctx, fallback, &c);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_NE(c.artifact().key(), a.artifact().key());
}

TEST_F(LookupBestE2ETest, NoProgramIsInvalidArgument) {
  grpc::ClientContext ctx;
  pb::LookupBestResponse resp;
  grpc::Status s = stub_->LookupBest(&ctx, {}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

} // namespace
} // namespace kiln
