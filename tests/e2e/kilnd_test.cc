// End-to-end: the real kilnd process on a loopback port.
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "compiler/passes/target.h"
#include "gtest/gtest.h"
#include "kiln/v1/service.grpc.pb.h"
#include "tests/e2e/daemon_process.h"

namespace kiln {
namespace {

const std::string kKilnd = std::string(KILN_BINARY_DIR) + "/kilnd";

class KilndTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(daemon_.Start(kKilnd, {"--listen=127.0.0.1:0", "--cache_dir=" + CacheDir()}))
        << daemon_.output();
    channel_ = grpc::CreateChannel(daemon_.address(), grpc::InsecureChannelCredentials());
  }

  static std::string CacheDir() { return ::testing::TempDir() + "kilnd_test_cache"; }

  testing::DaemonProcess daemon_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(KilndTest, ReportsVersion) {
  auto stub = kiln::v1::Kiln::NewStub(channel_);
  grpc::ClientContext ctx;
  kiln::v1::GetVersionResponse response;
  grpc::Status status = stub->GetVersion(&ctx, {}, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(response.version().empty());
  EXPECT_EQ(response.ir_version(), "1");
  // The one list of targets (compiler/passes/target.h), not a copy of it.
  const std::vector<std::string> targets(response.targets().begin(), response.targets().end());
  EXPECT_EQ(targets, passes::SupportedTargets());
}

TEST_F(KilndTest, ListsTheHostCpu) {
  auto stub = kiln::v1::Kiln::NewStub(channel_);
  grpc::ClientContext ctx;
  kiln::v1::ListDevicesResponse response;
  ASSERT_TRUE(stub->ListDevices(&ctx, {}, &response).ok());
  ASSERT_GE(response.devices_size(), 1);
  EXPECT_EQ(response.devices(0).id(), "cpu");
}

TEST_F(KilndTest, TuneWithoutAProgramIsInvalidArgument) {
  auto stub = kiln::v1::Kiln::NewStub(channel_);
  grpc::ClientContext ctx;
  kiln::v1::TuneRequest request;
  std::unique_ptr<grpc::ClientReader<kiln::v1::TuneEvent>> reader = stub->Tune(&ctx, request);
  kiln::v1::TuneEvent event;
  EXPECT_FALSE(reader->Read(&event));
  grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("program: no source"), std::string::npos);
}

TEST_F(KilndTest, CacheStatsNamesItsDirectory) {
  auto stub = kiln::v1::Kiln::NewStub(channel_);
  grpc::ClientContext ctx;
  kiln::v1::CacheStatsResponse response;
  ASSERT_TRUE(stub->CacheStats(&ctx, {}, &response).ok());
  EXPECT_EQ(response.cache_dir(), CacheDir());
  EXPECT_EQ(response.entries(), 0);
}

TEST_F(KilndTest, HealthCheckServes) {
  // grpc.health.v1.Health/Check with an empty HealthCheckRequest; the reply
  // HealthCheckResponse{status: SERVING} encodes as field 1 varint 1.
  grpc::GenericStub generic(channel_);
  grpc::ClientContext ctx;
  grpc::Slice empty("", 0);
  grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  grpc::Status status;
  bool done = false;
  std::mutex mu;
  std::condition_variable cv;
  generic.UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request, &response,
                    [&](grpc::Status s) {
                      std::lock_guard<std::mutex> lock(mu);
                      status = s;
                      done = true;
                      cv.notify_one();
                    });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices)
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_EQ(bytes, std::string("\x08\x01", 2));
}

TEST_F(KilndTest, StopsCleanlyOnSigterm) {
  EXPECT_EQ(daemon_.Stop(), 0) << daemon_.output();
  EXPECT_NE(daemon_.output().find("shutting down"), std::string::npos);
}

TEST(KilndStartup, CpuWorkersAreDevicesOfTheHostModel) {
  testing::DaemonProcess daemon;
  ASSERT_TRUE(daemon.Start(kKilnd, {"--listen=127.0.0.1:0", "--worker-cpu-workers=2",
                                    "--cache_dir=" + ::testing::TempDir() + "kilnd_cpu_workers"}))
      << daemon.output();
  kiln::v1::ListDevicesResponse response;
  {
    auto stub = kiln::v1::Kiln::NewStub(
        grpc::CreateChannel(daemon.address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub->ListDevices(&ctx, {}, &response).ok());
  }
  ASSERT_GE(response.devices_size(), 2);
  EXPECT_EQ(response.devices(0).id(), "cpu");
  EXPECT_EQ(response.devices(1).id(), "cpu:1");
  EXPECT_EQ(response.devices(1).model(), response.devices(0).model());
  EXPECT_EQ(response.devices(1).worker_state(), "running");
  EXPECT_EQ(daemon.Stop(), 0) << daemon.output();
}

TEST(KilndStartup, BadListenAddressIsAClearError) {
  testing::DaemonProcess daemon;
  EXPECT_FALSE(daemon.Start(kKilnd, {"--listen=256.1.1.1:notaport"}));
  EXPECT_EQ(daemon.Wait(), 1);
  EXPECT_NE(daemon.output().find("cannot listen"), std::string::npos) << daemon.output();
}

TEST(KilndStartup, PrintsVersion) {
  testing::DaemonProcess daemon;
  EXPECT_FALSE(daemon.Start(kKilnd, {"--version"}));
  EXPECT_EQ(daemon.Wait(), 0);
  EXPECT_NE(daemon.output().find("kilnd "), std::string::npos);
}

} // namespace
} // namespace kiln
