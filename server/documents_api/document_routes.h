// The documents API: POST /v1/documents (upload and compress), GET /v1/documents (the
// tenant's, by page), GET and DELETE /v1/documents/{id}, POST /v1/documents/{id}/recut.
#pragma once

#include "server/core/serving_context.h"
#include "server/http/router.h"

namespace kvd::server {

// Adds the routes when `context.documents` is set; `context` must outlive the router.
void AddDocumentRoutes(Router& router, ServingContext& context);

}  // namespace kvd::server
