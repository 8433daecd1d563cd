// Early returns for code where almost every step can fail with a Status that must reach the
// caller unchanged: KVD_RETURN_IF_ERROR(status) and KVD_ASSIGN_OR_RETURN(lhs, status_or).
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KVD_STATUS_CONCAT_INNER(a, b) a##b
#define KVD_STATUS_CONCAT(a, b) KVD_STATUS_CONCAT_INNER(a, b)

// Returns `expr` (an absl::Status) from the enclosing function when it is not OK.
#define KVD_RETURN_IF_ERROR(expr)                               \
  do {                                                          \
    if (::absl::Status kvd_status = (expr); !kvd_status.ok()) { \
      return kvd_status;                                        \
    }                                                           \
  } while (false)

// `lhs = *rexpr` for an absl::StatusOr, or returns its Status from the enclosing function.
// `lhs` may declare a variable (`KVD_ASSIGN_OR_RETURN(auto x, F())`); the macro is a statement
// sequence, so it cannot be the body of an unbraced if.
#define KVD_ASSIGN_OR_RETURN(lhs, rexpr) \
  KVD_ASSIGN_OR_RETURN_IMPL(KVD_STATUS_CONCAT(kvd_status_or_, __LINE__), lhs, rexpr)

#define KVD_ASSIGN_OR_RETURN_IMPL(status_or, lhs, rexpr)     \
  auto status_or = (rexpr);                                  \
  if (!status_or.ok()) return std::move(status_or).status(); \
  lhs = *std::move(status_or)
