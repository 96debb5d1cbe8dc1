// GPU smoke test (label gpu): where an NVIDIA GPU is attached, the CUDA driver
// loads with dlopen (as kiln-worker loads it) and reports at least one
// device. Elsewhere it reports as skipped.
#include <dlfcn.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace {

bool GpuAttached() { return access("/dev/nvidiactl", F_OK) == 0; }

TEST(GpuPresence, DriverLoadsAndReportsDevices) {
  if (!GpuAttached()) GTEST_SKIP() << "no GPU attached (/dev/nvidiactl missing)";
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  ASSERT_NE(init, nullptr);
  ASSERT_NE(count, nullptr);
  ASSERT_EQ(init(0), 0);
  int n = 0;
  ASSERT_EQ(count(&n), 0);
  EXPECT_GE(n, 1);
  dlclose(lib);
}

} // namespace
