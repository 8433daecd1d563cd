#include "server/documents_api/document_routes.h"

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "documents/document_service.h"
#include "server/auth/document_quota.h"
#include "server/core/deferred_reply.h"
#include "server/core/request_auth.h"
#include "server/documents_api/document_json.h"
#include "server/http/error_response.h"
#include "server/http/query_string.h"
#include "server/metrics/metrics_exporter.h"
#include "server/openai/openai_json.h"
#include "spdlog/spdlog.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

constexpr int32_t kDefaultPageSize = 20;
constexpr int32_t kMaxPageSize = 100;

class DocumentApi {
 public:
  explicit DocumentApi(ServingContext& context)
      : context_(context), documents_(*context.documents) {}

  // Never blocks an I/O thread: the reply completes when the document service answers.
  HandlerResult Upload(HttpRequest& request) {
    const absl::Time start = absl::Now();
    auto tenant = AuthenticateRequest(context_, request);
    absl::StatusOr<documents::DocumentUpload> upload = absl::UnknownError("not parsed");
    if (tenant.ok()) {
      auto body = ParseJsonObjectBody(request.body);
      upload = body.ok() ? ParseDocumentUpload(*body, documents_.config())
                         : absl::StatusOr<documents::DocumentUpload>(body.status());
    }
    if (!tenant.ok() || !upload.ok()) {
      const absl::Status status = tenant.ok() ? upload.status() : tenant.status();
      HttpResponse response = ErrorResponse(status);
      Finished(request.method, request.path, tenant.ok() ? (*tenant)->id() : "-", status, start,
               response);
      return response;
    }
    // The answer arrives when the compression ends or the upload's wait passes; the upload goes
    // on whether or not its uploader waits.
    auto reply = std::make_unique<DeferredReply>();
    documents_.Upload(
        (*tenant)->id(), DocumentQuotaOf(**tenant, documents_.config()), *std::move(upload),
        [this, state = reply->state(), method = request.method, path = request.path,
         tenant_id = (*tenant)->id(), start](absl::StatusOr<documents::DocumentView> view) {
          HttpResponse response = ErrorResponse(view.status());
          if (view.ok()) {
            const bool processing = view->meta.status == cache_store::DocumentStatus::kProcessing;
            response =
                HttpResponse{.status = processing ? 202 : 201, .body = Dump(DocumentJson(*view))};
          }
          Finished(method, path, tenant_id, view.status(), start, response);
          DeferredReply::Complete(*state, std::move(response));
        });
    return reply;
  }

  HandlerResult List(HttpRequest& request) {
    return Answer(request, [this, query = request.query](Tenant& tenant) -> HttpResponse {
      auto params = ParseQueryString(query);
      if (!params.ok()) return ErrorResponse(params.status());
      int32_t limit = kDefaultPageSize;
      std::string after;
      for (const auto& [name, value] : *params) {
        if (name == "limit") {
          if (!absl::SimpleAtoi(value, &limit) || limit < 1 || limit > kMaxPageSize) {
            return ErrorResponse(
                WithParam(absl::InvalidArgumentError(absl::StrCat(
                              "'limit' must be an integer in [1, ", kMaxPageSize, "]")),
                          "limit"));
          }
        } else if (name == "after") {
          after = value;
        } else {
          return ErrorResponse(WithParam(
              absl::InvalidArgumentError(absl::StrCat("unsupported query parameter '", name, "'")),
              name));
        }
      }
      auto page = documents_.List(tenant.id(), after, limit);
      if (!page.ok()) return ErrorResponse(page.status());
      json data = json::array();
      for (const documents::DocumentView& view : page->documents)
        data.push_back(DocumentJson(view));
      json list = {{"object", "list"},
                   {"data", data},
                   {"has_more", !page->next_page_token.empty()},
                   {"first_id", data.empty() ? json() : data.front()["id"]},
                   {"last_id", data.empty() ? json() : data.back()["id"]}};
      return HttpResponse{.status = 200, .body = Dump(list)};
    });
  }

  HandlerResult Get(HttpRequest& request) {
    return Answer(request, [this, id = request.path_params["id"]](Tenant& tenant) -> HttpResponse {
      auto view = documents_.Get(tenant.id(), id);
      if (!view.ok()) return ErrorResponse(view.status());
      return HttpResponse{.status = 200, .body = Dump(DocumentJson(*view))};
    });
  }

