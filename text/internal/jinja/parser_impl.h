// The recursive-descent parser behind ParseTemplate, following jinja2's grammar and operator
// precedence: or, and, not, comparisons, + -, ~, * / // %, **, unary minus, then primaries with
// postfix access, filters and tests. Statements are in parser.cc, expressions in
// expression_parser.cc.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/status_macros.h"
#include "text/internal/jinja/ast.h"
#include "text/internal/jinja/lexer.h"

namespace kvd::text::internal::jinja {

// Deepest syntax tree, and deepest nesting of brackets, unary operators and blocks.
inline constexpr int kMaxExprDepth = 200;
inline constexpr int kMaxNesting = 100;

// Parses one token stream; used once.
class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  absl::StatusOr<StmtList> ParseAll() {
    std::string end;
    KVD_ASSIGN_OR_RETURN(StmtList body, ParseBody({}, &end));
    return body;
  }

 private:
  // Counts nesting while alive; Check() fails past kMaxNesting.
  class NestingGuard {
   public:
    explicit NestingGuard(Parser* parser) : parser_(parser) { ++parser_->nesting_; }
    ~NestingGuard() { --parser_->nesting_; }
    absl::Status Check() const {
      if (parser_->nesting_ <= kMaxNesting) return absl::OkStatus();
      return parser_->ErrorAt(parser_->Peek(), "template nested too deeply");
    }

   private:
    Parser* parser_;
  };

  const Token& Peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& Next() {
    const Token& token = Peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return token;
  }
  bool IsOp(std::string_view op, size_t ahead = 0) const {
    return Peek(ahead).kind == Token::Kind::kOperator && Peek(ahead).text == op;
  }
  bool IsName(std::string_view name, size_t ahead = 0) const {
    return Peek(ahead).kind == Token::Kind::kName && Peek(ahead).text == name;
  }
  bool SkipOp(std::string_view op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }
  bool SkipName(std::string_view name) {
    if (!IsName(name)) return false;
    Next();
    return true;
  }

  static std::string Describe(const Token& token);

  absl::Status ErrorAt(const Token& token, std::string_view message) const;
  absl::Status Unexpected(std::string_view expected) const;
  absl::Status ExpectOp(std::string_view op);
  absl::Status ExpectBlockEnd();
  absl::StatusOr<std::string> ExpectName();

  static ExprPtr NewExpr(Expr::Kind kind, const Token& at);
  // Records the height of a finished node and enforces kMaxExprDepth.
  absl::StatusOr<ExprPtr> Seal(ExprPtr expr) const;
  absl::StatusOr<ExprPtr> MakeBinary(Expr::Kind kind, const Token& at, std::string op, ExprPtr left,
                                     ExprPtr right) const;

  // Statements (parser.cc).
  // Parses until a block tag starting with one of `ends` (consumed up to and including the
  // keyword, which is stored in *end), or the end of the template when `ends` is empty.
  absl::StatusOr<StmtList> ParseBody(std::initializer_list<std::string_view> ends,
                                     std::string* end);

  absl::StatusOr<std::unique_ptr<Stmt>> ParseStatement();

  absl::StatusOr<std::unique_ptr<Stmt>> ParseIf();

  // `name` or `a, b` or `(a, b)`: assignment targets of for and set.
  absl::StatusOr<std::vector<std::string>> ParseTargets();

  absl::StatusOr<std::unique_ptr<Stmt>> ParseFor();

  absl::StatusOr<std::unique_ptr<Stmt>> ParseSet();

  absl::StatusOr<std::unique_ptr<Stmt>> ParseMacro();

  // Expressions (expression_parser.cc).
  // An expression, or a tuple when commas separate several (`{{ a, b }}`, `set x = 1, 2`).
  absl::StatusOr<ExprPtr> ParseTuple(bool with_condexpr);

  bool AtExpressionEnd() const;

  absl::StatusOr<ExprPtr> ParseExpression(bool with_condexpr);

  absl::StatusOr<ExprPtr> ParseOr();

  absl::StatusOr<ExprPtr> ParseAnd();

  absl::StatusOr<ExprPtr> ParseNot();

  absl::StatusOr<ExprPtr> ParseCompare();

  // Left-associative binary levels.
  absl::StatusOr<ExprPtr> ParseMath1();

  absl::StatusOr<ExprPtr> ParseConcat();

  absl::StatusOr<ExprPtr> ParseMath2();

  absl::StatusOr<ExprPtr> ParsePow();

  absl::StatusOr<ExprPtr> ParseUnary(bool with_filter);

  absl::StatusOr<ExprPtr> ParsePrimary();
  absl::StatusOr<ExprPtr> ParsePostfix(ExprPtr expr);
  absl::StatusOr<ExprPtr> ParseFilterExpr(ExprPtr expr);
  absl::Status ParseCallArgs(Expr* call);

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int nesting_ = 0;
  int loop_depth_ = 0;
};

}  // namespace kvd::text::internal::jinja
