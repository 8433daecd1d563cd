#include "server/responses/responses_routes.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "base/status_details.h"
#include "documents/request_workers.h"
#include "server/core/completion_start.h"
#include "server/core/deferred_reply.h"
#include "server/core/request_auth.h"
#include "server/core/request_log.h"
#include "server/http/error_response.h"
#include "server/http/query_string.h"
#include "server/openai/openai_json.h"
#include "server/responses/input_items.h"
#include "server/responses/response_store.h"
#include "server/responses/responses_reply.h"
#include "server/responses/responses_request.h"

namespace kvd::server::responses {
namespace {

using structured::JsonValue;

// Threads that wait on the shared tier for the routes: two keep one slow round trip from
// delaying every other.
constexpr int kStoreWorkers = 2;

class ResponsesApi {
 public:
  explicit ResponsesApi(ServingContext& context) : context_(context) {}

  HandlerResult Create(HttpRequest& http) {
    const absl::Time start = absl::Now();
    auto tenant = AuthenticateRequest(context_, http);
    if (!tenant.ok())
      return Refuse(http, "-", tenant.status(), start, RejectionFor(tenant.status()));
    auto request = ReadResponsesRequest(http.body);
    if (!request.ok()) return Refuse(http, (*tenant)->id(), request.status(), start);
    // Continuing a stored response reads the store first.
    if (!request->previous_response_id) {
      return Start(*std::move(tenant), *std::move(request), http.method, http.path, start);
    }
    return WithStore([this, tenant = *std::move(tenant), request = *std::move(request),
                      method = http.method, path = http.path, start]() mutable {
      return Start(std::move(tenant), std::move(request), method, path, start);
    });
  }

  HandlerResult Get(HttpRequest& http) {
    auto tenant = AuthenticateRequest(context_, http);
    if (!tenant.ok()) return ErrorResponse(tenant.status());
    return WithStore([this, tenant = (*tenant)->id(), id = http.path_params["id"]] {
      auto stored = Stored(tenant, id);
      if (!stored.ok()) return ErrorResponse(stored.status());
      return HttpResponse{.status = 200, .body = DumpOrdered(stored->response)};
    });
  }

  HandlerResult InputItems(HttpRequest& http) {
    auto tenant = AuthenticateRequest(context_, http);
    if (!tenant.ok()) return ErrorResponse(tenant.status());
    auto params = ParseQueryString(http.query);
    if (!params.ok()) return ErrorResponse(params.status());
    auto query = ReadInputItemsQuery(*params);
    if (!query.ok()) return ErrorResponse(query.status());
    return WithStore(
        [this, tenant = (*tenant)->id(), id = http.path_params["id"], query = *query] {
          auto stored = Stored(tenant, id);
          if (!stored.ok()) return ErrorResponse(stored.status());
          auto page = InputItemsPage(*stored, id, query);
          if (!page.ok()) return ErrorResponse(page.status());
          return HttpResponse{.status = 200, .body = DumpOrdered(*page)};
        });
  }

  HandlerResult Delete(HttpRequest& http) {
    auto tenant = AuthenticateRequest(context_, http);
    if (!tenant.ok()) return ErrorResponse(tenant.status());
    return WithStore([this, tenant = (*tenant)->id(), id = http.path_params["id"]] {
      const absl::Status deleted = context_.responses == nullptr
                                       ? Stored(tenant, id).status()
                                       : context_.responses->Delete(tenant, id);
      if (!deleted.ok()) return ErrorResponse(deleted);
      return HttpResponse{
          .status = 200,
          .body = DumpOrdered({{"id", id}, {"object", "response"}, {"deleted", true}})};
    });
  }

 private:
  // The response of `request`: its conversation (the stored one it continues first), then the
  // completion, whose reply answers.
  HandlerResult Start(std::shared_ptr<Tenant> tenant, ResponsesRequest request,
                      const std::string& method, const std::string& path, absl::Time start) {
    const std::string tenant_id = tenant->id();
    auto conversation = Conversation(tenant_id, request);
    if (!conversation.ok()) {
      return Refuse(method, path, tenant_id, conversation.status(), start, std::nullopt);
    }
    CompletionRequest completion = request.completion;
    completion.messages = ConversationMessages(request.instructions, *conversation);
    ResponseStore* store = request.store ? context_.responses : nullptr;
    ResponseContext response{.id = RandomId("resp_"),
                             .model = context_.model.name,
                             .tenant = tenant_id,
                             .request = std::move(request),
                             .conversation = *std::move(conversation),
                             .store = store,
                             .store_workers = workers_.get()};
    auto reply = std::make_unique<DeferredReply>();
    std::atomic<int32_t>* in_flight = &context_.replies_in_flight;
    in_flight->fetch_add(1);
    StartCompletion(
        context_, std::move(tenant), std::move(completion),
        [this, state = reply->state(), method, path, start, in_flight,
         response =
             std::make_shared<ResponseContext>(std::move(response))](CompletionStart started) {
          DeferredReply::Complete(
              *state, Reply(std::move(started), std::move(*response), method, path, start));
          in_flight->fetch_sub(1);
        });
    return reply;
  }

