#include "server/core/completion_start.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "documents/document_service.h"
#include "server/core/completion_rules.h"
#include "server/http/error_response.h"

namespace kvd::server {

namespace {

// Whether `documents` may name a stored document here: InvalidArgument (param "documents") for
// more than one or when documents are off.
absl::Status CheckRequestDocuments(const ServingContext& context,
                                   const std::vector<std::string>& documents) {
  auto invalid = [](std::string message) {
    return WithParam(absl::InvalidArgumentError(std::move(message)), "documents");
  };
  if (context.documents == nullptr) {
    return invalid("documents are not enabled on this server (documents.enabled)");
  }
  if (documents.size() > 1) return invalid(DocumentsRule());
  return absl::OkStatus();
}

absl::StatusOr<DocumentContext> DocumentContextOf(
    const ServingContext& context, absl::StatusOr<documents::ResolvedDocument> resolved) {
  if (!resolved.ok()) {
    absl::Status status = WithParam(resolved.status(), "documents");
    return absl::IsNotFound(status) ? WithErrorCode(status, "document_not_found") : status;
  }
  const cache_store::DocumentFraming& framing = context.documents->framing();
  return DocumentContext{std::move(resolved->prefix), std::move(resolved->text), framing.kind,
                         framing.role};
}

bool MaxTokensGiven(const CompletionRequest& request) {
  return request.max_tokens || (request.kind == ApiKind::kChat && request.max_completion_tokens);
}

int64_t LongestPrompt(const CompletionParams& params) {
  size_t longest = 0;
  for (const auto& prompt : params.prompts) longest = std::max(longest, prompt.size());
  return static_cast<int64_t>(longest);
}

// Whether a sequence keeps every token it computes (no KV budget, no document), and so must fit
// the KV cache's longest sequence (ServingContext::max_model_len).
bool KeepsEveryToken(const CompletionParams& params, bool has_document) {
  return !params.request.keepkv && !has_document;
}

// A request that gives no max_tokens (for chat, the rest of the context) and keeps every token
// gets at most what the longest sequence leaves after its longest prompt.
void FitDefaultMaxTokensToTheCache(const ServingContext& context, bool has_document,
                                   CompletionParams& params) {
  scheduler::Request& request = params.request;
  if (!KeepsEveryToken(params, has_document)) return;
  const int64_t room = int64_t{context.max_model_len()} - LongestPrompt(params);
  if (room < std::max(1, request.min_tokens)) return;  // CheckFitsTheCache refuses it
  request.max_tokens = static_cast<int32_t>(std::min<int64_t>(request.max_tokens, room));
}

// A request that keeps every token, past the longest sequence, is refused as one past the
// model's context is (same code and param), before it takes anything from its tenant.
absl::Status CheckFitsTheCache(const ServingContext& context, bool has_document, ApiKind kind,
                               const CompletionParams& params) {
  const int64_t longest = LongestPrompt(params);
  const int64_t requested = longest + params.request.max_tokens;
  if (!KeepsEveryToken(params, has_document) || requested <= context.max_model_len()) {
    return absl::OkStatus();
  }
  const bool chat = kind == ApiKind::kChat;
  return WithErrorCode(
      WithParam(absl::InvalidArgumentError(absl::StrCat(
                    "this server's longest sequence is ", context.max_model_len(),
                    " tokens (what its KV cache holds of one); you requested ", requested,
                    " tokens (", longest, " in the ", chat ? "messages" : "prompt", ", ",
                    params.request.max_tokens, " in the completion)")),
                chat ? "messages" : "prompt"),
      "context_length_exceeded");
}

// A request that gives no max_tokens is charged its default (for chat, the rest of the context)
// up front: within a tenant's tokens_per_minute, the default is what the minute leaves after the
// prompts, so that a tenant whose minute holds less than the context can still chat.
void FitDefaultMaxTokensToTheMinute(int64_t tokens_per_minute, CompletionParams& params) {
  if (tokens_per_minute <= 0) return;
  scheduler::Request& request = params.request;
  int64_t prompt_tokens = 0;
  for (const auto& prompt : params.prompts) prompt_tokens += std::ssize(prompt);
  const int64_t completions = std::ssize(params.prompts) * int64_t{request.n};
  const int64_t room = (tokens_per_minute - prompt_tokens) / completions;
  // Too little room even for min_tokens: the charge stays, and Admit says no retry can pass.
  if (room < std::max(1, request.min_tokens)) return;
  request.max_tokens = static_cast<int32_t>(std::min<int64_t>(request.max_tokens, room));
}

// `n` within what the scheduler runs of one request at once.
absl::Status CheckChoices(std::optional<int64_t> n, const ServingContext& context) {
  const scheduler::SchedulerConfig& config = context.scheduler->config();
  const int64_t most = std::min(config.max_n, config.max_num_seqs);
  if (!n || (*n >= 1 && *n <= most)) return absl::OkStatus();
  return WithParam(
      absl::InvalidArgumentError(absl::StrCat("'n' must be in [1, ", most, "], got ", *n)), "n");
}

// Each prompt waits in the queue as a request of its own: more prompts than the queue (or the
// tenant's share of it) holds could never all be queued, whatever the load.
absl::Status CheckPromptsFitTheQueue(size_t prompts, const ServingContext& context,
                                     Tenant& tenant) {
  int64_t most = context.scheduler->config().max_queued_requests;
  const int32_t tenant_limit = tenant.policy().max_queued_requests;
  if (tenant_limit > 0) most = std::min<int64_t>(most, tenant_limit);
  if (static_cast<int64_t>(prompts) <= most) return absl::OkStatus();
  return WithParam(absl::InvalidArgumentError(absl::StrCat(
                       prompts, " prompts in one request; at most ", most, " can wait at once")),
                   "prompt");
}

// What admission needs of the request beside its resolved parameters.
struct AdmissionFacts {
  bool max_tokens_given = false;
  ApiKind kind = ApiKind::kCompletion;
  bool has_document = false;
};

CompletionStart AdmitAndSubmit(ServingContext& context, Tenant& tenant, const AdmissionFacts& facts,
                               CompletionParams params);

// Resolves `request` (continuing `document`, when not null), compiles its constraint on the
// constraint compiler's threads and admits it; `done` runs where the last of these ran.
void ResolveAndAdmit(ServingContext& context, std::shared_ptr<Tenant> tenant,
                     const CompletionRequest& request, const DocumentContext* document,
                     std::function<void(CompletionStart)> done) {
  if (absl::Status n = CheckChoices(request.n, context); !n.ok()) {
    done(CompletionRefusal{n});
    return;
  }
  const KeepKvConfig keepkv = tenant->keepkv();
  absl::StatusOr<CompletionParams> params =
      ResolveCompletionRequest(request, context.model, document, &keepkv,
                               context.constraints != nullptr, context.tool_call_syntax);
  if (!params.ok()) {
    done(CompletionRefusal{params.status()});
    return;
  }
  const AdmissionFacts facts{.max_tokens_given = MaxTokensGiven(request),
                             .kind = request.kind,
                             .has_document = document != nullptr};
  if (!params->pending_constraint) {
    done(AdmitAndSubmit(context, *tenant, facts, *std::move(params)));
    return;
  }
  const PendingConstraint pending = *std::exchange(params->pending_constraint, std::nullopt);
  context.constraints->Compile(
      tenant->id(), pending.spec,
      [&context, tenant, facts, params = *std::move(params), param = pending.param,
       done = std::move(done)](
          absl::StatusOr<std::shared_ptr<const structured::Constraint>> compiled) mutable {
        if (!compiled.ok()) {
          const absl::Status refusal = ConstraintError(compiled.status(), param);
          done(CompletionRefusal{refusal, RejectionFor(refusal)});
          return;
        }
        params.request.constraint = *std::move(compiled);
        done(AdmitAndSubmit(context, *tenant, facts, std::move(params)));
      });
}

}  // namespace

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

void StartCompletion(ServingContext& context, std::shared_ptr<Tenant> tenant,
                     CompletionRequest request, std::function<void(CompletionStart)> done) {
  if (request.documents.empty()) {
    ResolveAndAdmit(context, std::move(tenant), request, nullptr, std::move(done));
    return;
  }
  if (auto status = CheckRequestDocuments(context, request.documents); !status.ok()) {
    done(CompletionRefusal{status});
    return;
  }
  const std::string id = request.documents[0];
  context.documents->Resolve(
      tenant->id(), id,
      [&context, tenant, request = std::move(request),
       done = std::move(done)](absl::StatusOr<documents::ResolvedDocument> resolved) {
        absl::StatusOr<DocumentContext> document = DocumentContextOf(context, std::move(resolved));
        if (!document.ok()) {
          done(CompletionRefusal{document.status()});
          return;
        }
        ResolveAndAdmit(context, tenant, request, &*document, done);
      });
}

namespace {

CompletionStart AdmitAndSubmit(ServingContext& context, Tenant& tenant, const AdmissionFacts& facts,
                               CompletionParams params) {
  if (absl::Status fits = CheckPromptsFitTheQueue(params.prompts.size(), context, tenant);
      !fits.ok()) {
    return CompletionRefusal{std::move(fits)};
  }

  if (!facts.max_tokens_given) {
    FitDefaultMaxTokensToTheCache(context, facts.has_document, params);
    FitDefaultMaxTokensToTheMinute(tenant.tokens_per_minute(), params);
  }
  if (absl::Status fits = CheckFitsTheCache(context, facts.has_document, facts.kind, params);
      !fits.ok()) {
    return CompletionRefusal{std::move(fits)};
  }
  int64_t tokens = 0;
  for (const auto& prompt : params.prompts) {
    tokens +=
        static_cast<int64_t>(prompt.size()) + int64_t{params.request.max_tokens} * params.request.n;
  }
  Refusal refusal;
  auto permit = tenant.Admit(tokens, refusal);
  if (!permit.ok()) {
    const RejectionReason reason = refusal == Refusal::kConcurrency ? RejectionReason::kConcurrency
                                   : refusal == Refusal::kTokenRate ? RejectionReason::kTokenLimit
                                                                    : RejectionReason::kRateLimit;
    return CompletionRefusal{permit.status(), reason};
  }

  params.request.tenant = tenant.policy();
  params.request.priority += tenant.priority();
  std::vector<scheduler::RequestHandle> handles;
  for (const auto& prompt : params.prompts) {
    scheduler::Request submitted = params.request;
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
  return StartedCompletion{std::move(params), std::move(handles), *std::move(permit)};
}

}  // namespace

}  // namespace kvd::server
