// The gRPC adapter for kiln.v1.Kiln (callback API). Each method translates
// the request (request_convert.h), calls the layer below (CompileService,
// JobManager, the cache) and maps errors with ToGrpcStatus (grpc_status.h).
// No handler blocks a gRPC thread on work: compiles finish their RPC from the
// pool thread that completes the job, and a cancelled or timed-out call
// detaches from its job (which is cancelled unless others share it).
// Methods whose capability has not been built yet answer UNIMPLEMENTED with a
// message saying so, never a fake result.
// Thread-safe: methods run concurrently on gRPC's threads.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include <grpcpp/support/message_allocator.h>

#include "cache/cache.h"
#include "kiln/v1/service.grpc.pb.h"
#include "server/authenticator.h"
#include "server/benchmark_service.h"
#include "server/compile_service.h"
#include "server/job_manager.h"
#include "server/tune_service.h"

namespace kiln::server {

struct ServiceDeps {
  CompileService* compile = nullptr;
  // Benchmark (null: the daemon has no devices to measure on).
  BenchmarkService* benchmark = nullptr;
  // Tune (null: no devices).
  TuneService* tune = nullptr;
  JobManager* jobs = nullptr;
  cache::Cache* cache = nullptr;
  std::string cache_dir;
  // Devices to list (the device pool); the host CPU when unset.
  std::function<std::vector<kiln::v1::Device>()> devices;
  // Token checks and client names; nullptr: no tokens, clients by peer.
  const Authenticator* auth = nullptr;
  // Largest chunk GetArtifact sends.
  int64_t max_chunk_bytes = 4 << 20;
};

class KilnService final : public kiln::v1::Kiln::CallbackService {
 public:
  explicit KilnService(ServiceDeps deps);

  grpc::ServerUnaryReactor* Compile(grpc::CallbackServerContext* ctx,
                                    const kiln::v1::CompileRequest* request,
                                    kiln::v1::CompileResponse* response) override;
  grpc::ServerWriteReactor<kiln::v1::ArtifactChunk>*
  GetArtifact(grpc::CallbackServerContext* ctx,
              const kiln::v1::GetArtifactRequest* request) override;
  grpc::ServerWriteReactor<kiln::v1::TuneEvent>*
  Tune(grpc::CallbackServerContext* ctx, const kiln::v1::TuneRequest* request) override;
  grpc::ServerUnaryReactor* LookupBest(grpc::CallbackServerContext* ctx,
                                       const kiln::v1::LookupBestRequest* request,
                                       kiln::v1::LookupBestResponse* response) override;
  grpc::ServerUnaryReactor* Benchmark(grpc::CallbackServerContext* ctx,
                                      const kiln::v1::BenchmarkRequest* request,
                                      kiln::v1::BenchmarkResponse* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* ctx,
                                   const kiln::v1::GetJobRequest* request,
                                   kiln::v1::Job* response) override;
  grpc::ServerWriteReactor<kiln::v1::Job>*
  WatchJob(grpc::CallbackServerContext* ctx, const kiln::v1::WatchJobRequest* request) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* ctx,
                                      const kiln::v1::CancelJobRequest* request,
                                      kiln::v1::CancelJobResponse* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* ctx,
                                     const kiln::v1::ListJobsRequest* request,
                                     kiln::v1::ListJobsResponse* response) override;
  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* ctx,
                                        const kiln::v1::ListDevicesRequest* request,
                                        kiln::v1::ListDevicesResponse* response) override;
  grpc::ServerUnaryReactor* ListMeasurements(grpc::CallbackServerContext* ctx,
                                             const kiln::v1::ListMeasurementsRequest* request,
                                             kiln::v1::ListMeasurementsResponse* response) override;
  grpc::ServerUnaryReactor* CacheStats(grpc::CallbackServerContext* ctx,
                                       const kiln::v1::CacheStatsRequest* request,
                                       kiln::v1::CacheStatsResponse* response) override;
  grpc::ServerUnaryReactor* GetVersion(grpc::CallbackServerContext* ctx,
                                       const kiln::v1::GetVersionRequest* request,
                                       kiln::v1::GetVersionResponse* response) override;
  grpc::ServerUnaryReactor* Echo(grpc::CallbackServerContext* ctx,
                                 const kiln::v1::EchoRequest* request,
                                 kiln::v1::EchoResponse* response) override;

 private:
  // Compile's request and response live on one protobuf arena per call: the
  // parse and the response's metadata copy make no heap allocation each, and
  // the call's end frees them at once (the hit path is mostly this work).
  class ArenaMessages final
      : public grpc::MessageAllocator<kiln::v1::CompileRequest, kiln::v1::CompileResponse> {
   public:
    grpc::MessageHolder<kiln::v1::CompileRequest, kiln::v1::CompileResponse>*
    AllocateMessages() override;
  };

  ServiceDeps deps_;
  std::unique_ptr<Authenticator> owned_auth_;
  ArenaMessages compile_messages_;
};

// The host CPU as a device.
kiln::v1::Device HostCpuDevice();

} // namespace kiln::server
