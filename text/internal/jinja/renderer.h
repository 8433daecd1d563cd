// Executes a template's syntax tree for one render: statements in statement_exec.cc,
// expressions in expression_eval.cc. One Renderer per render; not shared between threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "text/internal/jinja/ast.h"
#include "text/internal/jinja/scope.h"
#include "text/internal/jinja/template.h"

namespace kvd::text::internal::jinja {

class Renderer {
 public:
  explicit Renderer(const RenderLimits& limits) : limits_(limits) {}
  // Breaks reference cycles templates may build through namespaces.
  ~Renderer();
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Renders `body` with `globals` as the outermost scope.
  absl::StatusOr<std::string> Run(const StmtList& body, std::shared_ptr<const Scope> globals);

  // Counts loop iterations (or produced range items) against the limit.
  absl::Status CountIterations(int64_t n);
  // A namespace object whose attributes are dropped when the render ends.
  Value NewNamespace(ValueDict attributes);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  using ScopePtr = std::shared_ptr<Scope>;

  // statement_exec.cc
  absl::StatusOr<Flow> ExecBody(const StmtList& body, const ScopePtr& scope);
  absl::StatusOr<Flow> ExecStmt(const Stmt& stmt, const ScopePtr& scope);
  absl::StatusOr<Flow> ExecFor(const Stmt& stmt, const ScopePtr& scope);
  absl::Status ExecSet(const Stmt& stmt, Scope& scope);
  absl::Status Assign(const std::vector<std::string>& targets, const Value& value, Scope& scope);
  Value DefineMacro(const Stmt& stmt, const ScopePtr& scope);
  absl::StatusOr<Value> CallMacro(const Stmt& stmt, const std::shared_ptr<const Scope>& parent,
                                  CallArgs& args);
  // Renders `body` into a string instead of the output.
  absl::StatusOr<std::string> Capture(const StmtList& body, const ScopePtr& scope);
  absl::Status Write(std::string_view text);

  // expression_eval.cc
  absl::StatusOr<Value> Eval(const Expr& expr, const Scope& scope);
  absl::StatusOr<Value> EvalUnpositioned(const Expr& expr, const Scope& scope);
  absl::StatusOr<CallArgs> EvalArgs(const Expr& expr, size_t first, const Scope& scope);
  absl::StatusOr<Value> EvalCompare(const Expr& expr, const Scope& scope);
  absl::StatusOr<Value> EvalCollection(const Expr& expr, const Scope& scope);

  const RenderLimits& limits_;
  std::string* out_ = nullptr;
  size_t output_bytes_ = 0;
  int64_t iterations_ = 0;
  int call_depth_ = 0;
  std::vector<std::shared_ptr<Namespace>> namespaces_;
};

}  // namespace kvd::text::internal::jinja
