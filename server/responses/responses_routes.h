// OpenAI's Responses API on kvd's request core: POST /v1/responses (whole or streamed), and
// GET / DELETE /v1/responses/{id} for stored ones. A request's conversation is its input items
// after those of the response it continues (`previous_response_id`, the tenant's own, read
// from the store); it is then accepted, refused, charged and started exactly as a chat
// completion (server/core/completion_start.h). Errors are OpenAI's shape.
#pragma once

#include "server/core/serving_context.h"
#include "server/http/router.h"

namespace kvd::server::responses {

void AddResponsesRoutes(Router& router, ServingContext& context);

}  // namespace kvd::server::responses
