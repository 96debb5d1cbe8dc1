#include "compiler/frontend/eval_budget.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "compiler/ir/diagnostic.h"

namespace kiln::frontend {
namespace {

// Steps between two reads of the clock: a read costs tens of nanoseconds,
// a step at least as much, so the clock is a few percent at most; honest
// charges make 4,096 steps a fraction of a millisecond.
constexpr int64_t kClockEvery = 4096;

} // namespace

EvalBudget::EvalBudget(const EvalLimits& limits, std::string_view file_name)
    : limits_(limits), file_name_(file_name), start_(absl::Now()) {
  stop_ = limits_.max_seconds > 0 ? start_ + absl::Seconds(limits_.max_seconds)
                                  : absl::InfiniteFuture();
  if (limits_.deadline < stop_) {
    stop_ = limits_.deadline;
    stop_is_deadline_ = true;
  }
}

absl::Status EvalBudget::FailAt(absl::StatusCode code, ir::Loc loc, std::string_view message) {
  // The located text of every frontend diagnostic, with the budget's code.
  const absl::Status located = ir::ErrorAt(file_name_, loc, message);
  Fail(absl::Status(code, located.message()));
  return status_;
}

void EvalBudget::Fail(absl::Status error) {
  if (status_.ok()) status_ = std::move(error);
}

absl::Status EvalBudget::Charge(ir::Loc loc, int64_t steps, int64_t bytes) {
  if (!status_.ok()) return status_;
  steps_ += std::max<int64_t>(steps, 0);
  bytes_ += std::max<int64_t>(bytes, 0);
  if (steps_ > limits_.max_steps) {
    return FailAt(absl::StatusCode::kResourceExhausted, loc,
                  absl::StrCat("compile-time evaluation exceeded its budget of ", limits_.max_steps,
                               " steps (is there a huge loop?)"));
  }
  if (bytes_ > limits_.max_bytes) {
    return FailAt(absl::StatusCode::kResourceExhausted, loc,
                  absl::StrCat("compile-time evaluation exceeded its budget of ", limits_.max_bytes,
                               " bytes of values"));
  }
  if (steps_ >= next_clock_check_ || steps >= 1000 || bytes >= (1 << 20)) {
    next_clock_check_ = steps_ + kClockEvery;
    return CheckClock(loc);
  }
  return absl::OkStatus();
}

absl::Status EvalBudget::CheckClock(ir::Loc loc) {
  if (limits_.cancelled != nullptr && limits_.cancelled->load(std::memory_order_relaxed)) {
    return FailAt(absl::StatusCode::kCancelled, loc, "compile-time evaluation was cancelled");
  }
  if (stop_ == absl::InfiniteFuture() || absl::Now() < stop_) return absl::OkStatus();
  if (stop_is_deadline_) {
    return FailAt(absl::StatusCode::kDeadlineExceeded, loc,
                  "compile-time evaluation did not finish before the request's deadline");
  }
  return FailAt(absl::StatusCode::kResourceExhausted, loc,
                absl::StrFormat("compile-time evaluation exceeded its budget of %g s of "
                                "wall time",
                                limits_.max_seconds));
}

} // namespace kiln::frontend
