// Expression parsing, one method per precedence level; filters and tests are resolved here.
#include "absl/strings/str_cat.h"
#include "text/internal/jinja/errors.h"
#include "text/internal/jinja/parser_impl.h"

namespace kvd::text::internal::jinja {

ExprPtr Parser::NewExpr(Expr::Kind kind, const Token& at) {
  return std::make_unique<Expr>(kind, at.line, at.column);
}

absl::StatusOr<ExprPtr> Parser::Seal(ExprPtr expr) const {
  int depth = 0;
  for (const ExprPtr& operand : expr->operands) {
    if (operand != nullptr) depth = std::max(depth, operand->depth);
  }
  for (const auto& [name, value] : expr->keyword_args) depth = std::max(depth, value->depth);
  expr->depth = depth + 1;
  if (expr->depth > kMaxExprDepth) {
    return absl::InvalidArgumentError(
        PositionedMessage(expr->line, expr->column, "expression nested too deeply"));
  }
  return expr;
}

absl::StatusOr<ExprPtr> Parser::MakeBinary(Expr::Kind kind, const Token& at, std::string op,
                                           ExprPtr left, ExprPtr right) const {
  ExprPtr expr = NewExpr(kind, at);
  expr->name = std::move(op);
  expr->operands.push_back(std::move(left));
  expr->operands.push_back(std::move(right));
  return Seal(std::move(expr));
}

absl::StatusOr<ExprPtr> Parser::ParseTuple(bool with_condexpr) {
  const Token& start = Peek();
  KVD_ASSIGN_OR_RETURN(ExprPtr first, ParseExpression(with_condexpr));
  if (!IsOp(",")) return first;
  ExprPtr tuple = NewExpr(Expr::Kind::kTuple, start);
  tuple->operands.push_back(std::move(first));
  while (SkipOp(",")) {
    if (AtExpressionEnd()) break;
    KVD_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(with_condexpr));
    tuple->operands.push_back(std::move(item));
  }
  return Seal(std::move(tuple));
}

bool Parser::AtExpressionEnd() const {
  const Token::Kind kind = Peek().kind;
  return kind == Token::Kind::kBlockEnd || kind == Token::Kind::kOutputEnd || IsOp(")") ||
         IsOp("]") || IsOp("}") || IsName("if") || IsName("in");
}

absl::StatusOr<ExprPtr> Parser::ParseExpression(bool with_condexpr) {
  NestingGuard guard(this);
  KVD_RETURN_IF_ERROR(guard.Check());
  KVD_ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
  if (!with_condexpr) return expr;
  while (IsName("if")) {
    const Token& at = Next();
    ExprPtr conditional = NewExpr(Expr::Kind::kConditional, at);
    KVD_ASSIGN_OR_RETURN(ExprPtr condition, ParseOr());
    ExprPtr otherwise;
    if (SkipName("else")) {
      KVD_ASSIGN_OR_RETURN(otherwise, ParseExpression(/*with_condexpr=*/true));
    }
    conditional->operands.push_back(std::move(expr));
    conditional->operands.push_back(std::move(condition));
    conditional->operands.push_back(std::move(otherwise));
    KVD_ASSIGN_OR_RETURN(expr, Seal(std::move(conditional)));
  }
  return expr;
}

