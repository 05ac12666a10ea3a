// Status propagation macros for absl::Status / absl::StatusOr<T>.
//
// Debian's Abseil (20220623) ships no status macros, so benchfarm keeps this one tiny header
// (STYLE.md, practice 3). Both macros return from the enclosing function, whose return type must
// be constructible from a non-OK absl::Status (absl::Status or any absl::StatusOr<U>).
//
//   RETURN_IF_ERROR(expr);
//     `expr` is an absl::Status or an absl::StatusOr<T>; if it is not OK, its status is returned.
//     Evaluates `expr` exactly once.
//
//   ASSIGN_OR_RETURN(lhs, expr);
//     `expr` is an absl::StatusOr<T>; if it is not OK, its status is returned, otherwise its value
//     is moved into `lhs`, which may be a declaration (`auto x`, `const Foo& y`) or an existing
//     lvalue. It expands to several statements: use it only as a full statement inside braces
//     (never as the unbraced body of an if/else/for), at most once per source line. A `lhs` with a
//     top-level comma (`std::pair<int, int> p`) does not survive the preprocessor: use `auto` or
//     a type alias.

#ifndef BENCHFARM_BASE_STATUS_MACROS_H_
#define BENCHFARM_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace benchfarm::base::status_macros_internal {

inline absl::Status ToStatus(const absl::Status& status) { return status; }

template <typename T>
absl::Status ToStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace benchfarm::base::status_macros_internal

#define RETURN_IF_ERROR(expr)                                          \
  do {                                                                 \
    ::absl::Status bf_status_macros_status =                           \
        ::benchfarm::base::status_macros_internal::ToStatus(expr);     \
    if (!bf_status_macros_status.ok()) return bf_status_macros_status; \
  } while (false)

#define BF_STATUS_MACROS_CONCAT_INNER(a, b) a##b
#define BF_STATUS_MACROS_CONCAT(a, b) BF_STATUS_MACROS_CONCAT_INNER(a, b)

#define ASSIGN_OR_RETURN(lhs, expr)                                                             \
  BF_STATUS_MACROS_ASSIGN_OR_RETURN_IMPL(BF_STATUS_MACROS_CONCAT(bf_status_or_, __LINE__), lhs, \
                                         expr)

#define BF_STATUS_MACROS_ASSIGN_OR_RETURN_IMPL(status_or, lhs, expr) \
  auto status_or = (expr);                                           \
  if (!status_or.ok()) return std::move(status_or).status();         \
  lhs = std::move(status_or).value()

#endif  // BENCHFARM_BASE_STATUS_MACROS_H_
