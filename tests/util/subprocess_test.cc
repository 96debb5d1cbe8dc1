#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/subprocess.h"

namespace kiln::util {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// This test binary doubles as a helper program: started with
// KILN_SUBPROCESS_HELPER=<mode>:<n> it does one thing and exits before
// GoogleTest's main runs.
//   alloc:N  allocate and touch N bytes; exit 0, or 3 if allocation fails
//   spew:N   write N bytes to stdout and N to stderr, interleaved in chunks
bool RunHelperIfAsked() {
  const char* mode = getenv("KILN_SUBPROCESS_HELPER");
  if (mode == nullptr) return false;
  std::string m(mode);
  size_t colon = m.find(':');
  size_t n = colon == std::string::npos ? 0 : std::strtoull(m.c_str() + colon + 1, nullptr, 10);
  if (m.rfind("alloc:", 0) == 0) {
    char* p = static_cast<char*>(malloc(n));
    if (p == nullptr) _exit(3);
    memset(p, 1, n);
    _exit(p[n / 2] == 1 ? 0 : 4);
  }
  if (m.rfind("spew:", 0) == 0) {
    std::string chunk(4096, 'o');
    std::string echunk(4096, 'e');
    for (size_t done = 0; done < n; done += chunk.size()) {
      size_t len = std::min(chunk.size(), n - done);
      if (write(1, chunk.data(), len) != static_cast<ssize_t>(len)) _exit(5);
      if (write(2, echunk.data(), len) != static_cast<ssize_t>(len)) _exit(5);
    }
    _exit(0);
  }
  _exit(2);
}
const bool kHelperRan = RunHelperIfAsked();

std::string SelfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// True if `pid` is gone or a zombie (in a container without a reaping init,
// a killed orphan may linger as a zombie).
bool ProcessDead(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string line;
  std::getline(stat, line);
  size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] == 'Z';
}