  HandlerResult Delete(HttpRequest& request) {
    return Answer(request, [this, id = request.path_params["id"]](Tenant& tenant) -> HttpResponse {
      if (auto status = documents_.Delete(tenant.id(), id); !status.ok()) {
        return ErrorResponse(status);
      }
      return HttpResponse{
          .status = 200,
          .body = Dump({{"id", id}, {"object", "document.deleted"}, {"deleted", true}})};
    });
  }

  HandlerResult Recut(HttpRequest& request) {
    return Answer(request,
                  [this, id = request.path_params["id"],
                   body_text = request.body](Tenant& tenant) -> HttpResponse {
                    auto body = ParseJsonObjectBody(body_text);
                    if (!body.ok()) return ErrorResponse(body.status());
                    auto recut = ParseRecut(*body);
                    if (!recut.ok()) return ErrorResponse(recut.status());
                    auto view =
                        documents_.Recut(tenant.id(), id, recut->ratio, recut->budget_tokens);
                    if (!view.ok()) return ErrorResponse(view.status());
                    return HttpResponse{.status = 200, .body = Dump(DocumentJson(*view))};
                  });
  }

 private:
  // Authenticates, then runs `handle` on the documents' request workers (it touches the store,
  // which this I/O thread never waits on), and counts and logs the answer there.
  template <typename Handle>
  HandlerResult Answer(const HttpRequest& request, Handle handle) {
    const absl::Time start = absl::Now();
    auto tenant = AuthenticateRequest(context_, request);
    if (!tenant.ok()) {
      HttpResponse response = ErrorResponse(tenant.status());
      Finished(request.method, request.path, "-", tenant.status(), start, response);
      return response;
    }
    auto reply = std::make_unique<DeferredReply>();
    const bool posted =
        documents_.Post([this, state = reply->state(), tenant = *tenant, handle = std::move(handle),
                         method = request.method, path = request.path, start]() mutable {
          HttpResponse response = handle(*tenant);
          Finished(method, path, tenant->id(), absl::OkStatus(), start, response);
          DeferredReply::Complete(*state, std::move(response));
        });
    if (!posted) {
      const absl::Status status = absl::UnavailableError("the server is shutting down");
      HttpResponse response = ErrorResponse(status);
      Finished(request.method, request.path, (*tenant)->id(), status, start, response);
      return response;
    }
    return reply;
  }

  // Marks the replica on `response`, counts it and logs it. `status` is the authentication's
  // or the operation's, for the rejection count.
  void Finished(const std::string& method, const std::string& path, const std::string& tenant,
                const absl::Status& status, absl::Time start, HttpResponse& response) const {
    // Where this replica's documents live, for clients and gateways that route by it.
    if (!documents_.replica().empty()) {
      response.headers.emplace_back("X-Kvd-Replica", documents_.replica());
    }
    if (context_.metrics != nullptr) {
      context_.metrics->RecordRequest(tenant, response.status);
      if (status.code() == absl::StatusCode::kUnauthenticated) {
        context_.metrics->RecordRejection(tenant, RejectionReason::kUnauthenticated);
      }
    }
    if (context_.log_requests) {
      spdlog::info("{} {} tenant={} status={} {:.3f}s", method, path, tenant, response.status,
                   absl::ToDoubleSeconds(absl::Now() - start));
    }
  }

  ServingContext& context_;
  documents::DocumentService& documents_;
};

}  // namespace

void AddDocumentRoutes(Router& router, ServingContext& context) {
  if (context.documents == nullptr) return;
  auto api = std::make_shared<DocumentApi>(context);
  router.Add("POST", "/v1/documents", [api](HttpRequest& r) { return api->Upload(r); });
  router.Add("GET", "/v1/documents", [api](HttpRequest& r) { return api->List(r); });
  router.Add("GET", "/v1/documents/{id}", [api](HttpRequest& r) { return api->Get(r); });
  router.Add("DELETE", "/v1/documents/{id}", [api](HttpRequest& r) { return api->Delete(r); });
  router.Add("POST", "/v1/documents/{id}/recut", [api](HttpRequest& r) { return api->Recut(r); });
}

}  // namespace kvd::server
