// TrackerService::AddTo: the services on a server builder, and requests that do not parse.
//
// gRPC's callback API answers a request whose bytes do not parse as the method's message with
// UNIMPLEMENTED and no message (its handler, given no request, falls back to an "unimplemented"
// reactor), which tells a client the method does not exist. A server interceptor on the
// tracker's own unary and server-streaming methods turns exactly that status — UNIMPLEMENTED with
// an empty message, which no handler of ours returns — into INVALID_ARGUMENT naming the message
// type. The agents' bidirectional stream has no interceptor (its messages are many and its
// reactor ends a stream whose message does not parse itself), nor have methods the tracker does
// not know.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/server_interceptor.h"
#include "tracker/service.h"

namespace benchfarm::tracker {
namespace {

namespace gx = grpc::experimental;

class MalformedRequestInterceptor final : public gx::Interceptor {
 public:
  explicit MalformedRequestInterceptor(const std::string* message) : message_(message) {}

  void Intercept(gx::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(gx::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED &&
          status.error_message().empty()) {
        methods->ModifySendStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, *message_));
      }
    }
    methods->Proceed();
  }

 private:
  const std::string* const message_;  // owned by the factory
};

class MalformedRequestInterceptorFactory final : public gx::ServerInterceptorFactoryInterface {
 public:
  MalformedRequestInterceptorFactory() {
    for (const char* name :
         {v1::Tracker::service_full_name(), v1::TrackerAgent::service_full_name()}) {
      const google::protobuf::ServiceDescriptor* service =
          google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name);
      if (service == nullptr) continue;  // (linked in with the messages: always there)
      for (int i = 0; i < service->method_count(); ++i) {
        const google::protobuf::MethodDescriptor* m = service->method(i);
        if (m->client_streaming()) continue;
        messages_[absl::StrCat("/", service->full_name(), "/", m->name())] = absl::StrCat(
            "the request does not parse as a ", m->input_type()->full_name(), " message");
      }
    }
  }

  gx::Interceptor* CreateServerInterceptor(gx::ServerRpcInfo* info) override {
    auto it = messages_.find(info->method());
    return it == messages_.end() ? nullptr : new MalformedRequestInterceptor(&it->second);
  }

 private:
  // "/benchfarm.v1.Tracker/GetJob" -> what its malformed requests are told
  absl::flat_hash_map<std::string, std::string> messages_;
};

}  // namespace

void TrackerService::AddTo(grpc::ServerBuilder* builder) {
  builder->RegisterService(static_cast<v1::Tracker::CallbackService*>(this));
  builder->RegisterService(static_cast<v1::TrackerAgent::CallbackService*>(this));
  builder->SetMaxReceiveMessageSize(64 << 20);
  std::vector<std::unique_ptr<gx::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<MalformedRequestInterceptorFactory>());
  builder->experimental().SetInterceptorCreators(std::move(interceptors));
}

}  // namespace benchfarm::tracker
