#include "server/openai/openai_routes.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "server/core/completion_start.h"
#include "server/core/deferred_reply.h"
#include "server/core/request_auth.h"
#include "server/core/request_log.h"
#include "server/http/error_response.h"
#include "server/kv_events/kv_events_reply.h"
#include "server/metrics/metrics_exporter.h"
#include "server/openai/completion_reply.h"
#include "server/openai/completion_request_json.h"
#include "server/openai/openai_json.h"
#include "server/version.h"

namespace kvd::server {
namespace {

using json = nlohmann::json;

HttpResponse JsonResponse(const json& body, int status = 200) {
  return HttpResponse{.status = status, .body = Dump(body)};
}

// A body read in its key order, once: what a generation request's reader takes.
absl::StatusOr<structured::JsonValue> ParseOrderedBody(const HttpRequest& request) {
  return ParseJsonObjectBody<structured::JsonValue>(request.body);
}

class Api {
 public:
  explicit Api(ServingContext& context) : context_(context) {}

  absl::StatusOr<std::shared_ptr<Tenant>> Authenticate(const HttpRequest& request) const {
    return AuthenticateRequest(context_, request);
  }

  HandlerResult Completions(HttpRequest& request, ApiKind kind) {
    const absl::Time start = absl::Now();
    auto tenant = Authenticate(request);
    if (!tenant.ok()) {
      return Refuse(request.method, request.path, "-", tenant.status(), start,
                    RejectionFor(tenant.status()));
    }
    auto body = ParseOrderedBody(request);
    if (!body.ok()) {
      return Refuse(request.method, request.path, (*tenant)->id(), body.status(), start);
    }
    auto completion_request = ReadCompletionRequestJson(*body, kind);
    if (!completion_request.ok()) {
      return Refuse(request.method, request.path, (*tenant)->id(), completion_request.status(),
                    start);
    }
    // A named document is read, and a constraint compiled, off this I/O thread; the reply
    // follows once they are (at once when the request has neither, or a kept constraint).
    auto reply = std::make_unique<DeferredReply>();
    // A drain waits for the start too; a started reply counts itself before this lets go.
    std::atomic<int32_t>* in_flight = &context_.replies_in_flight;
    in_flight->fetch_add(1);
    StartCompletion(context_, *tenant, *std::move(completion_request),
                    [this, state = reply->state(), method = request.method, path = request.path,
                     tenant_id = (*tenant)->id(), start, in_flight](CompletionStart started) {
                      DeferredReply::Complete(
                          *state, Reply(std::move(started), method, path, tenant_id, start));
                      in_flight->fetch_sub(1);
                    });
    return reply;
  }

  // The reply of a started completion, or the refusal of one that did not start.
  HandlerResult Reply(CompletionStart&& started, const std::string& method, const std::string& path,
                      const std::string& tenant_id, absl::Time start) {
    if (auto* refusal = std::get_if<CompletionRefusal>(&started)) {
      return Refuse(method, path, tenant_id, refusal->status, start, refusal->rejection);
    }
    StartedCompletion& completion = std::get<StartedCompletion>(started);
    return std::make_unique<CompletionReply>(
        std::move(completion.params), std::move(completion.handles), *context_.model.tokenizer,
        context_.model.name, std::move(completion.permit),
        ReplyRecorder(context_, path, tenant_id, start));
  }

  HandlerResult Models(HttpRequest& request) {
    auto tenant = Authenticate(request);
    if (!tenant.ok()) return ErrorResponse(tenant.status());
    return JsonResponse({{"object", "list"}, {"data", json::array({ModelJson()})}});
  }

  HandlerResult Model(HttpRequest& request) {
    auto tenant = Authenticate(request);
    if (!tenant.ok()) return ErrorResponse(tenant.status());
    if (request.path_params["id"] != context_.model.name) {
      return ErrorResponse(
          WithErrorCode(absl::NotFoundError(absl::StrCat("the model '", request.path_params["id"],
                                                         "' does not exist")),
                        "model_not_found"));
    }
    return JsonResponse(ModelJson());
  }

