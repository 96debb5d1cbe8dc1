// Early-return helpers for absl::Status / absl::StatusOr.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define KILN_CONCAT_INNER_(a, b) a##b
#define KILN_CONCAT_(a, b) KILN_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function if `expr` is not OK.
#define RETURN_IF_ERROR(expr)                                                                      \
  do {                                                                                             \
    ::absl::Status kiln_status_ = (expr);                                                          \
    if (!kiln_status_.ok()) return kiln_status_;                                                   \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, F());` declares x from an OK StatusOr, or returns
// its status.
#define ASSIGN_OR_RETURN(lhs, rexpr)                                                               \
  ASSIGN_OR_RETURN_IMPL_(KILN_CONCAT_(kiln_statusor_, __LINE__), lhs, rexpr)

// NOLINTBEGIN(bugprone-macro-parentheses): `lhs` is a declaration.
#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr)                                               \
  auto statusor = (rexpr);                                                                         \
  if (!statusor.ok()) return statusor.status();                                                    \
  lhs = std::move(statusor).value()
// NOLINTEND(bugprone-macro-parentheses)
