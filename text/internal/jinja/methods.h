// Methods of str, dict and list that chat templates call (`text.strip()`, `d.items()`), as
// Python defines them. Mutating methods are absent, as in jinja2's immutable sandbox.
#pragma once

#include <optional>
#include <string_view>

#include "text/internal/jinja/value.h"

namespace kvd::text::internal::jinja {

// `self.name` as a callable bound to `self`, or nullopt when the type has no such method.
std::optional<Value> BindMethod(const Value& self, std::string_view name);

}  // namespace kvd::text::internal::jinja
