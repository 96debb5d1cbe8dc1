// Test helper: a folder of the running test's own for an e2e test's daemon
// cache and files.
#pragma once

#include <filesystem>
#include <string>

#include <unistd.h>

#include "gtest/gtest.h"

namespace kiln::testing {

// ::testing::TempDir() + `prefix` + this process's id + the running test's
// name, emptied and created (a previous run's cache would turn this run's
// misses into hits; the id keeps two runs of one test apart).
inline std::string FreshTestDir(const std::string& prefix) {
  std::string dir = ::testing::TempDir() + prefix + std::to_string(getpid()) + "_" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

} // namespace kiln::testing
