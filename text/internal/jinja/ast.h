// The syntax tree of a parsed chat template. Immutable after parsing, so one tree serves
// concurrent renders.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/internal/jinja/filters.h"
#include "text/internal/jinja/predicates.h"
#include "text/internal/jinja/value.h"

namespace kvd::text::internal::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
using KeywordArgs = std::vector<std::pair<std::string, ExprPtr>>;

struct Expr {
  enum class Kind {
    kLiteral,      // literal
    kName,         // name
    kList,         // operands: the items
    kTuple,        // operands: the items
    kDict,         // operands: key, value, key, value...
    kAttribute,    // operands[0].name
    kSubscript,    // operands[0][operands[1]]
    kSlice,        // operands[0][operands[1]:operands[2]:operands[3]]; absent parts are null
    kCall,         // operands[0](operands[1..], keyword_args)
    kFilter,       // operands[0] | name(operands[1..], keyword_args)
    kTest,         // operands[0] is [not] name(operands[1..], keyword_args)
    kNegate,       // -operands[0]
    kPlus,         // +operands[0]
    kNot,          // not operands[0]
    kBinary,       // operands[0] name operands[1] for + - * / // % **
    kAnd,          // operands[0] and operands[1]
    kOr,           // operands[0] or operands[1]
    kCompare,      // operands[0] compare_ops[0] operands[1] compare_ops[1] operands[2]...
    kConditional,  // operands[0] if operands[1] else operands[2] (null: undefined)
    kConcat,       // operands joined with ~
  };

  Expr(Kind k, int l, int c) : kind(k), line(l), column(c) {}

  Kind kind;
  int line;
  int column;
  // Height of this subtree; the parser bounds it so evaluation cannot exhaust the stack.
  int depth = 1;
  Value literal;
  std::string name;
  std::vector<ExprPtr> operands;
  KeywordArgs keyword_args;
  // For kCompare: "==", "!=", "<", "<=", ">", ">=", "in", "not in".
  std::vector<std::string> compare_ops;
  FilterFunction filter = nullptr;
  TestFunction test = nullptr;
  bool negated = false;  // kTest written `is not`.
};

struct Stmt;
using StmtList = std::vector<std::unique_ptr<Stmt>>;

struct Stmt {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // branches
    kFor,       // for targets in expr [if condition]: body [else: else_body]
    kSet,       // set targets = expr, or set targets[0].attribute = expr
    kSetBlock,  // set targets[0] to the rendered body
    kMacro,     // macro name(params): body
    kBreak,
    kContinue,
    kBody,  // a block rendered as its body ({% generation %})
  };

  Stmt(Kind k, int l, int c) : kind(k), line(l), column(c) {}

  Kind kind;
  int line;
  int column;
  std::string text;
  ExprPtr expr;
  // kIf: (condition, body) in order; the else branch has a null condition.
  std::vector<std::pair<ExprPtr, StmtList>> branches;
  std::vector<std::string> targets;
  std::string attribute;
  ExprPtr condition;
  StmtList body;
  StmtList else_body;
  std::string name;
  // kMacro: parameter names with their defaults (null when required).
  KeywordArgs params;
};

}  // namespace kvd::text::internal::jinja
