// What the API handlers share: the served model, the scheduler, the tenants, the metrics and
// the server's lifecycle flags. Built by `kvd serve`; handlers borrow it.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "scheduler/scheduler.h"
#include "server/auth/tenants.h"
#include "server/core/completion_params.h"
#include "server/core/constraint_compiler.h"
#include "structured/tool_call_syntax.h"

namespace kvd::documents {
class DocumentService;
}  // namespace kvd::documents
namespace kvd::server::responses {
class ResponseStore;
}  // namespace kvd::server::responses

namespace kvd::server {

class MetricsExporter;

struct ServingContext {
  engine::ServedModel model;
  scheduler::Scheduler* scheduler = nullptr;  // null where only the tokenizer routes run
  const TenantDirectory* tenants = nullptr;
  MetricsExporter* metrics = nullptr;               // null when metrics are off
  documents::DocumentService* documents = nullptr;  // null when documents are off
  responses::ResponseStore* responses = nullptr;    // null when responses.store is off
  // Compiles structured-output constraints over the model's vocabulary; null: refused.
  ConstraintCompiler* constraints = nullptr;
  // How the model writes tool calls (model.tool_parser, resolved); empty: `tools` is refused.
  std::optional<structured::ToolCallSyntax> tool_call_syntax;
  bool log_requests = true;
  // GET /health answers 503 once the scheduler thread has had work this long without completing
  // a step (server.health_step_timeout_seconds); zero: never.
  absl::Duration health_step_timeout = absl::ZeroDuration();
  std::string kv_cache_medium = "CPU";  // where KV blocks live, as KV events name it: CPU or GPU
  std::atomic<bool> ready = false;      // the model is loaded and the scheduler runs
  std::atomic<bool> draining = false;   // shutting down: no new requests
  std::atomic<int32_t> replies_in_flight = 0;  // completions starting or replying

  // The longest sequence (prompt plus max_tokens) a request may ask for: the model's context,
  // or less where the KV cache holds fewer tokens of one sequence (a request with a KV budget
  // or a document may go past the cache's limit, not the context's).
  int32_t max_model_len() const {
    const int32_t context = model.config->max_position_embeddings;
    return scheduler == nullptr ? context : std::min(context, scheduler->max_sequence_tokens());
  }
};

}  // namespace kvd::server
