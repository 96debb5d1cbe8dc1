// A last word from kiln-worker when a kernel kills it: a handler for the
// fatal signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) that writes
//   "<prefix>: fatal signal SIGSEGV (invalid memory access) while <context>"
// to stderr, on an alternate stack (the faulting stack may be the one that
// overflowed), then lets the signal take its default action, so the process
// still dies of it and its parent sees which signal it was.
//
// Thread-safety: InstallCrashReporter once, at start-up; SetCrashContext
// from the thread that runs kernels (the handler reads a fixed buffer).
#pragma once

#include <string_view>

namespace kiln::measure {

void InstallCrashReporter(std::string_view prefix);

// What the process is doing, for the report ("running module 'k'"); cut to a
// few hundred bytes.
void SetCrashContext(std::string_view context);

} // namespace kiln::measure
