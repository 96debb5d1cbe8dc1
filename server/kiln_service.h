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

#include <grpcpp/support/byte_buffer.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "cache/cache.h"
#include "kiln/v1/service.grpc.pb.h"
#include "server/authenticator.h"
#include "server/benchmark_service.h"
#include "server/compile_service.h"
#include "server/job_manager.h"
#include "server/tune_service.h"
#include "server/wire_scan.h"

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
  // What the requests that carry a program (Compile, Benchmark, Tune,
  // LookupBest) may parse to (wire_scan.h).
  WireLimits wire_limits;
};

// kiln.v1.Kiln's callback service (Kiln::CallbackService, spelled out) with
// the methods that take a program (Compile, Tune, LookupBest, Benchmark) as
// raw methods: their handlers get the request's bytes and parse them
// themselves, after checking what the parse would allocate (wire_scan.h; a
// 64 MiB request of empty sub-messages parses to gigabytes). Compile also
// answers a request seen before from a digest of those bytes with the stored
// metadata's own bytes, without parsing the request or serializing a
// response message. Every other request is small by its schema (no repeated
// or nested fields) and is parsed by gRPC onto a per-call arena.
// A method added to service.proto is added here too.
using KilnGrpc = kiln::v1::Kiln;
using KilnServiceBase =
    KilnGrpc::WithRawCallbackMethod_Compile<KilnGrpc::WithCallbackMethod_GetArtifact<
        KilnGrpc::WithRawCallbackMethod_Tune<KilnGrpc::WithRawCallbackMethod_LookupBest<
            KilnGrpc::WithRawCallbackMethod_Benchmark<KilnGrpc::WithCallbackMethod_GetJob<
                KilnGrpc::WithCallbackMethod_WatchJob<KilnGrpc::WithCallbackMethod_CancelJob<
                    KilnGrpc::WithCallbackMethod_ListJobs<KilnGrpc::WithCallbackMethod_ListDevices<
                        KilnGrpc::WithCallbackMethod_ListMeasurements<
                            KilnGrpc::WithCallbackMethod_CacheStats<
                                KilnGrpc::WithCallbackMethod_GetVersion<
                                    KilnGrpc::WithCallbackMethod_Echo<
                                        KilnGrpc::Service>>>>>>>>>>>>>>;

class KilnService final : public KilnServiceBase {
 public:
  explicit KilnService(ServiceDeps deps);

  // The synchronous overloads stay (unused).
  using KilnServiceBase::Benchmark;
  using KilnServiceBase::Compile;
  using KilnServiceBase::LookupBest;
  using KilnServiceBase::Tune;

  grpc::ServerUnaryReactor* Compile(grpc::CallbackServerContext* ctx,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<kiln::v1::ArtifactChunk>*
  GetArtifact(grpc::CallbackServerContext* ctx,
              const kiln::v1::GetArtifactRequest* request) override;
  // Streams kiln.v1.TuneEvent messages, serialized.
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Tune(grpc::CallbackServerContext* ctx,
                                                   const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* LookupBest(grpc::CallbackServerContext* ctx,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Benchmark(grpc::CallbackServerContext* ctx,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
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
  absl::Status LookupBestInto(const kiln::v1::LookupBestRequest& request,
                              kiln::v1::LookupBestResponse* response) const;

  // The daemon's own counters that CacheStats reports (compile, tune and
  // benchmark services), read now.
  struct StatsCounters {
    int64_t compile_hits = 0, compile_misses = 0, joined = 0, builds = 0, build_failures = 0;
    int64_t tunes = 0, tune_measured = 0, tune_failed = 0, benchmarks = 0;
  };
  StatsCounters ReadStatsCounters() const;

  ServiceDeps deps_;
  std::unique_ptr<Authenticator> owned_auth_;
  // CacheStats reports the counters less their values at the last zero
  // (CacheStatsRequest.zero): a baseline, so that the services' counters,
  // which /metrics exports as only-growing Prometheus counters, are never
  // reset.
  absl::Mutex stats_mu_;
  StatsCounters stats_base_ ABSL_GUARDED_BY(stats_mu_);
  int64_t stats_since_unix_ms_ ABSL_GUARDED_BY(stats_mu_) = 0; // start or last zero
};

// The host CPU as a device.
kiln::v1::Device HostCpuDevice();

} // namespace kiln::server
