// kvd.v1.DocumentService on gRPC's callback API, through the same documents::DocumentService and
// the same typed requests and checks as /v1/documents (api/document_request.h): Upload
// (client-streaming: a header, then the text in pieces), Get, List, Delete, Recut.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "kvd/v1/documents.grpc.pb.h"
#include "server/core/serving_context.h"

namespace kvd::server {

class DocumentsRpc final : public v1::DocumentService::CallbackService {
 public:
  // `context` (with its documents) is borrowed and must outlive the service.
  explicit DocumentsRpc(ServingContext& context) : context_(context) {}

  grpc::ServerReadReactor<v1::UploadRequest>* Upload(grpc::CallbackServerContext* call,
                                                     v1::Document* response) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* call,
                                const v1::GetDocumentRequest* request,
                                v1::Document* response) override;
  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* call,
                                 const v1::ListDocumentsRequest* request,
                                 v1::ListDocumentsResponse* response) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* call,
                                   const v1::DeleteDocumentRequest* request,
                                   v1::DeleteDocumentResponse* response) override;
  grpc::ServerUnaryReactor* Recut(grpc::CallbackServerContext* call,
                                  const v1::RecutRequest* request, v1::Document* response) override;

 private:
  // Counts the call (protocol "grpc") and finishes it with `status`.
  grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* call, const std::string& tenant,
                                   const absl::Status& status);
  // Runs `work` (it fills the response and returns the call's status) on the documents'
  // request workers, since it touches the store, and counts and finishes the call there.
  grpc::ServerUnaryReactor* FinishOnWorker(grpc::CallbackServerContext* call,
                                           const std::string& tenant,
                                           std::function<absl::Status()> work);

  ServingContext& context_;
};

}  // namespace kvd::server
