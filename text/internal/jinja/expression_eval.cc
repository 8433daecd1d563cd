// Expression evaluation. Errors take the position of the innermost expression that failed.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "text/internal/jinja/errors.h"
#include "text/internal/jinja/json_convert.h"
#include "text/internal/jinja/operators.h"
#include "text/internal/jinja/renderer.h"

namespace kvd::text::internal::jinja {

absl::StatusOr<Value> Renderer::Eval(const Expr& expr, const Scope& scope) {
  absl::StatusOr<Value> value = EvalUnpositioned(expr, scope);
  if (!value.ok()) return AddPosition(expr.line, expr.column, value.status());
  return value;
}

absl::StatusOr<CallArgs> Renderer::EvalArgs(const Expr& expr, size_t first, const Scope& scope) {
  CallArgs args;
  for (size_t i = first; i < expr.operands.size(); ++i) {
    KVD_ASSIGN_OR_RETURN(Value value, Eval(*expr.operands[i], scope));
    args.positional.push_back(std::move(value));
  }
  for (const auto& [name, argument] : expr.keyword_args) {
    KVD_ASSIGN_OR_RETURN(Value value, Eval(*argument, scope));
    args.keyword.emplace_back(name, std::move(value));
  }
  return args;
}

absl::StatusOr<Value> Renderer::EvalCompare(const Expr& expr, const Scope& scope) {
  KVD_ASSIGN_OR_RETURN(Value left, Eval(*expr.operands[0], scope));
  for (size_t i = 0; i < expr.compare_ops.size(); ++i) {
    KVD_ASSIGN_OR_RETURN(Value right, Eval(*expr.operands[i + 1], scope));
    const std::string& op = expr.compare_ops[i];
    bool result = false;
    if (op == "==" || op == "!=") {
      result = Equals(left, right) == (op == "==");
    } else if (op == "in" || op == "not in") {
      KVD_ASSIGN_OR_RETURN(bool found, Contains(right, left));
      result = found == (op == "in");
    } else {
      for (const Value* side : {&left, &right}) {
        if (side->is_undefined()) {
          const std::string& description = side->undefined_description();
          return absl::InvalidArgumentError(description.empty() ? "value is undefined"
                                                                : description);
        }
      }
      absl::StatusOr<int> c = Compare(left, right);
      if (!c.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", op, "' not supported between instances of '", left.TypeName(),
                         "' and '", right.TypeName(), "'"));
      }
      result = op == "<" ? *c < 0 : op == "<=" ? *c <= 0 : op == ">" ? *c > 0 : *c >= 0;
    }
    if (!result) return Value::Bool(false);
    left = std::move(right);
  }
  return Value::Bool(true);
}

absl::StatusOr<Value> Renderer::EvalCollection(const Expr& expr, const Scope& scope) {
  Value result;
  if (expr.kind == Expr::Kind::kDict) {
    ValueDict dict;
    for (size_t i = 0; i + 1 < expr.operands.size(); i += 2) {
      KVD_ASSIGN_OR_RETURN(Value key, Eval(*expr.operands[i], scope));
      KVD_ASSIGN_OR_RETURN(Value value, Eval(*expr.operands[i + 1], scope));
      dict.Set(std::move(key), std::move(value));
    }
    result = Value::Dict(std::move(dict));
  } else {
    ValueList items;
    for (const ExprPtr& operand : expr.operands) {
      KVD_ASSIGN_OR_RETURN(Value item, Eval(*operand, scope));
      items.push_back(std::move(item));
    }
    result = expr.kind == Expr::Kind::kTuple ? Value::Tuple(std::move(items))
                                             : Value::List(std::move(items));
  }
  if (result.depth() > kMaxValueDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("value nested deeper than ", kMaxValueDepth, " levels"));
  }
  return result;
}