  HandlerResult Tokenize(HttpRequest& request) {
    auto tenant = Authenticate(request);
    if (!tenant.ok()) return ErrorResponse(tenant.status());
    auto body = ParseOrderedBody(request);
    if (!body.ok()) return ErrorResponse(body.status());
    if (absl::Status model = CheckModel(*body); !model.ok()) return ErrorResponse(model);
    std::vector<int32_t> tokens;
    if (body->contains("messages")) {
      structured::JsonValue chat = {{"model", context_.model.name},
                                    {"messages", (*body)["messages"]}};
      for (const char* key : {"add_generation_prompt", "tools", "chat_template_kwargs"}) {
        if (body->contains(key)) chat[key] = (*body)[key];
      }
      auto chat_request = ReadCompletionRequestJson(chat, ApiKind::kChat);
      if (!chat_request.ok()) return ErrorResponse(chat_request.status());
      auto params = ResolveCompletionParams(*chat_request, context_.model, nullptr, nullptr,
                                            nullptr, context_.tool_call_syntax);
      if (!params.ok()) return ErrorResponse(params.status());
      tokens = params->prompts.front();
    } else {
      const auto prompt = body->find("prompt");
      if (prompt == body->end() || !prompt->is_string()) {
        return ErrorResponse(
            WithParam(absl::InvalidArgumentError("'prompt' must be a string"), "prompt"));
      }
      const json add_special = body->value("add_special_tokens", json(true));
      if (!add_special.is_boolean()) {
        return ErrorResponse(
            WithParam(absl::InvalidArgumentError("'add_special_tokens' must be a boolean"),
                      "add_special_tokens"));
      }
      tokens =
          context_.model.tokenizer->Encode(prompt->get<std::string>(), add_special.get<bool>());
    }
    return JsonResponse({{"tokens", tokens},
                         {"count", tokens.size()},
                         {"max_model_len", context_.max_model_len()}});
  }

  HandlerResult Detokenize(HttpRequest& request) {
    auto tenant = Authenticate(request);
    if (!tenant.ok()) return ErrorResponse(tenant.status());
    auto body = ParseOrderedBody(request);
    if (!body.ok()) return ErrorResponse(body.status());
    if (absl::Status model = CheckModel(*body); !model.ok()) return ErrorResponse(model);
    const auto tokens = body->find("tokens");
    if (tokens == body->end() || !tokens->is_array()) {
      return ErrorResponse(WithParam(
          absl::InvalidArgumentError("'tokens' must be an array of token ids"), "tokens"));
    }
    std::vector<int32_t> ids;
    for (const structured::JsonValue& id : *tokens) {
      if (!id.is_number_integer()) {
        return ErrorResponse(
            WithParam(absl::InvalidArgumentError("'tokens' must hold integers"), "tokens"));
      }
      const int64_t value = id.get<int64_t>();
      if (value < 0 || value >= context_.model.tokenizer->vocab_size()) {
        return ErrorResponse(WithParam(absl::InvalidArgumentError(absl::StrCat(
                                           "token id ", value, " is outside the vocabulary")),
                                       "tokens"));
      }
      ids.push_back(static_cast<int32_t>(value));
    }
    auto text = context_.model.tokenizer->Decode(ids);
    if (!text.ok()) return ErrorResponse(WithParam(text.status(), "tokens"));
    return JsonResponse({{"prompt", *text}});
  }

  HandlerResult Ready() {
    if (context_.draining.load()) {
      return ErrorResponse(absl::UnavailableError("draining"));
    }
    if (!context_.ready.load()) return ErrorResponse(absl::UnavailableError("loading"));
    return JsonResponse({{"status", "ready"}});
  }

