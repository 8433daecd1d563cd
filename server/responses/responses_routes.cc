#include "server/responses/responses_routes.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "base/status_details.h"
#include "server/api/completion_start.h"
#include "server/api/deferred_reply.h"
#include "server/api/openai_json.h"
#include "server/api/request_auth.h"
#include "server/api/request_log.h"
#include "server/http/error_response.h"
#include "server/http/query_string.h"
#include "server/responses/input_items.h"
#include "server/responses/response_store.h"
#include "server/responses/responses_reply.h"
#include "server/responses/responses_request.h"

namespace kvd::server::responses {
namespace {

using structured::JsonValue;

class ResponsesApi {
 public:
  explicit ResponsesApi(ServingContext& context) : context_(context) {}

  HandlerResult Create(HttpRequest& http) {
    const absl::Time start = absl::Now();
    auto tenant = AuthenticateRequest(context_, http);
    if (!tenant.ok())
      return Refuse(http, "-", tenant.status(), start, RejectionFor(tenant.status()));
    const std::string tenant_id = (*tenant)->id();
    auto request = ReadResponsesRequest(http.body);
    if (!request.ok()) return Refuse(http, tenant_id, request.status(), start);
    auto conversation = Conversation(tenant_id, *request);
    if (!conversation.ok()) return Refuse(http, tenant_id, conversation.status(), start);
    CompletionRequest completion = request->completion;
    completion.messages = ConversationMessages(request->instructions, *conversation);
    ResponseStore* store = request->store ? context_.responses : nullptr;
    ResponseContext response{.id = RandomId("resp_"),
                             .model = context_.model.name,
                             .tenant = tenant_id,
                             .request = *std::move(request),
                             .conversation = *std::move(conversation),
                             .store = store};
    auto reply = std::make_unique<DeferredReply>();
    std::atomic<int32_t>* in_flight = &context_.replies_in_flight;
    in_flight->fetch_add(1);
    StartCompletion(
        context_, *tenant, std::move(completion),
        [this, state = reply->state(), method = http.method, path = http.path, start, in_flight,
         response =
             std::make_shared<ResponseContext>(std::move(response))](CompletionStart started) {
          DeferredReply::Complete(
              *state, Reply(std::move(started), std::move(*response), method, path, start));
          in_flight->fetch_sub(1);
        });
    return reply;
  }

  HandlerResult Get(HttpRequest& http) {
    auto tenant = AuthenticateRequest(context_, http);
    if (!tenant.ok()) return ErrorResponse(tenant.status());
    auto stored = Stored((*tenant)->id(), http.path_params["id"]);
    if (!stored.ok()) return ErrorResponse(stored.status());
    return HttpResponse{.status = 200, .body = DumpOrdered(stored->response)};
  }

  HandlerResult InputItems(HttpRequest& http) {
    auto tenant = AuthenticateRequest(context_, http);
    if (!tenant.ok()) return ErrorResponse(tenant.status());
    auto params = ParseQueryString(http.query);
    if (!params.ok()) return ErrorResponse(params.status());
    auto query = ReadInputItemsQuery(*params);
    if (!query.ok()) return ErrorResponse(query.status());
    const std::string& id = http.path_params["id"];
    auto stored = Stored((*tenant)->id(), id);
    if (!stored.ok()) return ErrorResponse(stored.status());
    auto page = InputItemsPage(*stored, id, *query);
    if (!page.ok()) return ErrorResponse(page.status());
    return HttpResponse{.status = 200, .body = DumpOrdered(*page)};
  }

  HandlerResult Delete(HttpRequest& http) {
    auto tenant = AuthenticateRequest(context_, http);
    if (!tenant.ok()) return ErrorResponse(tenant.status());
    const std::string& id = http.path_params["id"];
    const absl::Status deleted = context_.responses == nullptr
                                     ? Stored((*tenant)->id(), id).status()
                                     : context_.responses->Delete((*tenant)->id(), id);
    if (!deleted.ok()) return ErrorResponse(deleted);
    return HttpResponse{
        .status = 200,
        .body = DumpOrdered({{"id", id}, {"object", "response"}, {"deleted", true}})};
  }

 private:
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