  // Runs `handle`, which reads or writes the store: on the workers when the store waits on the
  // network (the shared tier), so that no HTTP thread does; here otherwise. A posted reply
  // counts as in flight until `handle` has answered, so a drain waits for its round trip and
  // for the completion it starts (which counts itself before this count ends).
  template <typename Handle>
  HandlerResult WithStore(Handle handle) {
    if (workers_ == nullptr) return handle();
    auto reply = std::make_unique<DeferredReply>();
    std::atomic<int32_t>* in_flight = &context_.replies_in_flight;
    in_flight->fetch_add(1);
    const bool posted =
        workers_->Post([state = reply->state(), handle = std::move(handle), in_flight]() mutable {
          DeferredReply::Complete(*state, handle());
          in_flight->fetch_sub(1);
        });
    if (!posted) {
      in_flight->fetch_sub(1);
      return ErrorResponse(absl::UnavailableError("the server is shutting down"));
    }
    return reply;
  }

  absl::StatusOr<StoredResponse> Stored(const std::string& tenant, const std::string& id) const {
    if (context_.responses == nullptr) {
      return WithErrorCode(
          absl::NotFoundError(absl::StrCat("no response with id '", id,
                                           "': this server stores none (responses.store)")),
          "response_not_found");
    }
    return context_.responses->Get(tenant, id);
  }

  // The input items after those of the response the request continues.
  absl::StatusOr<JsonValue> Conversation(const std::string& tenant,
                                         const ResponsesRequest& request) const {
    if (!request.previous_response_id) return request.input_items;
    auto previous = Stored(tenant, *request.previous_response_id);
    if (!previous.ok()) return WithParam(previous.status(), "previous_response_id");
    auto items = NormalizeItems(previous->conversation, "previous_response_id");
    if (!items.ok()) {
      return absl::InternalError(absl::StrCat("the stored response '",
                                              *request.previous_response_id,
                                              "' does not read back: ", items.status().message()));
    }
    for (const JsonValue& item : request.input_items) items->push_back(item);
    return items;
  }

  HandlerResult Reply(CompletionStart&& started, ResponseContext response,
                      const std::string& method, const std::string& path, absl::Time start) {
    if (auto* refusal = std::get_if<CompletionRefusal>(&started)) {
      return Refuse(method, path, response.tenant, refusal->status, start, refusal->rejection);
    }
    StartedCompletion& completion = std::get<StartedCompletion>(started);
    const std::string tenant = response.tenant;
    return std::make_unique<ResponsesReply>(
        std::move(response), std::move(completion.params), std::move(completion.handles),
        std::move(completion.permit), ReplyRecorder(context_, path, tenant, start));
  }

  HttpResponse Refuse(const HttpRequest& http, const std::string& tenant,
                      const absl::Status& status, absl::Time start,
                      std::optional<RejectionReason> rejection = std::nullopt) const {
    return Refuse(http.method, http.path, tenant, status, start, rejection);
  }
  HttpResponse Refuse(const std::string& method, const std::string& path, const std::string& tenant,
                      const absl::Status& status, absl::Time start,
                      std::optional<RejectionReason> rejection) const {
    HttpResponse response = ErrorResponse(status);
    RecordRefusal(context_, method, path, tenant, status, response.status, start, rejection);
    return response;
  }

  ServingContext& context_;
  // For the shared tier's round trips; null unless the store is remote.
  const std::unique_ptr<documents::RequestWorkers> workers_ =
      context_.responses != nullptr && context_.responses->remote()
          ? std::make_unique<documents::RequestWorkers>(kStoreWorkers)
          : nullptr;
};

}  // namespace

void AddResponsesRoutes(Router& router, ServingContext& context) {
  auto api = std::make_shared<ResponsesApi>(context);
  router.Add("POST", "/v1/responses", [api](HttpRequest& r) { return api->Create(r); });
  router.Add("GET", "/v1/responses/{id}", [api](HttpRequest& r) { return api->Get(r); });
  router.Add("GET", "/v1/responses/{id}/input_items",
             [api](HttpRequest& r) { return api->InputItems(r); });
  router.Add("DELETE", "/v1/responses/{id}", [api](HttpRequest& r) { return api->Delete(r); });
}

}  // namespace kvd::server::responses
