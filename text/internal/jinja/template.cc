// Template parsing and the per-render setup: built-ins, variables, limits.
#include "text/internal/jinja/template.h"

#include "base/status_macros.h"
#include "text/internal/jinja/builtins.h"
#include "text/internal/jinja/parser.h"
#include "text/internal/jinja/renderer.h"

namespace kvd::text::internal::jinja {

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

}  // namespace kvd::text::internal::jinja
