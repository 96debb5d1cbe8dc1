#include "server/rpc_observer.h"

#include <chrono>
#include <random>
#include <string>

#include "absl/strings/str_format.h"
#include "util/log.h"

namespace kiln::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

std::string NewRequestId() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("r-%016x", rng());
}

class RpcObserver final : public grpc::experimental::Interceptor {
 public:
  RpcObserver(grpc::experimental::ServerRpcInfo* info, DaemonMetrics* metrics)
      : info_(info), metrics_(metrics), start_(std::chrono::steady_clock::now()) {
    const std::string full = info->method() != nullptr ? info->method() : "";
    method_ = full.substr(full.rfind('/') + 1);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      const auto* md = methods->GetRecvInitialMetadata();
      if (md != nullptr) {
        auto it = md->find("x-request-id");
        if (it != md->end()) request_id_.assign(it->second.data(), it->second.size());
      }
      if (request_id_.empty() || request_id_.size() > 128) request_id_ = NewRequestId();
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      const auto code = static_cast<absl::StatusCode>(status.error_code());
      if (metrics_ != nullptr) metrics_->RecordRpc(method_, code, seconds);
      const bool server_fault =
          code == absl::StatusCode::kInternal || code == absl::StatusCode::kUnknown ||
          code == absl::StatusCode::kDataLoss || code == absl::StatusCode::kUnavailable;
      const util::LogLevel level = server_fault ? util::LogLevel::kWarning : util::LogLevel::kDebug;
      if (util::LogEnabled(level)) {
        util::Log(level, "rpc",
                  {{"rpc", method_},
                   {"request_id", request_id_},
                   {"code", static_cast<int64_t>(status.error_code())},
                   {"ms", seconds * 1000},
                   {"peer", info_->server_context() != nullptr ? info_->server_context()->peer()
                                                               : std::string()},
                   {"error", status.error_message()}});
      }
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* info_;
  DaemonMetrics* metrics_;
  std::chrono::steady_clock::time_point start_;
  std::string method_;
  std::string request_id_;
};

class RpcObserverFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RpcObserverFactory(DaemonMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor*
  CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new RpcObserver(info, metrics_);
  }

 private:
  DaemonMetrics* metrics_;
};

} // namespace

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
RpcObserverFactories(DaemonMetrics* metrics) {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<RpcObserverFactory>(metrics));
  return out;
}

} // namespace kiln::server
