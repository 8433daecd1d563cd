#include "server/grpc/documents_rpc.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cache_store/store/kv_storage.h"
#include "documents/document_service.h"
#include "nlohmann/json.hpp"
#include "server/auth/document_quota.h"
#include "server/documents_api/document_json.h"
#include "server/grpc/call_auth.h"
#include "server/grpc/grpc_status.h"
#include "server/grpc/upload_request.h"
#include "server/http/error_response.h"
#include "server/metrics/metrics_exporter.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

v1::DocumentStatus ToProto(cache_store::DocumentStatus status) {
  switch (status) {
    case cache_store::DocumentStatus::kProcessing:
      return v1::DOCUMENT_STATUS_PROCESSING;
    case cache_store::DocumentStatus::kReady:
      return v1::DOCUMENT_STATUS_READY;
    case cache_store::DocumentStatus::kFailed:
      return v1::DOCUMENT_STATUS_FAILED;
  }
  return v1::DOCUMENT_STATUS_UNSPECIFIED;
}

// The same fields as the HTTP API's document JSON (api/document_json.h).
void ToProto(const documents::DocumentView& view, v1::Document& out) {
  const json document = DocumentJson(view);
  out.set_id(view.meta.id);
  out.set_status(ToProto(view.meta.status));
  out.set_progress(document.value(
      "progress", view.meta.status == cache_store::DocumentStatus::kReady ? 100.0 : 0.0));
  out.set_failure_reason(view.meta.failure_reason);
  out.set_created_at(document["created_at"].get<int64_t>());
  if (document["expires_at"].is_number()) out.set_expires_at(document["expires_at"].get<int64_t>());
  out.set_token_count(view.meta.token_count);
  out.set_kept_entries(view.meta.kept_entries);
  out.set_stored_bytes(view.meta.stored_bytes);
  out.set_ratio(view.meta.identity.ratio);
  out.set_method(view.meta.identity.method);
  out.set_kv_dtype(cache_store::KvStorageName(view.meta.storage));
  out.set_keep_full(view.meta.keep_full);
  out.set_merge(view.meta.merge);
  out.set_metadata_json(view.meta.metadata.dump());
  out.set_replica(document.value("replica", ""));
}

// Counts a finished call in kvd_tenant_requests_total, as the HTTP routes count theirs.
void Count(ServingContext& context, const std::string& tenant, const absl::Status& status) {
  if (context.metrics != nullptr) {
    context.metrics->RecordRequest(tenant, status.ok() ? 200 : HttpStatusFor(status),
                                   Protocol::kGrpc);
  }
}

// Upload: the header, then the text in pieces; the document service answers when the
// compression ends or the upload's wait passes, never blocking a gRPC thread.
class UploadCall final : public grpc::ServerReadReactor<v1::UploadRequest> {
 public:
  UploadCall(ServingContext& context, grpc::CallbackServerContext* call, v1::Document* response)
      : context_(context), call_(call), response_(response) {
    auto tenant = AuthenticateCall(context_, *call_);
    if (!tenant.ok()) {
      Fail(tenant.status());
      return;
    }
    tenant_ = *std::move(tenant);
    StartRead(&part_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the client finished sending, or the call broke off
      Complete();
      return;
    }
    if (part_.has_header() == header_seen_) {
      Fail(WithParam(
          absl::InvalidArgumentError(header_seen_ ? "the header comes once, first"
                                                  : "the first message must be the header"),
          "header"));
      return;
    }
    if (part_.has_header()) {
      header_ = part_.header();
      header_seen_ = true;
      if (header_.text_bytes() < 1) {
        Fail(WithParam(
            absl::InvalidArgumentError("header.text_bytes must give the text's length in bytes"),
            "header.text_bytes"));
        return;
      }
    } else {
      text_ += part_.text();
      const size_t limit = context_.documents->config().max_document_bytes;
      if (text_.size() > limit) {
        Fail(WithParam(WithErrorCode(absl::InvalidArgumentError(absl::StrCat(
                                         "the document has more than ", limit,
                                         " bytes; this server accepts at most ", limit)),
                                     "request_too_large"),
                       "text"));
        return;
      }
    }
    StartRead(&part_);
  }

  void OnDone() override { delete this; }

 private:
  void Fail(const absl::Status& status) {
    Count(context_, tenant_ != nullptr ? tenant_->id() : "-", status);
    Finish(ToGrpcStatus(status, *call_));
  }

  void Complete() {
    if (!header_seen_) {
      Fail(WithParam(absl::InvalidArgumentError("the first message must be the header"), "header"));
      return;
    }
    // A cancel and a half-close look alike here; the declared length tells them apart.
    if (static_cast<int64_t>(text_.size()) != header_.text_bytes()) {
      Fail(WithParam(absl::InvalidArgumentError(absl::StrCat(
                         "the upload ended after ", text_.size(), " of the ", header_.text_bytes(),
                         " bytes its header declared; nothing was stored")),
                     "text"));
      return;
    }
    absl::StatusOr<DocumentUploadRequest> request = ReadUploadHeader(header_, std::move(text_));
    absl::StatusOr<documents::DocumentUpload> upload =
        request.ok() ? ResolveDocumentUpload(*std::move(request), context_.documents->config())
                     : absl::StatusOr<documents::DocumentUpload>(request.status());
    if (!upload.ok()) {
      Fail(upload.status());
      return;
    }
    documents::DocumentService& documents = *context_.documents;
    // The answer comes from the document service's worker (or at once, for a refusal); this
    // reactor lives until OnDone, which follows the Finish.
    documents.Upload(tenant_->id(), DocumentQuotaOf(*tenant_, documents.config()),
                     *std::move(upload), [this](absl::StatusOr<documents::DocumentView> view) {
                       if (view.ok()) ToProto(*view, *response_);
                       Count(context_, tenant_->id(), view.status());
                       Finish(ToGrpcStatus(view.status(), *call_));
                     });
  }

