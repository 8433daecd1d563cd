// The global functions a chat template can call: range, namespace, dict, and the
// raise_exception and strftime_now helpers Hugging Face adds.
#pragma once

#include "text/internal/jinja/renderer.h"
#include "text/internal/jinja/scope.h"

namespace kvd::text::internal::jinja {

// Binds the built-ins in `scope`; they use `renderer` (which must outlive the render) for
// limits and namespace bookkeeping.
void AddBuiltins(Renderer& renderer, Scope& scope);

}  // namespace kvd::text::internal::jinja
