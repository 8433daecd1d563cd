// Early-return helpers for the chat-template interpreter, where almost every step can fail
// with a Status that must reach the caller unchanged.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KVD_JINJA_CONCAT_INNER(a, b) a##b
#define KVD_JINJA_CONCAT(a, b) KVD_JINJA_CONCAT_INNER(a, b)

// Returns `expr` from the enclosing function when it is not OK.
#define KVD_JINJA_RETURN_IF_ERROR(expr)                                   \
  do {                                                                    \
    if (absl::Status kvd_jinja_status = (expr); !kvd_jinja_status.ok()) { \
      return kvd_jinja_status;                                            \
    }                                                                     \
  } while (false)

// `lhs = value of rexpr`, or returns its Status from the enclosing function.
#define KVD_JINJA_ASSIGN_OR_RETURN(lhs, rexpr) \
  KVD_JINJA_ASSIGN_OR_RETURN_IMPL(KVD_JINJA_CONCAT(kvd_jinja_statusor_, __LINE__), lhs, rexpr)

#define KVD_JINJA_ASSIGN_OR_RETURN_IMPL(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                    \
  if (!statusor.ok()) return std::move(statusor).status();    \
  lhs = *std::move(statusor)
