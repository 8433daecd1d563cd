// kvd's gRPC front end on its own port: InferenceService, DocumentService (when documents are
// on), the standard health service (grpc.health.v1) and server reflection, on gRPC's
// callback-API threads. It shares the HTTP server's ServingContext: the same scheduler,
// tenants, documents, metrics and lifecycle flags.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/core/serving_context.h"

namespace grpc {
class Server;
class Service;
}  // namespace grpc

namespace kvd::server {

struct GrpcServerOptions {
  std::string host = "0.0.0.0";
  int32_t port = 0;  // 0 is refused here: server.grpc_port 0 means no gRPC server at all
  size_t max_message_bytes = size_t{8} << 20;
  size_t max_metadata_bytes = size_t{16} << 10;  // a call's headers (server.max_header_bytes)
};

class GrpcServer {
 public:
  // Binds and starts serving. Unavailable when the port cannot be bound.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<GrpcServer>> Start(
      const GrpcServerOptions& options, ServingContext& context);
  ~GrpcServer();

  int port() const { return port_; }
  // The health service's answer for the server ("") and each of its services: SERVING or
  // NOT_SERVING (draining).
  void SetServing(bool serving);
  // Stops taking calls; calls still running get until `deadline` to finish, then are cancelled.
  void Stop(absl::Duration deadline);

 private:
  GrpcServer() = default;

  std::vector<std::unique_ptr<grpc::Service>> services_;
  std::vector<std::string> service_names_;  // answered by the health service
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace kvd::server