 private:
  // A `model` the body names must be the one served (the field itself is optional here).
  absl::Status CheckModel(const structured::JsonValue& body) const {
    const auto model = body.find("model");
    if (model == body.end()) return absl::OkStatus();
    if (!model->is_string()) {
      return WithParam(absl::InvalidArgumentError("'model' must be a string"), "model");
    }
    // Empty, as gRPC's unset field: no model named.
    const std::string name = model->get<std::string>();
    return name.empty() ? absl::OkStatus() : CheckModelName(name, context_.model);
  }

  json ModelJson() const {
    return {{"id", context_.model.name},
            {"object", "model"},
            {"created", 0},
            {"owned_by", "kvd"},
            {"max_model_len", context_.max_model_len()}};
  }

  HttpResponse Refuse(const std::string& method, const std::string& path, const std::string& tenant,
                      const absl::Status& status, absl::Time start,
                      std::optional<RejectionReason> rejection = std::nullopt) const {
    HttpResponse response = ErrorResponse(status);
    RecordRefusal(context_, method, path, tenant, status, response.status, start, rejection);
    return response;
  }

  ServingContext& context_;
};

}  // namespace

HttpResponse HealthResponse(const ServingContext& context) {
  if (context.scheduler == nullptr || context.health_step_timeout <= absl::ZeroDuration()) {
    return HttpResponse{.status = 200, .body = "{}"};
  }
  const absl::Duration stalled = context.scheduler->StalledFor();
  if (stalled <= context.health_step_timeout) return HttpResponse{.status = 200, .body = "{}"};
  const std::string message = absl::StrCat(
      "the scheduler has had work for ",
      absl::FormatDuration(absl::Trunc(stalled, absl::Seconds(1))), " without completing a step");
  return ErrorResponse(WithErrorCode(absl::UnavailableError(message), "scheduler_stalled"));
}

void AddApiRoutes(Router& router, ServingContext& context) {
  auto api = std::make_shared<Api>(context);
  router.Add("POST", "/v1/completions",
             [api](HttpRequest& r) { return api->Completions(r, ApiKind::kCompletion); });
  router.Add("POST", "/v1/chat/completions",
             [api](HttpRequest& r) { return api->Completions(r, ApiKind::kChat); });
  router.Add("GET", "/v1/models", [api](HttpRequest& r) { return api->Models(r); });
  router.Add("GET", "/v1/models/{id}", [api](HttpRequest& r) { return api->Model(r); });
  router.Add("POST", "/tokenize", [api](HttpRequest& r) { return api->Tokenize(r); });
  router.Add("POST", "/detokenize", [api](HttpRequest& r) { return api->Detokenize(r); });
  router.Add("GET", "/health",
             [&context](HttpRequest&) -> HandlerResult { return HealthResponse(context); });
  router.Add("GET", "/ready", [api](HttpRequest&) { return api->Ready(); });
  router.Add("GET", "/version", [](HttpRequest&) -> HandlerResult {
    return JsonResponse({{"version", kVersion}});
  });
  const scheduler::KvEventLog* log =
      context.scheduler != nullptr ? context.scheduler->kv_events() : nullptr;
  if (log != nullptr) {
    router.Add("GET", "/v1/kv_events", [log, &context](HttpRequest& r) -> HandlerResult {
      auto after = KvEventsAfter(r, *log);
      if (!after.ok()) return ErrorResponse(after.status());
      return std::make_unique<KvEventsReply>(*log, *after, context.kv_cache_medium,
                                             context.draining);
    });
  }
  if (context.metrics != nullptr) {
    MetricsExporter* metrics = context.metrics;
    router.Add("GET", "/metrics", [metrics](HttpRequest&) -> HandlerResult {
      return HttpResponse{.status = 200,
                          .content_type = std::string(MetricsExporter::kContentType),
                          .body = metrics->Render()};
    });
  }
}

}  // namespace kvd::server
