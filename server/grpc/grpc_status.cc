#include "server/grpc/grpc_status.h"

#include <string>

#include "server/http/error_response.h"

namespace kvd::server {

grpc::Status ToGrpcStatus(const absl::Status& status, grpc::ServerContextBase& context) {
  if (status.ok()) return grpc::Status::OK;
  for (const auto& [key, value] : ErrorFields(status)) {
    context.AddTrailingMetadata(key, value);
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* call,
                                      const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = call->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status, *call));
  return reactor;
}

}  // namespace kvd::server
