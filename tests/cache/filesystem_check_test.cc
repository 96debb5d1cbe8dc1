#include "cache/filesystem_check.h"
#include "gtest/gtest.h"

namespace kiln::cache {
namespace {

TEST(FilesystemCheckTest, NamesNetworkFilesystemsAndNotLocalOnes) {
  struct Case {
    int64_t magic;
    std::optional<std::string> name;
  };
  const Case cases[] = {
      {0x6969, "nfs"},
      {0xFF534D42, "cifs"},
      {0xFE534D42, "smb2"},
      {0x65735546, "fuse"},
      {0x00C36400, "ceph"},
      {0x01021997, "9p"},
      {0xEF53, std::nullopt},     // ext4
      {0x58465342, std::nullopt}, // xfs
      {0x01021994, std::nullopt}, // tmpfs
      {0x9123683E, std::nullopt}, // btrfs
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.magic);
    EXPECT_EQ(NetworkFilesystemName(c.magic), c.name);
  }
}

TEST(FilesystemCheckTest, TmpIsLocalAndAMissingPathIsAnError) {
  absl::StatusOr<std::optional<std::string>> tmp = DetectNetworkFilesystem("/tmp");
  ASSERT_TRUE(tmp.ok());
  EXPECT_FALSE(tmp->has_value()) << **tmp;
  EXPECT_FALSE(DetectNetworkFilesystem("/nonexistent/kiln").ok());
}

} // namespace
} // namespace kiln::cache
