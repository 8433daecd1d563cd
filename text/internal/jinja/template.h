// A parsed Jinja template and its rendering entry point, independent of chat messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "text/internal/jinja/ast.h"
#include "text/internal/jinja/value.h"

namespace kvd::text::internal::jinja {

// Bounds that keep a hostile or broken template from hanging or exhausting memory. Exceeding
// one is InvalidArgument.
struct RenderLimits {
  // Loop iterations (and range() items) over the whole render.
  int64_t max_loop_iterations = 1'000'000;
  // Nested macro calls.
  int max_call_depth = 64;
  // Bytes of output, including text captured by macros and {% set %} blocks.
  size_t max_output_bytes = 32 << 20;
};

// Immutable after Parse; Render may run on many threads at once.
class Template {
 public:
  // InvalidArgument "line:column: message" for syntax errors and unknown filters or tests.
  static absl::StatusOr<std::unique_ptr<Template>> Parse(std::string_view source);

  // Renders with `variables` as the global names (besides the built-ins range, namespace,
  // dict, raise_exception and strftime_now, which variables of the same name override).
  absl::StatusOr<std::string> Render(const ValueDict& variables,
                                     const RenderLimits& limits = RenderLimits()) const;

 private:
  explicit Template(StmtList body) : body_(std::move(body)) {}

  StmtList body_;
};

}  // namespace kvd::text::internal::jinja
