// Anthropic's Messages API on kvd's request core: POST /v1/messages (whole or streamed) and
// POST /v1/messages/count_tokens, keys as `x-api-key` or `Authorization: Bearer`, errors in
// Anthropic's shape. A request is read by messages_request.h and then accepted, refused, charged
// and started exactly as a chat completion (server/core/completion_start.h).
#pragma once

#include "server/core/serving_context.h"
#include "server/http/router.h"

namespace kvd::server::anthropic {

void AddMessagesRoutes(Router& router, ServingContext& context);

}  // namespace kvd::server::anthropic