  ServingContext& context_;
  grpc::CallbackServerContext* const call_;
  v1::Document* const response_;
  std::shared_ptr<Tenant> tenant_;
  v1::UploadRequest part_;
  v1::UploadHeader header_;
  bool header_seen_ = false;
  std::string text_;
};

}  // namespace

grpc::ServerUnaryReactor* DocumentsRpc::Finish(grpc::CallbackServerContext* call,
                                               const std::string& tenant,
                                               const absl::Status& status) {
  Count(context_, tenant, status);
  return FinishUnary(call, status);
}

grpc::ServerUnaryReactor* DocumentsRpc::FinishOnWorker(grpc::CallbackServerContext* call,
                                                       const std::string& tenant,
                                                       std::function<absl::Status()> work) {
  grpc::ServerUnaryReactor* reactor = call->DefaultReactor();
  const bool posted = context_.documents->Post([this, call, reactor, tenant, work] {
    const absl::Status status = work();
    Count(context_, tenant, status);
    reactor->Finish(ToGrpcStatus(status, *call));
  });
  if (!posted) {
    const absl::Status status = absl::UnavailableError("the server is shutting down");
    Count(context_, tenant, status);
    reactor->Finish(ToGrpcStatus(status, *call));
  }
  return reactor;
}

grpc::ServerReadReactor<v1::UploadRequest>* DocumentsRpc::Upload(grpc::CallbackServerContext* call,
                                                                 v1::Document* response) {
  return new UploadCall(context_, call, response);
}

grpc::ServerUnaryReactor* DocumentsRpc::Get(grpc::CallbackServerContext* call,
                                            const v1::GetDocumentRequest* request,
                                            v1::Document* response) {
  auto tenant = AuthenticateCall(context_, *call);
  if (!tenant.ok()) return Finish(call, "-", tenant.status());
  return FinishOnWorker(call, (*tenant)->id(), [this, tenant = *tenant, request, response] {
    auto view = context_.documents->Get(tenant->id(), request->id());
    if (view.ok()) ToProto(*view, *response);
    return view.status();
  });
}

grpc::ServerUnaryReactor* DocumentsRpc::List(grpc::CallbackServerContext* call,
                                             const v1::ListDocumentsRequest* request,
                                             v1::ListDocumentsResponse* response) {
  auto tenant = AuthenticateCall(context_, *call);
  if (!tenant.ok()) return Finish(call, "-", tenant.status());
  const int32_t limit = request->limit() == 0 ? 20 : request->limit();
  if (limit < 1 || limit > 100) {
    return Finish(call, (*tenant)->id(),
                  WithParam(absl::InvalidArgumentError("limit must be in [1, 100]"), "limit"));
  }
  return FinishOnWorker(call, (*tenant)->id(), [this, tenant = *tenant, request, response, limit] {
    auto page = context_.documents->List(tenant->id(), request->after(), limit);
    if (!page.ok()) return page.status();
    for (const documents::DocumentView& view : page->documents) {
      ToProto(view, *response->add_documents());
    }
    response->set_has_more(!page->next_page_token.empty());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* DocumentsRpc::Delete(grpc::CallbackServerContext* call,
                                               const v1::DeleteDocumentRequest* request,
                                               v1::DeleteDocumentResponse* response) {
  auto tenant = AuthenticateCall(context_, *call);
  if (!tenant.ok()) return Finish(call, "-", tenant.status());
  return FinishOnWorker(call, (*tenant)->id(), [this, tenant = *tenant, request, response] {
    absl::Status status = context_.documents->Delete(tenant->id(), request->id());
    if (status.ok()) {
      response->set_id(request->id());
      response->set_deleted(true);
    }
    return status;
  });
}

grpc::ServerUnaryReactor* DocumentsRpc::Recut(grpc::CallbackServerContext* call,
                                              const v1::RecutRequest* request,
                                              v1::Document* response) {
  auto tenant = AuthenticateCall(context_, *call);
  if (!tenant.ok()) return Finish(call, "-", tenant.status());
  const RecutRequest recut = ReadRecutRequest(*request);
  if (auto status = CheckRecut(recut); !status.ok()) return Finish(call, (*tenant)->id(), status);
  return FinishOnWorker(call, (*tenant)->id(), [this, tenant = *tenant, request, response, recut] {
    auto view =
        context_.documents->Recut(tenant->id(), request->id(), recut.ratio, recut.budget_tokens);
    if (view.ok()) ToProto(*view, *response);
    return view.status();
  });
}

}  // namespace kvd::server
