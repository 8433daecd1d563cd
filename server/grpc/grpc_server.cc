#include "server/grpc/grpc_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/grpc/documents_rpc.h"
#include "server/grpc/inference_rpc.h"
#include "server/grpc/malformed_request.h"

namespace kvd::server {
namespace {

constexpr int kMaxStreamsPerConnection = 256;

}  // namespace

absl::StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Start(const GrpcServerOptions& options,
                                                              ServingContext& context) {
  if (options.port <= 0 || options.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("gRPC port must be in [1, 65535], got ", options.port));
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  std::unique_ptr<GrpcServer> server(new GrpcServer());
  grpc::ServerBuilder builder;
  const std::string address = options.host.find(':') != std::string::npos
                                  ? absl::StrCat("[", options.host, "]:", options.port)
                                  : absl::StrCat(options.host, ":", options.port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &server->port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  // Streams one connection may hold open at once, and the size of a call's metadata.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxStreamsPerConnection);
  builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, static_cast<int>(std::min<size_t>(
                                                             options.max_metadata_bytes, 1 << 30)));
  RouteProtobufLogs();
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(MalformedRequestInterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  server->services_.push_back(std::make_unique<InferenceRpc>(context));
  if (context.documents != nullptr) {
    server->services_.push_back(std::make_unique<DocumentsRpc>(context));
  }
  for (auto& service : server->services_) builder.RegisterService(service.get());
  server->service_names_.push_back(v1::InferenceService::service_full_name());
  if (context.documents != nullptr) {
    server->service_names_.push_back(v1::DocumentService::service_full_name());
  }
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("cannot serve gRPC on ", address));
  }
  server->SetServing(true);
  return server;
}

GrpcServer::~GrpcServer() { Stop(absl::ZeroDuration()); }

void GrpcServer::SetServing(bool serving) {
  if (server_ == nullptr) return;
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);  // the server as a whole ("")
  for (const std::string& name : service_names_) health->SetServingStatus(name, serving);
}

void GrpcServer::Stop(absl::Duration deadline) {
  if (server_ == nullptr) return;
  SetServing(false);
  server_->Shutdown(absl::ToChronoTime(absl::Now() + deadline));
  server_->Wait();
  server_.reset();
}

}  // namespace kvd::server
