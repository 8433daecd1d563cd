#include "server/anthropic/messages_routes.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/time/clock.h"
#include "server/anthropic/anthropic_error.h"
#include "server/anthropic/messages_reply.h"
#include "server/anthropic/messages_request.h"
#include "server/core/completion_start.h"
#include "server/core/deferred_reply.h"
#include "server/core/request_auth.h"
#include "server/core/request_log.h"
#include "server/openai/openai_json.h"

namespace kvd::server::anthropic {
namespace {

class MessagesApi {
 public:
  explicit MessagesApi(ServingContext& context) : context_(context) {}

  HandlerResult Create(HttpRequest& request) {
    const absl::Time start = absl::Now();
    auto tenant = AuthenticateRequest(context_, request, KeyHeaders::kBearerOrXApiKey);
    if (!tenant.ok()) {
      return Refuse(request, "-", tenant.status(), start, RejectionFor(tenant.status()));
    }
    auto read = ReadMessagesRequest(request.body, MessagesEndpoint::kCreate);
    if (!read.ok()) return Refuse(request, (*tenant)->id(), read.status(), start);
    auto reply = std::make_unique<DeferredReply>();
    std::atomic<int32_t>* in_flight = &context_.replies_in_flight;
    in_flight->fetch_add(1);
    StartCompletion(context_, *tenant, *std::move(read),
                    [this, state = reply->state(), request_line = RequestLine(request),
                     tenant_id = (*tenant)->id(), start, in_flight](CompletionStart started) {
                      DeferredReply::Complete(
                          *state, Reply(std::move(started), request_line, tenant_id, start));
                      in_flight->fetch_sub(1);
                    });
    return reply;
  }

  HandlerResult CountTokens(HttpRequest& request) {
    const absl::Time start = absl::Now();
    auto tenant = AuthenticateRequest(context_, request, KeyHeaders::kBearerOrXApiKey);
    if (!tenant.ok()) {
      return Refuse(request, "-", tenant.status(), start, RejectionFor(tenant.status()));
    }
    auto read = ReadMessagesRequest(request.body, MessagesEndpoint::kCountTokens);
    if (!read.ok()) return Refuse(request, (*tenant)->id(), read.status(), start);
    // The prompt is the same whichever call the choice would force: no constraint to compile.
    read->tool_choice.reset();
    auto params = ResolveCompletionParams(*read, context_.model, nullptr, nullptr, nullptr,
                                          context_.tool_call_syntax);
    if (!params.ok()) return Refuse(request, (*tenant)->id(), params.status(), start);
    return HttpResponse{.status = 200,
                        .body = Dump({{"input_tokens", params->prompts.front().size()}})};
  }

 private:
  struct Line {
    std::string method;
    std::string path;
  };
  static Line RequestLine(const HttpRequest& request) { return {request.method, request.path}; }

  HandlerResult Reply(CompletionStart&& started, const Line& line, const std::string& tenant_id,
                      absl::Time start) {
    if (auto* refusal = std::get_if<CompletionRefusal>(&started)) {
      return Refuse(line, tenant_id, refusal->status, start, refusal->rejection);
    }
    StartedCompletion& completion = std::get<StartedCompletion>(started);
    return std::make_unique<MessagesReply>(
        std::move(completion.params), std::move(completion.handles), context_.model.name,
        std::move(completion.permit), ReplyRecorder(context_, line.path, tenant_id, start));
  }

  HttpResponse Refuse(const HttpRequest& request, const std::string& tenant,
                      const absl::Status& status, absl::Time start,
                      std::optional<RejectionReason> rejection = std::nullopt) const {
    return Refuse(RequestLine(request), tenant, status, start, rejection);
  }
  HttpResponse Refuse(const Line& line, const std::string& tenant, const absl::Status& status,
                      absl::Time start, std::optional<RejectionReason> rejection) const {
    HttpResponse response = ErrorResponse(status);
    RecordRefusal(context_, line.method, line.path, tenant, status, response.status, start,
                  rejection);
    return response;
  }

  ServingContext& context_;
};

}  // namespace

void AddMessagesRoutes(Router& router, ServingContext& context) {
  auto api = std::make_shared<MessagesApi>(context);
  router.Add("POST", "/v1/messages", [api](HttpRequest& r) { return api->Create(r); });
  router.Add("POST", "/v1/messages/count_tokens",
             [api](HttpRequest& r) { return api->CountTokens(r); });
}

}  // namespace kvd::server::anthropic
