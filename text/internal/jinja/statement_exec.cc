// Statement execution: output, if, for with jinja2's loop object, set, macros, break and
// continue.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "text/internal/jinja/call_args.h"
#include "text/internal/jinja/errors.h"
#include "text/internal/jinja/operators.h"
#include "text/internal/jinja/renderer.h"

namespace kvd::text::internal::jinja {

namespace {

// Attribute names of jinja2's loop object, built once and shared by every render.
struct LoopKeys {
  Value index = Value::String("index");
  Value index0 = Value::String("index0");
  Value revindex = Value::String("revindex");
  Value revindex0 = Value::String("revindex0");
  Value first = Value::String("first");
  Value last = Value::String("last");
  Value length = Value::String("length");
  Value depth = Value::String("depth");
  Value depth0 = Value::String("depth0");
  Value previtem = Value::String("previtem");
  Value nextitem = Value::String("nextitem");
  Value cycle = Value::String("cycle");
};

const LoopKeys& Keys() {
  static const LoopKeys* const kKeys = new LoopKeys();
  return *kKeys;
}

}  // namespace

Renderer::~Renderer() {
  for (const std::shared_ptr<Namespace>& ns : namespaces_) ns->attributes = ValueDict();
}

absl::StatusOr<std::string> Renderer::Run(const StmtList& body,
                                          std::shared_ptr<const Scope> globals) {
  std::string out;
  out_ = &out;
  auto root = std::make_shared<Scope>(std::move(globals));
  KVD_RETURN_IF_ERROR(ExecBody(body, root).status());
  return out;
}

absl::Status Renderer::CountIterations(int64_t n) {
  iterations_ += n;
  if (iterations_ <= limits_.max_loop_iterations) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("template exceeded ", limits_.max_loop_iterations, " loop iterations"));
}

Value Renderer::NewNamespace(ValueDict attributes) {
  auto ns = std::make_shared<Namespace>();
  ns->attributes = std::move(attributes);
  namespaces_.push_back(ns);
  return Value::MakeNamespace(std::move(ns));
}

absl::Status Renderer::Write(std::string_view text) {
  output_bytes_ += text.size();
  if (output_bytes_ > limits_.max_output_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("template output exceeded ", limits_.max_output_bytes, " bytes"));
  }
  out_->append(text);
  return absl::OkStatus();
}

absl::StatusOr<std::string> Renderer::Capture(const StmtList& body, const ScopePtr& scope) {
  std::string captured;
  std::string* saved = out_;
  out_ = &captured;
  absl::StatusOr<Flow> flow = ExecBody(body, scope);
  out_ = saved;
  if (!flow.ok()) return flow.status();
  return captured;
}