absl::StatusOr<Value> Renderer::EvalUnpositioned(const Expr& expr, const Scope& scope) {
  switch (expr.kind) {
    case Expr::Kind::kLiteral:
      return expr.literal;
    case Expr::Kind::kName: {
      const Value* value = scope.Find(expr.name);
      if (value != nullptr) return *value;
      return Value::Undefined("'" + expr.name + "' is undefined");
    }
    case Expr::Kind::kList:
    case Expr::Kind::kTuple:
    case Expr::Kind::kDict:
      return EvalCollection(expr, scope);
    case Expr::Kind::kAttribute: {
      KVD_ASSIGN_OR_RETURN(Value object, Eval(*expr.operands[0], scope));
      return GetAttribute(object, expr.name);
    }
    case Expr::Kind::kSubscript: {
      KVD_ASSIGN_OR_RETURN(Value object, Eval(*expr.operands[0], scope));
      KVD_ASSIGN_OR_RETURN(Value key, Eval(*expr.operands[1], scope));
      return GetItem(object, key);
    }
    case Expr::Kind::kSlice: {
      KVD_ASSIGN_OR_RETURN(Value object, Eval(*expr.operands[0], scope));
      std::optional<Value> bounds[3];
      for (int i = 0; i < 3; ++i) {
        if (expr.operands[i + 1] == nullptr) continue;
        KVD_ASSIGN_OR_RETURN(bounds[i], Eval(*expr.operands[i + 1], scope));
      }
      return Slice(object, bounds[0], bounds[1], bounds[2]);
    }
    case Expr::Kind::kCall: {
      KVD_ASSIGN_OR_RETURN(Value callee, Eval(*expr.operands[0], scope));
      if (callee.is_undefined()) {
        const std::string& description = callee.undefined_description();
        return absl::InvalidArgumentError(description.empty() ? "value is undefined" : description);
      }
      if (!callee.is_callable()) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", callee.TypeName(), "' object is not callable"));
      }
      KVD_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(expr, 1, scope));
      return callee.callable_value().function(args);
    }
    case Expr::Kind::kFilter: {
      KVD_ASSIGN_OR_RETURN(Value input, Eval(*expr.operands[0], scope));
      KVD_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(expr, 1, scope));
      return expr.filter(input, args);
    }
    case Expr::Kind::kTest: {
      KVD_ASSIGN_OR_RETURN(Value input, Eval(*expr.operands[0], scope));
      KVD_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(expr, 1, scope));
      KVD_ASSIGN_OR_RETURN(bool passed, expr.test(input, args));
      return Value::Bool(passed != expr.negated);
    }
    case Expr::Kind::kNegate:
    case Expr::Kind::kPlus: {
      KVD_ASSIGN_OR_RETURN(Value operand, Eval(*expr.operands[0], scope));
      return UnaryOp(expr.kind == Expr::Kind::kNegate ? "-" : "+", operand);
    }
    case Expr::Kind::kNot: {
      KVD_ASSIGN_OR_RETURN(Value operand, Eval(*expr.operands[0], scope));
      return Value::Bool(!operand.Truthy());
    }
    case Expr::Kind::kBinary: {
      KVD_ASSIGN_OR_RETURN(Value left, Eval(*expr.operands[0], scope));
      KVD_ASSIGN_OR_RETURN(Value right, Eval(*expr.operands[1], scope));
      return BinaryOp(expr.name, left, right);
    }
    case Expr::Kind::kAnd:
    case Expr::Kind::kOr: {
      // Python returns the deciding operand itself, not a bool.
      KVD_ASSIGN_OR_RETURN(Value left, Eval(*expr.operands[0], scope));
      if (left.Truthy() == (expr.kind == Expr::Kind::kOr)) return left;
      return Eval(*expr.operands[1], scope);
    }
    case Expr::Kind::kCompare:
      return EvalCompare(expr, scope);
    case Expr::Kind::kConditional: {
      KVD_ASSIGN_OR_RETURN(Value condition, Eval(*expr.operands[1], scope));
      if (condition.Truthy()) return Eval(*expr.operands[0], scope);
      if (expr.operands[2] == nullptr) return Value::Undefined("conditional without else");
      return Eval(*expr.operands[2], scope);
    }
    case Expr::Kind::kConcat: {
      std::string text;
      for (const ExprPtr& operand : expr.operands) {
        KVD_ASSIGN_OR_RETURN(Value value, Eval(*operand, scope));
        text += value.Str();
        if (text.size() > kMaxStringBytes) {
          return absl::InvalidArgumentError("concatenated string too long");
        }
      }
      return Value::String(std::move(text));
    }
  }
  return absl::InternalError("unknown expression kind");
}

}  // namespace kvd::text::internal::jinja