absl::StatusOr<ExprPtr> Parser::ParseOr() {
  KVD_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
  while (IsName("or")) {
    const Token& at = Next();
    KVD_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
    KVD_ASSIGN_OR_RETURN(left,
                         MakeBinary(Expr::Kind::kOr, at, "or", std::move(left), std::move(right)));
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseAnd() {
  KVD_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
  while (IsName("and")) {
    const Token& at = Next();
    KVD_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
    KVD_ASSIGN_OR_RETURN(
        left, MakeBinary(Expr::Kind::kAnd, at, "and", std::move(left), std::move(right)));
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseNot() {
  if (!IsName("not")) return ParseCompare();
  NestingGuard guard(this);
  KVD_RETURN_IF_ERROR(guard.Check());
  ExprPtr expr = NewExpr(Expr::Kind::kNot, Next());
  KVD_ASSIGN_OR_RETURN(ExprPtr operand, ParseNot());
  expr->operands.push_back(std::move(operand));
  return Seal(std::move(expr));
}

absl::StatusOr<ExprPtr> Parser::ParseCompare() {
  const Token& start = Peek();
  KVD_ASSIGN_OR_RETURN(ExprPtr first, ParseMath1());
  ExprPtr compare;
  while (true) {
    std::string op;
    if (Peek().kind == Token::Kind::kOperator &&
        (Peek().text == "==" || Peek().text == "!=" || Peek().text == "<" || Peek().text == "<=" ||
         Peek().text == ">" || Peek().text == ">=")) {
      op = Next().text;
    } else if (SkipName("in")) {
      op = "in";
    } else if (IsName("not") && IsName("in", 1)) {
      Next();
      Next();
      op = "not in";
    } else {
      break;
    }
    if (compare == nullptr) {
      compare = NewExpr(Expr::Kind::kCompare, start);
      compare->operands.push_back(std::move(first));
    }
    KVD_ASSIGN_OR_RETURN(ExprPtr operand, ParseMath1());
    compare->operands.push_back(std::move(operand));
    compare->compare_ops.push_back(std::move(op));
  }
  if (compare == nullptr) return first;
  return Seal(std::move(compare));
}

absl::StatusOr<ExprPtr> Parser::ParseMath1() {
  KVD_ASSIGN_OR_RETURN(ExprPtr left, ParseConcat());
  while (IsOp("+") || IsOp("-")) {
    const Token& at = Next();
    KVD_ASSIGN_OR_RETURN(ExprPtr right, ParseConcat());
    KVD_ASSIGN_OR_RETURN(
        left, MakeBinary(Expr::Kind::kBinary, at, at.text, std::move(left), std::move(right)));
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseConcat() {
  const Token& start = Peek();
  KVD_ASSIGN_OR_RETURN(ExprPtr first, ParseMath2());
  if (!IsOp("~")) return first;
  ExprPtr concat = NewExpr(Expr::Kind::kConcat, start);
  concat->operands.push_back(std::move(first));
  while (SkipOp("~")) {
    KVD_ASSIGN_OR_RETURN(ExprPtr operand, ParseMath2());
    concat->operands.push_back(std::move(operand));
  }
  return Seal(std::move(concat));
}

absl::StatusOr<ExprPtr> Parser::ParseMath2() {
  KVD_ASSIGN_OR_RETURN(ExprPtr left, ParsePow());
  while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
    const Token& at = Next();
    KVD_ASSIGN_OR_RETURN(ExprPtr right, ParsePow());
    KVD_ASSIGN_OR_RETURN(
        left, MakeBinary(Expr::Kind::kBinary, at, at.text, std::move(left), std::move(right)));
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParsePow() {
  KVD_ASSIGN_OR_RETURN(ExprPtr left, ParseUnary(/*with_filter=*/true));
  while (IsOp("**")) {
    const Token& at = Next();
    KVD_ASSIGN_OR_RETURN(ExprPtr right, ParseUnary(/*with_filter=*/true));
    KVD_ASSIGN_OR_RETURN(
        left, MakeBinary(Expr::Kind::kBinary, at, "**", std::move(left), std::move(right)));
  }
  return left;
}

absl::StatusOr<ExprPtr> Parser::ParseUnary(bool with_filter) {
  ExprPtr expr;
  if (IsOp("-") || IsOp("+")) {
    NestingGuard guard(this);
    KVD_RETURN_IF_ERROR(guard.Check());
    const Token& at = Next();
    expr = NewExpr(at.text == "-" ? Expr::Kind::kNegate : Expr::Kind::kPlus, at);
    KVD_ASSIGN_OR_RETURN(ExprPtr operand, ParseUnary(/*with_filter=*/false));
    expr->operands.push_back(std::move(operand));
    KVD_ASSIGN_OR_RETURN(expr, Seal(std::move(expr)));
  } else {
    KVD_ASSIGN_OR_RETURN(expr, ParsePrimary());
    KVD_ASSIGN_OR_RETURN(expr, ParsePostfix(std::move(expr)));
  }
  if (!with_filter) return expr;
  return ParseFilterExpr(std::move(expr));
}

absl::StatusOr<ExprPtr> Parser::ParsePrimary() {
  const Token& token = Peek();
  switch (token.kind) {
    case Token::Kind::kName: {
      Next();
      ExprPtr expr = NewExpr(Expr::Kind::kLiteral, token);
      const std::string& name = token.text;
      if (name == "true" || name == "True") {
        expr->literal = Value::Bool(true);
      } else if (name == "false" || name == "False") {
        expr->literal = Value::Bool(false);
      } else if (name == "none" || name == "None") {
        expr->literal = Value::None();
      } else {
        expr->kind = Expr::Kind::kName;
        expr->name = name;
      }
      return expr;
    }
    case Token::Kind::kString: {
      // Adjacent literals concatenate, as in Python.
      std::string text;
      while (Peek().kind == Token::Kind::kString) text += Next().text;
      ExprPtr expr = NewExpr(Expr::Kind::kLiteral, token);
      expr->literal = Value::String(std::move(text));
      return expr;
    }
    case Token::Kind::kInt:
    case Token::Kind::kFloat: {
      Next();
      ExprPtr expr = NewExpr(Expr::Kind::kLiteral, token);
      expr->literal = token.kind == Token::Kind::kInt ? Value::Int(token.int_value)
                                                      : Value::Float(token.float_value);
      return expr;
    }
    default:
      break;
  }
  if (SkipOp("(")) {
    ExprPtr tuple = NewExpr(Expr::Kind::kTuple, token);
    bool trailing_comma = false;
    while (!IsOp(")")) {
      KVD_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(/*with_condexpr=*/true));
      tuple->operands.push_back(std::move(item));
      trailing_comma = SkipOp(",");
      if (!trailing_comma) break;
    }
    KVD_RETURN_IF_ERROR(ExpectOp(")"));
    // `(x)` is just x; `()` and `(x,)` are tuples.
    if (tuple->operands.size() == 1 && !trailing_comma) return std::move(tuple->operands[0]);
    return Seal(std::move(tuple));
  }
  if (SkipOp("[")) {
    ExprPtr list = NewExpr(Expr::Kind::kList, token);
    while (!IsOp("]")) {
      KVD_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(/*with_condexpr=*/true));
      list->operands.push_back(std::move(item));
      if (!SkipOp(",")) break;
    }
    KVD_RETURN_IF_ERROR(ExpectOp("]"));
    return Seal(std::move(list));
  }
  if (SkipOp("{")) {
    ExprPtr dict = NewExpr(Expr::Kind::kDict, token);
    while (!IsOp("}")) {
      KVD_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression(/*with_condexpr=*/true));
      KVD_RETURN_IF_ERROR(ExpectOp(":"));
      KVD_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(/*with_condexpr=*/true));
      dict->operands.push_back(std::move(key));
      dict->operands.push_back(std::move(value));
      if (!SkipOp(",")) break;
    }
    KVD_RETURN_IF_ERROR(ExpectOp("}"));
    return Seal(std::move(dict));
  }
  return Unexpected("an expression");
}

absl::StatusOr<ExprPtr> Parser::ParsePostfix(ExprPtr expr) {
  while (true) {
    // Accesses and calls report errors at the start of the expression they apply to.
    Token at = Peek();
    at.line = expr->line;
    at.column = expr->column;
    if (SkipOp(".")) {
      if (Peek().kind == Token::Kind::kInt) {
        ExprPtr subscript = NewExpr(Expr::Kind::kSubscript, at);
        ExprPtr index = NewExpr(Expr::Kind::kLiteral, Peek());
        index->literal = Value::Int(Next().int_value);
        subscript->operands.push_back(std::move(expr));
        subscript->operands.push_back(std::move(index));
        KVD_ASSIGN_OR_RETURN(expr, Seal(std::move(subscript)));
        continue;
      }
      ExprPtr attribute = NewExpr(Expr::Kind::kAttribute, at);
      KVD_ASSIGN_OR_RETURN(attribute->name, ExpectName());
      attribute->operands.push_back(std::move(expr));
      KVD_ASSIGN_OR_RETURN(expr, Seal(std::move(attribute)));
    } else if (SkipOp("[")) {
      std::vector<ExprPtr> parts;  // start, stop, step
      bool is_slice = false;
      for (int i = 0; i < 3; ++i) {
        ExprPtr part;
        if (!IsOp(":") && !IsOp("]")) {
          KVD_ASSIGN_OR_RETURN(part, ParseExpression(/*with_condexpr=*/true));
        }
        parts.push_back(std::move(part));
        if (!SkipOp(":")) break;
        is_slice = true;
      }
      KVD_RETURN_IF_ERROR(ExpectOp("]"));
      ExprPtr subscript = NewExpr(is_slice ? Expr::Kind::kSlice : Expr::Kind::kSubscript, at);
      subscript->operands.push_back(std::move(expr));
      if (!is_slice && parts[0] == nullptr) return ErrorAt(at, "empty subscript");
      for (ExprPtr& part : parts) subscript->operands.push_back(std::move(part));
      while (is_slice && subscript->operands.size() < 4) subscript->operands.push_back(nullptr);
      KVD_ASSIGN_OR_RETURN(expr, Seal(std::move(subscript)));
    } else if (IsOp("(")) {
      ExprPtr call = NewExpr(Expr::Kind::kCall, at);
      call->operands.push_back(std::move(expr));
      KVD_RETURN_IF_ERROR(ParseCallArgs(call.get()));
      KVD_ASSIGN_OR_RETURN(expr, Seal(std::move(call)));
    } else {
      return expr;
    }
  }
}

absl::StatusOr<ExprPtr> Parser::ParseFilterExpr(ExprPtr expr) {
  while (true) {
    if (SkipOp("|")) {
      const Token& name = Peek();
      ExprPtr filter = NewExpr(Expr::Kind::kFilter, name);
      KVD_ASSIGN_OR_RETURN(filter->name, ExpectName());
      filter->filter = FindFilter(filter->name);
      if (filter->filter == nullptr) return ErrorAt(name, "no filter named '" + name.text + "'");
      filter->operands.push_back(std::move(expr));
      if (IsOp("(")) KVD_RETURN_IF_ERROR(ParseCallArgs(filter.get()));
      KVD_ASSIGN_OR_RETURN(expr, Seal(std::move(filter)));
    } else if (IsName("is")) {
      Next();
      const bool negated = SkipName("not");
      const Token& name = Peek();
      ExprPtr test = NewExpr(Expr::Kind::kTest, name);
      KVD_ASSIGN_OR_RETURN(test->name, ExpectName());
      test->negated = negated;
      test->test = FindTest(test->name);
      if (test->test == nullptr) return ErrorAt(name, "no test named '" + name.text + "'");
      test->operands.push_back(std::move(expr));
      const Token& next = Peek();
      const bool bare_argument =
          next.kind == Token::Kind::kName
              ? !(next.text == "else" || next.text == "or" || next.text == "and" ||
                  next.text == "if" || next.text == "is" || next.text == "not" || next.text == "in")
              : (next.kind == Token::Kind::kString || next.kind == Token::Kind::kInt ||
                 next.kind == Token::Kind::kFloat || IsOp("[") || IsOp("{"));
      if (IsOp("(")) {
        KVD_RETURN_IF_ERROR(ParseCallArgs(test.get()));
      } else if (bare_argument) {
        // `x is divisibleby 3`, `x is sameas none`: one argument without parentheses.
        KVD_ASSIGN_OR_RETURN(ExprPtr argument, ParsePrimary());
        KVD_ASSIGN_OR_RETURN(argument, ParsePostfix(std::move(argument)));
        test->operands.push_back(std::move(argument));
      }
      KVD_ASSIGN_OR_RETURN(expr, Seal(std::move(test)));
    } else {
      return expr;
    }
  }
}

absl::Status Parser::ParseCallArgs(Expr* call) {
  KVD_RETURN_IF_ERROR(ExpectOp("("));
  while (!IsOp(")")) {
    if (IsOp("*") || IsOp("**")) return ErrorAt(Peek(), "*args and **kwargs are not supported");
    if (Peek().kind == Token::Kind::kName && IsOp("=", 1)) {
      std::string name = Next().text;
      Next();
      KVD_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(/*with_condexpr=*/true));
      call->keyword_args.emplace_back(std::move(name), std::move(value));
    } else {
      if (!call->keyword_args.empty()) {
        return ErrorAt(Peek(), "positional argument follows keyword argument");
      }
      KVD_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(/*with_condexpr=*/true));
      call->operands.push_back(std::move(value));
    }
    if (!SkipOp(",")) break;
  }
  return ExpectOp(")");
}

}  // namespace kvd::text::internal::jinja
