// The HTTP API: OpenAI's /v1/completions, /v1/chat/completions and /v1/models, vLLM's
// /tokenize and /detokenize, and the operational /health, /ready, /version and /metrics.
#pragma once

#include "server/core/serving_context.h"
#include "server/http/router.h"

namespace kvd::server {

// `context` is borrowed and must outlive the router.
void AddApiRoutes(Router& router, ServingContext& context);

// GET /health: 200 while the process serves; 503 `scheduler_stalled` once the scheduler thread
// has had work for longer than context.health_step_timeout without completing a step.
HttpResponse HealthResponse(const ServingContext& context);

}  // namespace kvd::server
