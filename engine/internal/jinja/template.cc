// Template parsing and the per-render setup: built-ins, variables, limits.
#include "engine/internal/jinja/template.h"

#include "base/status_macros.h"
#include "engine/internal/jinja/builtins.h"
#include "engine/internal/jinja/parser.h"
#include "engine/internal/jinja/renderer.h"

namespace kvd::engine::internal::jinja {

absl::StatusOr<std::unique_ptr<Template>> Template::Parse(std::string_view source) {
  KVD_ASSIGN_OR_RETURN(StmtList body, ParseTemplate(source));
  return std::unique_ptr<Template>(new Template(std::move(body)));
}

absl::StatusOr<std::string> Template::Render(const ValueDict& variables,
                                             const RenderLimits& limits) const {
  Renderer renderer(limits);
  auto globals = std::make_shared<Scope>(nullptr);
  AddBuiltins(renderer, *globals);
  for (const auto& [name, value] : variables.entries()) {
    if (name.is_string()) globals->Set(name.string_value(), value);
  }
  return renderer.Run(body_, std::move(globals));
}

}  // namespace kvd::engine::internal::jinja
