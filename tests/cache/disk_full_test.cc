// A cache on a small tmpfs fills up: writes then fail with a clear
// kExhausted error, reads keep working, nothing already stored is damaged,
// and writes succeed again once space is freed. Needs CAP_SYS_ADMIN to mount
// the tmpfs; skipped (and reported as skipped) without it.
#include <cerrno>
#include <cstring>
#include <string>

#include <sys/mount.h>

#include "cache/cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cache/cache_test_util.h"
#include "util/temp_dir.h"

namespace kiln::cache {
namespace {

using ::testing::HasSubstr;
using testing::MakeArtifact;
using testing::MatchesKey;

constexpr size_t kCubin = 64 << 10;

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<util::TempDir> dir = util::TempDir::Create("kiln-diskfull-test");
    ASSERT_TRUE(dir.ok());
    dir_.emplace(*std::move(dir));
    mnt_ = dir_->path();
    if (mount("tmpfs", mnt_.c_str(), "tmpfs", 0, "size=8m,mode=0700") != 0) {
      GTEST_SKIP() << "cannot mount an 8 MiB tmpfs at " << mnt_ << " (" << std::strerror(errno)
                   << "): the disk-full test needs CAP_SYS_ADMIN";
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) umount2(mnt_.c_str(), MNT_DETACH);
  }
  CacheOptions Options() {
    CacheOptions o;
    o.background = false;
    o.on_warning = [](const std::string&) {};
    return o;
  }
  std::optional<util::TempDir> dir_;
  std::string mnt_;
  bool mounted_ = false;
};

TEST_F(DiskFullTest, WritesFailClearlyReadsKeepWorkingNothingIsDamaged) {
  const std::string root = mnt_ + "/cache";
  absl::StatusOr<std::unique_ptr<Cache>> c = Cache::Open(root, Options());
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<std::string> stored;
  absl::Status full;
  for (int i = 0; i < 400; ++i) {
    const std::string k = "k" + std::to_string(i);
    full = (*c)->PutArtifact(k, MakeArtifact(k, kCubin));
    if (!full.ok()) break;
    stored.push_back(k);
  }
  ASSERT_FALSE(full.ok()) << "8 MiB should not hold 400 x 64 KiB";
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_THAT(full.message(), HasSubstr("disk full"));
  EXPECT_GT(stored.size(), 30U);

  // Every further write fails the same way; reads still work.
  for (int i = 0; i < 3; ++i) {
    const std::string k = "more" + std::to_string(i);
    EXPECT_EQ((*c)->PutArtifact(k, MakeArtifact(k, kCubin)).code(),
              absl::StatusCode::kResourceExhausted);
  }
  for (const std::string& k : stored) {
    absl::StatusOr<Artifact> a = (*c)->GetArtifact(k);
    ASSERT_TRUE(a.ok()) << k << ": " << a.status();
    EXPECT_TRUE(MatchesKey(*a, k, kCubin)) << k;
  }
  ASSERT_TRUE((*c)->Stats().ok());

  // A fresh open (another process) sees the same intact cache.
  c->reset();
  c = Cache::Open(root, Options());
  ASSERT_TRUE(c.ok()) << c.status();
  absl::StatusOr<VerifyReport> v = (*c)->Verify();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->ok());
  EXPECT_EQ(v->orphan_files, 0) << "failed puts must clean up their blobs";
  EXPECT_EQ((*c)->Stats()->artifacts, static_cast<int64_t>(stored.size()));

  // Freeing space makes writes work again.
  ASSERT_TRUE((*c)->Gc(GcOptions{kCubin * 4, false}).ok());
  EXPECT_TRUE((*c)->PutArtifact("after", MakeArtifact("after", kCubin)).ok());
  EXPECT_TRUE(MatchesKey(*(*c)->GetArtifact("after"), "after", kCubin));
}

} // namespace
} // namespace kiln::cache
