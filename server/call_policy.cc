#include "server/call_policy.h"

#include <string>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"

namespace kiln::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

constexpr absl::string_view kKilnPrefix = "/kiln.v1.Kiln/";
constexpr absl::string_view kReflectionPrefix = "/grpc.reflection.";

// "kiln.v1.GetJobRequest" for "/kiln.v1.Kiln/GetJob".
std::string RequestTypeOf(absl::string_view method) {
  const std::string name = absl::StrCat("kiln.v1.Kiln.", method.substr(kKilnPrefix.size()));
  const google::protobuf::MethodDescriptor* m =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(name);
  return m != nullptr ? m->input_type()->full_name() : "request";
}

class CallPolicy final : public grpc::experimental::Interceptor {
 public:
  CallPolicy(grpc::experimental::ServerRpcInfo* info, const Authenticator* auth,
             bool open_reflection)
      : method_(info->method() != nullptr ? info->method() : ""), auth_(auth) {
    guard_reflection_ =
        !open_reflection && auth_ != nullptr && absl::StartsWith(method_, kReflectionPrefix);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (guard_reflection_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      std::string authorization;
      if (const auto* md = methods->GetRecvInitialMetadata(); md != nullptr) {
        auto it = md->find("authorization");
        if (it != md->end()) authorization.assign(it->second.data(), it->second.size());
      }
      denied_ = auth_->CheckBearer(authorization);
    }
    if (!denied_.ok() &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      // Nothing of the schema leaves: an empty buffer is not sent at all.
      if (grpc::ByteBuffer* out = methods->GetSerializedSendMessage(); out != nullptr) {
        out->Clear();
      }
    }
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      // Every status leaves with a bounded message, however it was made.
      if (const grpc::Status status = methods->GetSendStatus();
          status.error_message().size() > kMaxStatusMessageBytes) {
        methods->ModifySendStatus(grpc::Status(status.error_code(),
                                               BoundStatusMessage(status.error_message()),
                                               status.error_details()));
      }
      if (!denied_.ok()) {
        methods->ModifySendStatus(
            grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                         absl::StrCat("server reflection: ", denied_.message(),
                                      " (kilnd's auth.open_reflection serves it without one)")));
      } else if (absl::StartsWith(method_, kKilnPrefix)) {
        const grpc::Status status = methods->GetSendStatus();
        if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED &&
            status.error_message().empty()) {
          methods->ModifySendStatus(grpc::Status(
              grpc::StatusCode::INVALID_ARGUMENT,
              absl::StrCat("the request is not a valid ", RequestTypeOf(method_),
                           " message (malformed protobuf: truncated or invalid bytes, a "
                           "string field that is not UTF-8, or messages nested deeper than "
                           "protobuf's recursion limit of ",
                           google::protobuf::io::CodedInputStream::GetDefaultRecursionLimit(),
                           " levels)")));
        }
      }
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
  const Authenticator* const auth_;
  bool guard_reflection_ = false;
  absl::Status denied_;
};

class CallPolicyFactoryImpl final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  CallPolicyFactoryImpl(const Authenticator* auth, bool open_reflection)
      : auth_(auth), open_reflection_(open_reflection) {}
  grpc::experimental::Interceptor*
  CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new CallPolicy(info, auth_, open_reflection_);
  }

 private:
  const Authenticator* const auth_;
  const bool open_reflection_;
};

} // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
CallPolicyFactory(const Authenticator* auth, bool open_reflection) {
  return std::make_unique<CallPolicyFactoryImpl>(auth, open_reflection);
}

} // namespace kiln::server
