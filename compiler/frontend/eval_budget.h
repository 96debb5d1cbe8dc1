// The one budget of a compile-time evaluation: every piece of work the
// evaluator does for a program (statements, and the work inside an
// operation whose cost grows with its operands: comparing nested values,
// copying, repeating or concatenating sequences, materializing a range,
// sorting, dict lookups) is charged to it as steps, bytes allocated and
// wall time. A program that runs out gets a located error at the operation
// that ran out; the same budget also carries the caller's deadline and its
// cancellation flag, so a daemon can stop an evaluation its client gave up
// on.
//
// Why one budget: a cap per operation (65,536 items per sequence, ...)
// bounds one operation but not a loop of them, and a step count alone does
// not see the operation that walks 2^64 nodes of a shared tuple in one
// step. Charging each operation what it costs makes the step limit mean
// "work" again; bytes bound memory; the clock is the backstop for whatever
// is charged too little.
//
// Errors (each "file:line:col: message", sticky: once the budget has run
// out, every later charge fails with the same status):
//   ResourceExhausted  more than max_steps steps, max_bytes bytes, or
//                      max_seconds of wall time
//   DeadlineExceeded   the caller's deadline passed
//   Cancelled          the caller's cancellation flag was set
// Thread-safety: one budget per evaluation, used by one thread; the
// cancellation flag may be set from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "compiler/frontend/frontend.h"
#include "compiler/ir/ir.h"

namespace kiln::frontend {

class EvalBudget {
 public:
  EvalBudget(const EvalLimits& limits, std::string_view file_name);

  // Charges `steps` steps and `bytes` bytes of allocation to the work at
  // `loc`; the clock and the cancellation flag are read every few thousand
  // steps (and on every charge of a thousand or more). OK while within
  // budget, else the (sticky) error above.
  absl::Status Charge(ir::Loc loc, int64_t steps, int64_t bytes = 0);
  // Records `error` as the budget's sticky status (a walk that cannot
  // return a status, such as PyEquals, fails through the budget) unless it
  // has failed already.
  void Fail(absl::Status error);
  // Fail with "file:line:col: message" and `code`; returns status().
  absl::Status FailAt(absl::StatusCode code, ir::Loc loc, std::string_view message);
  // OK, or the first failure.
  const absl::Status& status() const { return status_; }

  int64_t steps() const { return steps_; }
  int64_t bytes() const { return bytes_; }
  const EvalLimits& limits() const { return limits_; }

 private:
  absl::Status CheckClock(ir::Loc loc);

  EvalLimits limits_;
  std::string file_name_;
  absl::Time start_;
  absl::Time stop_; // start_ + max_seconds, or the deadline if sooner
  bool stop_is_deadline_ = false;
  int64_t steps_ = 0;
  int64_t bytes_ = 0;
  int64_t next_clock_check_ = 0; // steps_ at which the clock is read next
  absl::Status status_;
};

} // namespace kiln::frontend
