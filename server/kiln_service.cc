#include "server/kiln_service.h"

#include <utility>

#include <unistd.h>

#include "server/version.h"

namespace kiln::server {

KilnService::KilnService(ServerConfig config) : config_(std::move(config)) {}

grpc::ServerUnaryReactor* KilnService::GetVersion(grpc::CallbackServerContext* ctx,
                                                  const kiln::v1::GetVersionRequest* request,
                                                  kiln::v1::GetVersionResponse* response) {
  response->set_version(kKilnVersion);
  response->set_ir_version(kIrVersions);
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* KilnService::ListDevices(grpc::CallbackServerContext* ctx,
                                                   const kiln::v1::ListDevicesRequest* request,
                                                   kiln::v1::ListDevicesResponse* response) {
  // GPU discovery arrives with the worker pool; the host CPU is always there.
  kiln::v1::Device* cpu = response->add_devices();
  cpu->set_id("cpu");
  cpu->set_model("host CPU");
  cpu->set_arch("x86_64");
  cpu->set_sm_count(static_cast<int32_t>(sysconf(_SC_NPROCESSORS_ONLN)));
  cpu->set_worker_state("none");
  grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

} // namespace kiln::server
