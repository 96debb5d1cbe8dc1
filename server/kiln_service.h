// The gRPC adapter for kiln.v1.Kiln (callback API). Each method translates
// the request, calls into the layers below and maps their errors with
// ToGrpcStatus (grpc_status.h). Methods whose capability has not been built
// yet answer UNIMPLEMENTED with a message saying so, never a fake result.
// Thread-safe: methods run concurrently on gRPC's threads.
#pragma once

#include "kiln/v1/service.grpc.pb.h"
#include "server/server_config.h"

namespace kiln::server {

class KilnService final : public kiln::v1::Kiln::CallbackService {
 public:
  explicit KilnService(ServerConfig config);

  grpc::ServerUnaryReactor* GetVersion(grpc::CallbackServerContext* ctx,
                                       const kiln::v1::GetVersionRequest* request,
                                       kiln::v1::GetVersionResponse* response) override;
  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* ctx,
                                        const kiln::v1::ListDevicesRequest* request,
                                        kiln::v1::ListDevicesResponse* response) override;

 private:
  ServerConfig config_;
};

} // namespace kiln::server