absl::StatusOr<Renderer::Flow> Renderer::ExecBody(const StmtList& body, const ScopePtr& scope) {
  for (const std::unique_ptr<Stmt>& stmt : body) {
    KVD_ASSIGN_OR_RETURN(Flow flow, ExecStmt(*stmt, scope));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

absl::StatusOr<Renderer::Flow> Renderer::ExecStmt(const Stmt& stmt, const ScopePtr& scope) {
  switch (stmt.kind) {
    case Stmt::Kind::kText:
      KVD_RETURN_IF_ERROR(Write(stmt.text));
      return Flow::kNormal;
    case Stmt::Kind::kOutput: {
      KVD_ASSIGN_OR_RETURN(Value value, Eval(*stmt.expr, *scope));
      KVD_RETURN_IF_ERROR(AddPosition(stmt.line, stmt.column, Write(value.Str())));
      return Flow::kNormal;
    }
    case Stmt::Kind::kIf:
      for (const auto& [condition, body] : stmt.branches) {
        bool taken = condition == nullptr;
        if (!taken) {
          KVD_ASSIGN_OR_RETURN(Value value, Eval(*condition, *scope));
          taken = value.Truthy();
        }
        if (taken) return ExecBody(body, scope);
      }
      return Flow::kNormal;
    case Stmt::Kind::kFor:
      return ExecFor(stmt, scope);
    case Stmt::Kind::kSet:
      KVD_RETURN_IF_ERROR(AddPosition(stmt.line, stmt.column, ExecSet(stmt, *scope)));
      return Flow::kNormal;
    case Stmt::Kind::kSetBlock: {
      KVD_ASSIGN_OR_RETURN(std::string text, Capture(stmt.body, scope));
      scope->Set(stmt.targets[0], Value::String(std::move(text)));
      return Flow::kNormal;
    }
    case Stmt::Kind::kMacro:
      scope->Set(stmt.name, DefineMacro(stmt, scope));
      return Flow::kNormal;
    case Stmt::Kind::kBreak:
      return Flow::kBreak;
    case Stmt::Kind::kContinue:
      return Flow::kContinue;
    case Stmt::Kind::kBody:
      return ExecBody(stmt.body, scope);
  }
  return Flow::kNormal;
}

absl::Status Renderer::Assign(const std::vector<std::string>& targets, const Value& value,
                              Scope& scope) {
  if (targets.size() == 1) {
    scope.Set(targets[0], value);
    return absl::OkStatus();
  }
  KVD_ASSIGN_OR_RETURN(ValueList items, Iterate(value));
  if (items.size() != targets.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(items.size() < targets.size() ? "not enough" : "too many",
                     " values to unpack (expected ", targets.size(), ", got ", items.size(), ")"));
  }
  for (size_t i = 0; i < targets.size(); ++i) scope.Set(targets[i], items[i]);
  return absl::OkStatus();
}

absl::Status Renderer::ExecSet(const Stmt& stmt, Scope& scope) {
  KVD_ASSIGN_OR_RETURN(Value value, Eval(*stmt.expr, scope));
  if (stmt.attribute.empty()) return Assign(stmt.targets, value, scope);
  const Value* target = scope.Find(stmt.targets[0]);
  if (target == nullptr || !target->is_namespace()) {
    return absl::InvalidArgumentError("cannot assign attribute on non-namespace object");
  }
  target->namespace_value().attributes.Set(Value::String(stmt.attribute), std::move(value));
  return absl::OkStatus();
}

absl::StatusOr<Renderer::Flow> Renderer::ExecFor(const Stmt& stmt, const ScopePtr& scope) {
  KVD_ASSIGN_OR_RETURN(Value iterable, Eval(*stmt.expr, *scope));
  absl::StatusOr<ValueList> all = Iterate(iterable);
  if (!all.ok()) return AddPosition(stmt.expr->line, stmt.expr->column, all.status());
  ValueList items;
  if (stmt.condition == nullptr) {
    items = *std::move(all);
  } else {
    // The inline `if` filters before the loop starts, so loop.length counts kept items only.
    for (Value& item : *all) {
      KVD_RETURN_IF_ERROR(CountIterations(1));
      auto probe = std::make_shared<Scope>(scope);
      KVD_RETURN_IF_ERROR(AddPosition(stmt.line, stmt.column, Assign(stmt.targets, item, *probe)));
      KVD_ASSIGN_OR_RETURN(Value keep, Eval(*stmt.condition, *probe));
      if (keep.Truthy()) items.push_back(std::move(item));
    }
  }
  if (items.empty()) {
    if (stmt.else_body.empty()) return Flow::kNormal;
    KVD_ASSIGN_OR_RETURN(Flow flow, ExecBody(stmt.else_body, scope));
    return flow;
  }
  const auto length = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < length; ++i) {
    KVD_RETURN_IF_ERROR(AddPosition(stmt.line, stmt.column, CountIterations(1)));
    auto iteration = std::make_shared<Scope>(scope);
    const Value& item = items[static_cast<size_t>(i)];
    KVD_RETURN_IF_ERROR(
        AddPosition(stmt.line, stmt.column, Assign(stmt.targets, item, *iteration)));
    const LoopKeys& keys = Keys();
    ValueDict loop;
    loop.Append(keys.index, Value::Int(i + 1));
    loop.Append(keys.index0, Value::Int(i));
    loop.Append(keys.revindex, Value::Int(length - i));
    loop.Append(keys.revindex0, Value::Int(length - i - 1));
    loop.Append(keys.first, Value::Bool(i == 0));
    loop.Append(keys.last, Value::Bool(i == length - 1));
    loop.Append(keys.length, Value::Int(length));
    loop.Append(keys.depth, Value::Int(1));
    loop.Append(keys.depth0, Value::Int(0));
    if (i > 0) loop.Append(keys.previtem, items[static_cast<size_t>(i - 1)]);
    if (i + 1 < length) loop.Append(keys.nextitem, items[static_cast<size_t>(i + 1)]);
    loop.Append(keys.cycle, Value::Function("cycle", [i](CallArgs& args) -> absl::StatusOr<Value> {
                  if (args.positional.empty()) {
                    return absl::InvalidArgumentError("no items for cycling given");
                  }
                  return args.positional[static_cast<size_t>(i) % args.positional.size()];
                }));
    auto loop_object = std::make_shared<Namespace>();
    loop_object->attributes = std::move(loop);
    iteration->Set("loop", Value::MakeNamespace(std::move(loop_object)));
    KVD_ASSIGN_OR_RETURN(Flow flow, ExecBody(stmt.body, iteration));
    if (flow == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Value Renderer::DefineMacro(const Stmt& stmt, const ScopePtr& scope) {
  // A weak reference: the macro usually lives in the very scope it captures.
  std::weak_ptr<const Scope> defining = scope;
  return Value::Function(stmt.name, [this, &stmt, defining](CallArgs& args) {
    std::shared_ptr<const Scope> parent = defining.lock();
    if (parent == nullptr) {
      return absl::StatusOr<Value>(
          absl::InvalidArgumentError("macro '" + stmt.name + "' called outside its scope"));
    }
    return CallMacro(stmt, parent, args);
  });
}

absl::StatusOr<Value> Renderer::CallMacro(const Stmt& stmt,
                                          const std::shared_ptr<const Scope>& parent,
                                          CallArgs& args) {
  if (call_depth_ >= limits_.max_call_depth) {
    return absl::InvalidArgumentError(
        absl::StrCat("macro calls nested deeper than ", limits_.max_call_depth));
  }
  std::vector<std::string_view> names;
  for (const auto& [name, fallback] : stmt.params) names.push_back(name);
  KVD_ASSIGN_OR_RETURN(std::vector<std::optional<Value>> bound, BindArgs(stmt.name, names, args));
  auto scope = std::make_shared<Scope>(parent);
  for (size_t i = 0; i < names.size(); ++i) {
    if (bound[i].has_value()) {
      scope->Set(names[i], *std::move(bound[i]));
    } else if (stmt.params[i].second != nullptr) {
      KVD_ASSIGN_OR_RETURN(Value fallback, Eval(*stmt.params[i].second, *scope));
      scope->Set(names[i], std::move(fallback));
    } else {
      scope->Set(names[i], Value::Undefined("'" + std::string(names[i]) + "' is undefined"));
    }
  }
  ++call_depth_;
  absl::StatusOr<std::string> text = Capture(stmt.body, scope);
  --call_depth_;
  if (!text.ok()) return text.status();
  return Value::String(*std::move(text));
}

}  // namespace kvd::text::internal::jinja
