// kvd.v1.InferenceService on gRPC's callback API: Generate streams a completion started by the
// same code as the HTTP API's (api/completion_start.h); Abort, Tokenize, Detokenize and
// ListModels answer as their HTTP counterparts do. Reactors run on gRPC's threads and never
// block; scheduler events queue them for a pump thread of the service's own, so the scheduler
// thread never builds messages or writes sockets.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kvd/v1/inference.grpc.pb.h"
#include "server/core/serving_context.h"

namespace kvd::server {

class InferenceRpc final : public v1::InferenceService::CallbackService {
 public:
  // `context` is borrowed and must outlive the service.
  explicit InferenceRpc(ServingContext& context);
  ~InferenceRpc() override;

  grpc::ServerWriteReactor<v1::GenerateResponse>* Generate(
      grpc::CallbackServerContext* call, const v1::GenerateRequest* request) override;
  grpc::ServerUnaryReactor* Abort(grpc::CallbackServerContext* call,
                                  const v1::AbortRequest* request,
                                  v1::AbortResponse* response) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* call,
                                     const v1::TokenizeRequest* request,
                                     v1::TokenizeResponse* response) override;
  grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* call,
                                       const v1::DetokenizeRequest* request,
                                       v1::DetokenizeResponse* response) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* call,
                                       const v1::ListModelsRequest* request,
                                       v1::ListModelsResponse* response) override;

  // Running Generate calls by tenant and request_id, for Abort. Thread-safe.
  class Registry;

 private:
  ServingContext& context_;
  std::shared_ptr<Registry> registry_;
  // The thread that writes Generate streams: a PumpQueue, private to inference_rpc.cc.
  std::shared_ptr<void> pumps_;
};

}  // namespace kvd::server
