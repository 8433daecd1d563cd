// Statement parsing (if, for, set, macro...) and the parser's error helpers.
#include "text/internal/jinja/parser.h"

#include "absl/strings/str_cat.h"
#include "text/internal/jinja/errors.h"
#include "text/internal/jinja/parser_impl.h"

namespace kvd::text::internal::jinja {

std::string Parser::Describe(const Token& token) {
  switch (token.kind) {
    case Token::Kind::kText:
      return "text";
    case Token::Kind::kOutputBegin:
      return "'{{'";
    case Token::Kind::kOutputEnd:
      return "end of print statement";
    case Token::Kind::kBlockBegin:
      return "'{%'";
    case Token::Kind::kBlockEnd:
      return "end of statement block";
    case Token::Kind::kString:
      return "string";
    case Token::Kind::kEnd:
      return "end of template";
    default:
      return "'" + token.text + "'";
  }
}

absl::Status Parser::ErrorAt(const Token& token, std::string_view message) const {
  return absl::InvalidArgumentError(PositionedMessage(token.line, token.column, message));
}

absl::Status Parser::Unexpected(std::string_view expected) const {
  return ErrorAt(Peek(),
                 absl::StrCat("expected ", std::string(expected), ", got ", Describe(Peek())));
}

absl::Status Parser::ExpectOp(std::string_view op) {
  if (SkipOp(op)) return absl::OkStatus();
  return Unexpected("'" + std::string(op) + "'");
}

absl::Status Parser::ExpectBlockEnd() {
  if (Peek().kind != Token::Kind::kBlockEnd) return Unexpected("end of statement block");
  Next();
  return absl::OkStatus();
}

absl::StatusOr<std::string> Parser::ExpectName() {
  if (Peek().kind != Token::Kind::kName) return Unexpected("a name");
  return Next().text;
}

absl::StatusOr<StmtList> Parser::ParseBody(std::initializer_list<std::string_view> ends,
                                           std::string* end) {
  NestingGuard guard(this);
  KVD_RETURN_IF_ERROR(guard.Check());
  StmtList body;
  while (true) {
    const Token& token = Peek();
    switch (token.kind) {
      case Token::Kind::kText: {
        auto stmt = std::make_unique<Stmt>(Stmt::Kind::kText, token.line, token.column);
        stmt->text = Next().text;
        body.push_back(std::move(stmt));
        break;
      }
      case Token::Kind::kOutputBegin: {
        auto stmt = std::make_unique<Stmt>(Stmt::Kind::kOutput, token.line, token.column);
        Next();
        KVD_ASSIGN_OR_RETURN(stmt->expr, ParseTuple(/*with_condexpr=*/true));
        if (Peek().kind != Token::Kind::kOutputEnd) return Unexpected("'}}'");
        Next();
        body.push_back(std::move(stmt));
        break;
      }
      case Token::Kind::kBlockBegin: {
        const Token& keyword = Peek(1);
        if (keyword.kind == Token::Kind::kName &&
            std::find(ends.begin(), ends.end(), keyword.text) != ends.end()) {
          Next();
          *end = Next().text;
          return body;
        }
        Next();
        KVD_ASSIGN_OR_RETURN(std::unique_ptr<Stmt> stmt, ParseStatement());
        body.push_back(std::move(stmt));
        break;
      }
      case Token::Kind::kEnd:
        if (ends.size() == 0) return body;
        return ErrorAt(token, absl::StrCat("unexpected end of template, expected '",
                                           std::string(*ends.begin()), "'"));
      default:
        return Unexpected("text or a tag");
    }
  }
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseStatement() {
  const Token& keyword = Peek();
  if (keyword.kind != Token::Kind::kName) return Unexpected("a statement name");
  const std::string name = keyword.text;
  if (name == "if") return ParseIf();
  if (name == "for") return ParseFor();
  if (name == "set") return ParseSet();
  if (name == "macro") return ParseMacro();
  if (name == "generation") {
    auto stmt = std::make_unique<Stmt>(Stmt::Kind::kBody, keyword.line, keyword.column);
    Next();
    KVD_RETURN_IF_ERROR(ExpectBlockEnd());
    std::string end;
    KVD_ASSIGN_OR_RETURN(stmt->body, ParseBody({"endgeneration"}, &end));
    KVD_RETURN_IF_ERROR(ExpectBlockEnd());
    return stmt;
  }
  if (name == "break" || name == "continue") {
    if (loop_depth_ == 0) return ErrorAt(keyword, "'" + name + "' outside of a loop");
    auto stmt = std::make_unique<Stmt>(name == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue,
                                       keyword.line, keyword.column);
    Next();
    KVD_RETURN_IF_ERROR(ExpectBlockEnd());
    return stmt;
  }
  if (name.rfind("end", 0) == 0 || name == "elif" || name == "else") {
    return ErrorAt(keyword, "unexpected '" + name + "'");
  }
  return ErrorAt(keyword, "unknown or unsupported tag '" + name + "'");
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseIf() {
  const Token& keyword = Next();
  auto stmt = std::make_unique<Stmt>(Stmt::Kind::kIf, keyword.line, keyword.column);
  std::string end = "if";
  while (end == "if" || end == "elif") {
    KVD_ASSIGN_OR_RETURN(ExprPtr condition, ParseTuple(/*with_condexpr=*/true));
    KVD_RETURN_IF_ERROR(ExpectBlockEnd());
    KVD_ASSIGN_OR_RETURN(StmtList body, ParseBody({"elif", "else", "endif"}, &end));
    stmt->branches.emplace_back(std::move(condition), std::move(body));
  }
  if (end == "else") {
    KVD_RETURN_IF_ERROR(ExpectBlockEnd());
    KVD_ASSIGN_OR_RETURN(StmtList body, ParseBody({"endif"}, &end));
    stmt->branches.emplace_back(nullptr, std::move(body));
  }
  KVD_RETURN_IF_ERROR(ExpectBlockEnd());
  return stmt;
}

absl::StatusOr<std::vector<std::string>> Parser::ParseTargets() {
  const bool parenthesized = SkipOp("(");
  std::vector<std::string> targets;
  do {
    if (Peek().kind != Token::Kind::kName) break;
    targets.push_back(Next().text);
  } while (SkipOp(","));
  if (targets.empty()) return Unexpected("a variable name");
  if (parenthesized) KVD_RETURN_IF_ERROR(ExpectOp(")"));
  return targets;
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseFor() {
  const Token& keyword = Next();
  auto stmt = std::make_unique<Stmt>(Stmt::Kind::kFor, keyword.line, keyword.column);
  KVD_ASSIGN_OR_RETURN(stmt->targets, ParseTargets());
  if (!SkipName("in")) return Unexpected("'in'");
  KVD_ASSIGN_OR_RETURN(stmt->expr, ParseTuple(/*with_condexpr=*/false));
  if (SkipName("if")) {
    KVD_ASSIGN_OR_RETURN(stmt->condition, ParseExpression(/*with_condexpr=*/true));
  }
  if (IsName("recursive")) return ErrorAt(Peek(), "recursive loops are not supported");
  KVD_RETURN_IF_ERROR(ExpectBlockEnd());
  std::string end;
  ++loop_depth_;
  absl::StatusOr<StmtList> body = ParseBody({"else", "endfor"}, &end);
  --loop_depth_;
  if (!body.ok()) return body.status();
  stmt->body = *std::move(body);
  if (end == "else") {
    KVD_RETURN_IF_ERROR(ExpectBlockEnd());
    KVD_ASSIGN_OR_RETURN(stmt->else_body, ParseBody({"endfor"}, &end));
  }
  KVD_RETURN_IF_ERROR(ExpectBlockEnd());
  return stmt;
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseSet() {
  const Token& keyword = Next();
  auto stmt = std::make_unique<Stmt>(Stmt::Kind::kSet, keyword.line, keyword.column);
  if (Peek().kind == Token::Kind::kName && IsOp(".", 1)) {
    stmt->targets.push_back(Next().text);
    Next();
    KVD_ASSIGN_OR_RETURN(stmt->attribute, ExpectName());
  } else {
    KVD_ASSIGN_OR_RETURN(stmt->targets, ParseTargets());
  }
  if (SkipOp("=")) {
    KVD_ASSIGN_OR_RETURN(stmt->expr, ParseTuple(/*with_condexpr=*/true));
    KVD_RETURN_IF_ERROR(ExpectBlockEnd());
    return stmt;
  }
  if (stmt->targets.size() != 1 || !stmt->attribute.empty()) return Unexpected("'='");
  if (IsOp("|")) return ErrorAt(Peek(), "filters on set blocks are not supported");
  KVD_RETURN_IF_ERROR(ExpectBlockEnd());
  stmt->kind = Stmt::Kind::kSetBlock;
  std::string end;
  KVD_ASSIGN_OR_RETURN(stmt->body, ParseBody({"endset"}, &end));
  KVD_RETURN_IF_ERROR(ExpectBlockEnd());
  return stmt;
}

absl::StatusOr<std::unique_ptr<Stmt>> Parser::ParseMacro() {
  const Token& keyword = Next();
  auto stmt = std::make_unique<Stmt>(Stmt::Kind::kMacro, keyword.line, keyword.column);
  KVD_ASSIGN_OR_RETURN(stmt->name, ExpectName());
  KVD_RETURN_IF_ERROR(ExpectOp("("));
  while (!SkipOp(")")) {
    if (!stmt->params.empty()) KVD_RETURN_IF_ERROR(ExpectOp(","));
    if (SkipOp(")")) break;
    KVD_ASSIGN_OR_RETURN(std::string param, ExpectName());
    ExprPtr fallback;
    if (SkipOp("=")) {
      KVD_ASSIGN_OR_RETURN(fallback, ParseExpression(/*with_condexpr=*/true));
    } else if (!stmt->params.empty() && stmt->params.back().second != nullptr) {
      return ErrorAt(Peek(), "non-default argument follows default argument");
    }
    stmt->params.emplace_back(std::move(param), std::move(fallback));
  }
  KVD_RETURN_IF_ERROR(ExpectBlockEnd());
  // break and continue inside a macro do not reach a loop around its definition.
  const int saved_loop_depth = loop_depth_;
  loop_depth_ = 0;
  std::string end;
  absl::StatusOr<StmtList> body = ParseBody({"endmacro"}, &end);
  loop_depth_ = saved_loop_depth;
  if (!body.ok()) return body.status();
  stmt->body = *std::move(body);
  SkipName(stmt->name);  // `{% endmacro name %}` is allowed.
  KVD_RETURN_IF_ERROR(ExpectBlockEnd());
  return stmt;
}

absl::StatusOr<StmtList> ParseTemplate(std::string_view source) {
  KVD_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source));
  return Parser(std::move(tokens)).ParseAll();
}

}  // namespace kvd::text::internal::jinja