bool EventuallyDead(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (ProcessDead(pid)) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(Subprocess, CatRoundTripsStdin) {
  SubprocessOptions options;
  options.stdin_data = "hello\nworld\n";
  auto r = RunSubprocess({"cat"}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->success()) << r->DescribeTermination();
  EXPECT_EQ(r->stdout_data, "hello\nworld\n");
  EXPECT_EQ(r->stderr_data, "");
  EXPECT_GT(r->wall_time.count(), 0);
}

TEST(Subprocess, LargeStdinThroughCatDoesNotDeadlock) {
  SubprocessOptions options;
  options.stdin_data.resize(8 << 20);
  for (size_t i = 0; i < options.stdin_data.size(); ++i) {
    options.stdin_data[i] = static_cast<char>('a' + i % 26);
  }
  options.timeout = 30s;
  auto r = RunSubprocess({"cat"}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->success()) << r->DescribeTermination();
  EXPECT_TRUE(r->stdout_data == options.stdin_data);
}

TEST(Subprocess, EchoArgumentsAreNotShellInterpreted) {
  auto r = RunSubprocess({"echo", "a b", "$HOME", "*"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_data, "a b $HOME *\n");
}

TEST(Subprocess, TenMegabytesOnBothStreams) {
  constexpr size_t kBytes = 10 << 20;
  SubprocessOptions options;
  options.extra_env = {{"KILN_SUBPROCESS_HELPER", "spew:" + std::to_string(kBytes)}};
  options.timeout = 60s;
  auto r = RunSubprocess({SelfExe()}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->success()) << r->DescribeTermination() << r->stderr_data.substr(0, 200);
  EXPECT_EQ(r->stdout_data.size(), kBytes);
  EXPECT_EQ(r->stderr_data.size(), kBytes);
  EXPECT_EQ(r->stdout_data.find_first_not_of('o'), std::string::npos);
  EXPECT_EQ(r->stderr_data.find_first_not_of('e'), std::string::npos);
  EXPECT_FALSE(r->stdout_truncated);
}

TEST(Subprocess, OutputPastTheCapIsTruncatedWithAMarker) {
  SubprocessOptions options;
  options.extra_env = {{"KILN_SUBPROCESS_HELPER", "spew:1000000"}};
  options.max_output_bytes = 1000;
  auto r = RunSubprocess({SelfExe()}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  // The child still ran to completion: excess output is drained, not blocked.
  EXPECT_TRUE(r->success()) << r->DescribeTermination();
  EXPECT_TRUE(r->stdout_truncated);
  EXPECT_TRUE(r->stderr_truncated);
  EXPECT_EQ(r->stdout_data, std::string(1000, 'o') + kTruncationMarker);
  EXPECT_EQ(r->stderr_data, std::string(1000, 'e') + kTruncationMarker);
}

TEST(Subprocess, ExitCodesAndSignalsAreReported) {
  struct Case {
    std::string script;
    bool exited;
    int code_or_signal;
  };
  for (const Case& c :
       {Case{"exit 0", true, 0}, Case{"echo oops >&2; exit 3", true, 3},
        Case{"kill -SEGV $$", false, SIGSEGV}, Case{"kill -TERM $$", false, SIGTERM}}) {
    SCOPED_TRACE(c.script);
    auto r = RunSubprocess({"sh", "-c", c.script});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->exited, c.exited);
    EXPECT_EQ(r->signaled, !c.exited);
    EXPECT_EQ(c.exited ? r->exit_code : r->term_signal, c.code_or_signal);
    EXPECT_FALSE(r->timed_out);
    EXPECT_EQ(r->success(), c.exited && c.code_or_signal == 0);
  }
  auto r = RunSubprocess({"sh", "-c", "echo oops >&2; exit 3"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stderr_data, "oops\n");
  EXPECT_EQ(r->DescribeTermination(), "exit code 3");
}

TEST(Subprocess, TimeoutKillsTheWholeProcessGroup) {
  SubprocessOptions options;
  options.timeout = 500ms;
  // The background sleep is a grandchild; it must die with its parent.
  auto r = RunSubprocess({"sh", "-c", "sleep 30 & echo $!; sleep 30"}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->timed_out);
  EXPECT_TRUE(r->signaled);
  EXPECT_EQ(r->term_signal, SIGKILL);
  EXPECT_FALSE(r->success());
  EXPECT_GE(r->wall_time, 500ms);
  EXPECT_LT(r->wall_time, 5s);
  EXPECT_THAT(r->DescribeTermination(), HasSubstr("timed out"));
  pid_t grandchild = std::atoi(r->stdout_data.c_str());
  ASSERT_GT(grandchild, 0) << r->stdout_data;
  EXPECT_TRUE(EventuallyDead(grandchild)) << "grandchild " << grandchild << " survived";
}

TEST(Subprocess, StragglersAreKilledWhenTheChildExits) {
  // Without the group kill, the background sleep would hold stdout open and
  // the call would take 30 s.
  SubprocessOptions options;
  options.timeout = 20s;
  auto r = RunSubprocess({"sh", "-c", "sleep 30 & echo $!"}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->success()) << r->DescribeTermination();
  EXPECT_LT(r->wall_time, 5s);
  pid_t grandchild = std::atoi(r->stdout_data.c_str());
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(EventuallyDead(grandchild));
}

// AddressSanitizer reserves terabytes of address space at start-up, so an
// instrumented child cannot run under RLIMIT_AS at all; the plain build
// covers this test.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif

TEST(Subprocess, MemoryLimitStopsAllocationHungryChild) {
  if (kAsan) GTEST_SKIP() << "RLIMIT_AS cannot be combined with AddressSanitizer";
  SubprocessOptions options;
  options.memory_limit_bytes = int64_t{512} << 20;
  options.extra_env = {{"KILN_SUBPROCESS_HELPER", "alloc:" + std::to_string(int64_t{2} << 30)}};
  auto r = RunSubprocess({SelfExe()}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->success());
  EXPECT_TRUE(r->exited);
  EXPECT_EQ(r->exit_code, 3) << r->DescribeTermination();

  // Control: a small allocation fits under the same limit.
  options.extra_env = {{"KILN_SUBPROCESS_HELPER", "alloc:" + std::to_string(16 << 20)}};
  r = RunSubprocess({SelfExe()}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->success()) << r->DescribeTermination();
}

TEST(Subprocess, WorkingDirectoryAndEnvironment) {
  SubprocessOptions options;
  options.working_dir = "/";
  options.extra_env = {{"KILN_TEST_VALUE", "forty two"}, {"HOME", "/nowhere"}};
  auto r = RunSubprocess({"sh", "-c", "pwd; echo \"$KILN_TEST_VALUE\"; echo $HOME"}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_data, "/\nforty two\n/nowhere\n");

  options.working_dir = "/definitely/not/a/dir";
  r = RunSubprocess({"true"}, options);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("/definitely/not/a/dir"));
}

TEST(Subprocess, MissingProgramIsAClearError) {
  for (const std::string& program :
       {std::string("kiln-no-such-program"), std::string("/nonexistent/kiln-no-such-program")}) {
    SCOPED_TRACE(program);
    auto r = RunSubprocess({program, "--version"});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(r.status().message(), HasSubstr(program));
  }
  // A file without execute permission.
  std::string path = ::testing::TempDir() + "/kiln_not_executable.txt";
  std::ofstream(path) << "not a program\n";
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  auto r = RunSubprocess({path});
  unlink(path.c_str());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << r.status();
}

TEST(Subprocess, EmptyArgvIsInvalid) {
  EXPECT_EQ(RunSubprocess({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Subprocess, ChildClosingStdinEarlyIsNotFatal) {
  SubprocessOptions options;
  options.stdin_data.assign(4 << 20, 'x');
  auto r = RunSubprocess({"sh", "-c", "exec 0<&-; echo done"}, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->success());
  EXPECT_EQ(r->stdout_data, "done\n");
}

} // namespace
} // namespace kiln::util
