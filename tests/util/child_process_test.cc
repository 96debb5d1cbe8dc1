// util::ChildProcess: only the mapped descriptors reach the child, its
// output is captured, exits and signals are described, killing takes its
// whole process group, the parent-death signal follows the spawning thread,
// and bad spawns are clear errors.
#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/child_process.h"

namespace kiln::util {
namespace {

using ::testing::HasSubstr;

// Reads the child's output until EOF (or `timeout`).
std::string ReadAll(const ChildProcess& child,
                    std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{child.output_fd(), POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = read(child.output_fd(), buf, sizeof(buf));
    if (n == 0) break;
    if (n > 0) out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::unique_ptr<ChildProcess> Sh(const std::string& script,
                                 const ChildProcessOptions& options = {}) {
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn({"/bin/sh", "-c", script}, options);
  EXPECT_TRUE(child.ok()) << child.status();
  return child.ok() ? *std::move(child) : nullptr;
}

TEST(ChildProcess, OnlyMappedDescriptorsAreInherited) {
  int p[2];
  ASSERT_EQ(pipe(p), 0); // not close-on-exec: would leak without the cleanup
  ChildProcessOptions options;
  options.inherit = {{p[1], 7}};
  std::unique_ptr<ChildProcess> child =
      Sh("echo through7 >&7; ls /proc/self/fd | sort -n | tr '\\n' ' '", options);
  ASSERT_NE(child, nullptr);
  const std::string listing = ReadAll(*child);
  close(p[1]);
  char buf[64] = {0};
  ASSERT_GT(read(p[0], buf, sizeof(buf) - 1), 0);
  close(p[0]);
  EXPECT_STREQ(buf, "through7\n");
  EXPECT_THAT(listing, HasSubstr("0 1 2 "));
  EXPECT_THAT(listing, HasSubstr(" 7"));
  EXPECT_THAT(listing, ::testing::Not(HasSubstr(" " + std::to_string(p[1]) + " ")));
  EXPECT_TRUE(child->Wait(std::chrono::seconds(10)));
  EXPECT_EQ(child->exit_code(), 0);
}

TEST(ChildProcess, CapturesOutputAndReadsNothingFromStdin) {
  std::unique_ptr<ChildProcess> child = Sh("cat; echo out; echo err >&2");
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(ReadAll(*child), "out\nerr\n");
  EXPECT_TRUE(child->Wait(std::chrono::seconds(10)));
}

TEST(ChildProcess, DescribesExitsAndSignals) {
  std::unique_ptr<ChildProcess> exits = Sh("exit 3");
  ASSERT_NE(exits, nullptr);
  EXPECT_TRUE(exits->Wait(std::chrono::seconds(10)));
  EXPECT_TRUE(exits->exited());
  EXPECT_EQ(exits->exit_code(), 3);
  EXPECT_EQ(exits->DescribeExit(), "exit code 3");

  std::unique_ptr<ChildProcess> crashes = Sh("kill -SEGV $$");
  ASSERT_NE(crashes, nullptr);
  EXPECT_TRUE(crashes->Wait(std::chrono::seconds(10)));
  EXPECT_FALSE(crashes->exited());
  EXPECT_EQ(crashes->term_signal(), SIGSEGV);
  EXPECT_THAT(crashes->DescribeExit(), HasSubstr("killed by signal 11"));
}

TEST(ChildProcess, KillTakesTheWholeGroup) {
  // The background sleep holds the output pipe open: EOF comes only once it
  // is dead too.
  std::unique_ptr<ChildProcess> child = Sh("sleep 100 & echo started; wait");
  ASSERT_NE(child, nullptr);
  char buf[16];
  pollfd p{child->output_fd(), POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 10000), 1);
  ASSERT_GT(read(child->output_fd(), buf, sizeof(buf)), 0);
  EXPECT_TRUE(child->Poll() == false);
  const auto start = std::chrono::steady_clock::now();
  child->KillAndWait();
  EXPECT_EQ(child->term_signal(), SIGKILL);
  EXPECT_EQ(ReadAll(*child, std::chrono::seconds(5)), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
}

TEST(ChildProcess, ParentDeathSignalFollowsTheSpawningThread) {
  std::unique_ptr<ChildProcess> child;
  std::thread spawner([&] { child = Sh("sleep 100"); });
  spawner.join();
  ASSERT_NE(child, nullptr);
  EXPECT_TRUE(child->Wait(std::chrono::seconds(10)));
  EXPECT_EQ(child->term_signal(), SIGKILL);
}

TEST(ChildProcess, MemoryLimit) {
  ChildProcessOptions options;
  options.memory_limit_bytes = int64_t{512} << 20;
  std::unique_ptr<ChildProcess> child = Sh("ulimit -v", options);
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(ReadAll(*child), "524288\n");
}

TEST(ChildProcess, SpawnErrors) {
  EXPECT_EQ(ChildProcess::Spawn({}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ChildProcess::Spawn({"sh"}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::unique_ptr<ChildProcess>> missing =
      ChildProcess::Spawn({"/nonexistent/program"}, {});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/program"));
  ChildProcessOptions bad;
  bad.inherit = {{0, 1}};
  EXPECT_EQ(ChildProcess::Spawn({"/bin/true"}, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

} // namespace
} // namespace kiln::util
