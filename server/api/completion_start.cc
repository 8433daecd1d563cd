#include "server/api/completion_start.h"

#include <utility>

#include "documents/document_service.h"
#include "server/api/completion_rules.h"
#include "server/http/error_response.h"

namespace kvd::server {

absl::StatusOr<std::optional<DocumentContext>> ResolveRequestDocument(
    const ServingContext& context, const std::vector<std::string>& documents,
    const std::string& tenant) {
  if (documents.empty()) return std::nullopt;
  auto invalid = [](std::string message) {
    return WithParam(absl::InvalidArgumentError(std::move(message)), "documents");
  };
  if (context.documents == nullptr) {
    return invalid("documents are not enabled on this server (documents.enabled)");
  }
  if (documents.size() > 1) return invalid(DocumentsRule());
  auto resolved = context.documents->Resolve(tenant, documents[0]);
  if (!resolved.ok()) {
    absl::Status status = WithParam(resolved.status(), "documents");
    return absl::IsNotFound(status) ? WithErrorCode(status, "document_not_found") : status;
  }
  return DocumentContext{std::move(resolved->prefix), std::move(resolved->text),
                         context.documents->role()};
}

std::optional<RejectionReason> RejectionFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnauthenticated:
      return RejectionReason::kUnauthenticated;
    case absl::StatusCode::kResourceExhausted:
      return RejectionReason::kQueueFull;
    case absl::StatusCode::kUnavailable:
      return RejectionReason::kOverloaded;
    default:
      return std::nullopt;
  }
}

std::variant<StartedCompletion, CompletionRefusal> StartCompletion(
    ServingContext& context, Tenant& tenant, const CompletionRequest& request) {
  auto document = ResolveRequestDocument(context, request.documents, tenant.id());
  if (!document.ok()) return CompletionRefusal{document.status()};
  const KeepKvConfig keepkv = tenant.keepkv();
  auto params = ResolveCompletionParams(request, context.model,
                                        document->has_value() ? &**document : nullptr, &keepkv);
  if (!params.ok()) return CompletionRefusal{params.status()};

  int64_t tokens = 0;
  for (const auto& prompt : params->prompts) {
    tokens += static_cast<int64_t>(prompt.size()) +
              int64_t{params->request.max_tokens} * params->request.n;
  }
  Refusal refusal;
  auto permit = tenant.Admit(tokens, refusal);
  if (!permit.ok()) {
    const RejectionReason reason = refusal == Refusal::kConcurrency ? RejectionReason::kConcurrency
                                   : refusal == Refusal::kTokenRate ? RejectionReason::kTokenLimit
                                                                    : RejectionReason::kRateLimit;
    return CompletionRefusal{permit.status(), reason};
  }

  params->request.tenant = tenant.policy();
  params->request.priority += tenant.priority();
  std::vector<scheduler::RequestHandle> handles;
  for (const auto& prompt : params->prompts) {
    scheduler::Request submitted = params->request;
    submitted.prompt = prompt;
    auto handle = context.scheduler->Submit(std::move(submitted));
    if (!handle.ok()) {
      (*permit)->Settle(0);
      absl::Status status = handle.status();
      if (status.code() == absl::StatusCode::kResourceExhausted ||
          status.code() == absl::StatusCode::kUnavailable) {
        status = WithRetryAfter(std::move(status), 1);
      }
      // Submitted prompts are cancelled as `handles` goes.
      return CompletionRefusal{status, RejectionFor(status)};
    }
    handles.push_back(*std::move(handle));
  }
  return StartedCompletion{*std::move(params), std::move(handles), *std::move(permit)};
}

}  // namespace kvd::server
