#include "tuner/measure/crash_report.h"

#include <algorithm>
#include <array>
#include <csignal>
#include <cstring>
#include <vector>

#include <signal.h>
#include <unistd.h>

namespace kiln::measure {
namespace {

constexpr size_t kTextBytes = 512;
// Written before a kernel runs, read only by the handler.
char g_prefix[kTextBytes] = "kiln-worker";
char g_context[kTextBytes] = "starting";

void Put(const char* text) {
  ssize_t ignored = write(STDERR_FILENO, text, strlen(text));
  (void)ignored;
}

extern "C" void OnFatalSignal(int sig) {
  const char* name = sig == SIGSEGV  ? "SIGSEGV (invalid memory access)"
                     : sig == SIGBUS ? "SIGBUS (bus error)"
                     : sig == SIGFPE ? "SIGFPE (arithmetic error, e.g. integer division by zero)"
                     : sig == SIGILL ? "SIGILL (illegal instruction)"
                                     : "SIGABRT (abort)";
  Put(g_prefix);
  Put(": fatal signal ");
  Put(name);
  Put(" while ");
  Put(g_context);
  Put("\n");
  // SA_RESETHAND restored the default action and SA_NODEFER leaves the
  // signal unblocked: this ends the process with `sig`.
  raise(sig);
}

void CopyText(char* out, std::string_view text) {
  const size_t n = std::min(text.size(), kTextBytes - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

} // namespace

void InstallCrashReporter(std::string_view prefix) {
  CopyText(g_prefix, prefix);
  static std::vector<char>* stack = new std::vector<char>(size_t{256} * 1024);
  stack_t alt{};
  alt.ss_sp = stack->data();
  alt.ss_size = stack->size();
  sigaltstack(&alt, nullptr);
  struct sigaction action {};
  action.sa_handler = OnFatalSignal;
  action.sa_flags = SA_ONSTACK | SA_RESETHAND | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  for (int sig : std::array<int, 5>{SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    sigaction(sig, &action, nullptr);
  }
}

void SetCrashContext(std::string_view context) { CopyText(g_context, context); }

} // namespace kiln::measure
